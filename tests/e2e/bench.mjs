// Drive bench.html in headless Chromium for each configuration and print a
// table. Usage (from the repo root, after scripts/build-web.sh):
//   node tests/e2e/bench.mjs [reps]        (scripts/bench-web.sh wraps it)
import { chromium } from 'playwright-core';

const base = process.env.BENCH_BASE || 'http://127.0.0.1:8733';
const reps = process.argv[2] || '3';
const configs = (process.env.BENCH_CONFIGS || 'webgguf:cpu,wllama:1,webgguf:webgpu').split(',');
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--enable-unsafe-webgpu', '--no-sandbox', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-default-apps', '--disable-extensions'],
});
const rows = [];
for (const c of configs) {
  const [engine, arg] = c.split(':');
  const query = engine === 'wllama' ? `engine=wllama&threads=${arg}` : `engine=webgguf&backend=${arg}`;
  const n = engine === 'webgguf' && arg === 'webgpu' ? 16 : 128; // SwiftShader is slow
  const page = await browser.newPage();
  await page.goto(`${base}/bench/bench.html?${query}&reps=${reps}&n=${n}`);
  await page.waitForFunction(() => window.__result, null, { timeout: 1_800_000 });
  const r = await page.evaluate(() => window.__result);
  await page.close();
  if (r.error) { console.error(`${c}: ${r.error}`); process.exitCode = 1; continue; }
  console.log(JSON.stringify(r));
  rows.push(r);
}
await browser.close();
console.log('\n| engine | pp (tok/s, ~255-token prompt) | tg (tok/s) | load (ms) |');
console.log('| --- | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(`| ${r.engine} | ${r.pp.toFixed(1)} | ${r.tg.toFixed(1)} | ${r.loadMs.toFixed(0)} |`);
}
