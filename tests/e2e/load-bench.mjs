// Load times of SmolLM2 in headless Chromium: from a URL cold (the network,
// through the cache), warm (the cache) and uncached; from bytes; and one
// connection against four on a server that limits each connection's rate.
// Usage: scripts/bench-load.sh (serves the files, builds pkg/).
import { chromium } from 'playwright-core';

const base = process.env.BENCH_BASE || 'http://127.0.0.1:8734';
const slow = process.env.BENCH_SLOW || 'http://127.0.0.1:8735';
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--enable-unsafe-webgpu', '--no-sandbox', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-default-apps', '--disable-extensions',
    '--enable-precise-memory-info'],
});
const context = await browser.newContext();
const run = async (label, opts) => {
  const page = await context.newPage();
  await page.goto(`${opts.server || base}/bench/load.html`);
  await page.waitForFunction(() => window.__ready);
  if (opts.clear) await page.evaluate(() => window.__clear());
  const r = await page.evaluate((o) => window.__load(o), { url: '/models/default.gguf', ...opts });
  await page.close();
  console.log(JSON.stringify({ label, ...r }));
  return { label, ...r };
};
const rows = [];
for (const backend of ['webgpu', 'cpu']) {
  rows.push(await run(`${backend}: URL, cold (cache: download)`, { backend, cache: true, clear: true }));
  rows.push(await run(`${backend}: URL, warm (cache hit)`, { backend, cache: true }));
  rows.push(await run(`${backend}: URL, uncached`, { backend, cache: false }));
  rows.push(await run(`${backend}: bytes (Uint8Array)`, { backend, bytes: true }));
}
for (const connections of [1, 4]) {
  rows.push(await run(`cpu: URL on a server of 20 MB/s per connection, ${connections} connection${connections > 1 ? 's' : ''}`,
    { backend: 'cpu', cache: false, connections, server: slow }));
}
await browser.close();
console.log('\n| load | backend | time (ms) | cache | JS heap peak (MiB) | wasm memory after (MiB) |');
console.log('| --- | --- | ---: | --- | ---: | ---: |');
for (const r of rows) {
  console.log(`| ${r.label} | ${r.backend} | ${r.ms.toFixed(0)} | ${r.cache ?? '-'} | ${r.jsHeapPeakMiB.toFixed(1)} | ${r.wasmMiB.toFixed(1)} |`);
}
