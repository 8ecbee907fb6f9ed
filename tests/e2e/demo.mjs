// The demo page end to end in real headless Chromium (playwright-core):
// the default model loads, a prompt streams tokens incrementally, Stop works,
// and a screenshot is saved. Usage: node demo.mjs <base-url> <screenshot.png>
import { chromium } from 'playwright-core';

const [base, shot] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--enable-unsafe-webgpu', '--no-sandbox', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-default-apps', '--disable-extensions'],
});
const fail = async (page, msg) => {
  await page.screenshot({ path: shot, fullPage: true });
  console.error(`FAIL: ${msg}`);
  await browser.close();
  process.exit(1);
};
const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

await page.goto(base);
// Loading: the progress bar shows, then the status names the backend.
await page.waitForSelector('#status[data-backend]', { timeout: 120_000 })
  .catch(() => fail(page, 'the default model did not load'));
const status = await page.textContent('#status');
console.log(`loaded: ${status}`);
if (!/backend: (cpu|webgpu)/.test(status)) await fail(page, `status lacks the backend: ${status}`);
const notice = await page.textContent('#notice');
console.log(`notice: ${notice}`);

// Tokens arrive one by one: sample the reply's length while it streams.
await page.fill('#prompt', 'Write a short story about a robot who learns to paint.');
await page.click('#send');
const t0 = Date.now();
await page.waitForFunction(() => document.querySelector('.msg.assistant:last-child').textContent.length > 0, null, { timeout: 120_000 })
  .catch(() => fail(page, 'no token arrived'));
console.log(`first token after ${Date.now() - t0} ms`);
const lengths = [];
for (let i = 0; i < 100; i++) {
  await page.waitForTimeout(100);
  const n = (await page.textContent('.msg.assistant:last-child')).length;
  if (n > 0 && lengths.at(-1) !== n) lengths.push(n);
  if (lengths.length >= 5) break;
}
console.log(`reply lengths while streaming: ${lengths.join(' ')}`);
if (lengths.length < 3) await fail(page, 'the reply did not grow incrementally');
if (await page.isDisabled('#stop')) await fail(page, 'Stop is not enabled during generation');

// Stop: generation ends, the reply is marked stopped, the prompt is usable again.
await page.click('#stop');
await page.waitForSelector('.msg.assistant[data-stopped="true"]', { timeout: 30_000 })
  .catch(() => fail(page, 'Stop did not end the generation'));
const stopped = (await page.textContent('.msg.assistant:last-child')).length;
await page.waitForTimeout(500);
const after = (await page.textContent('.msg.assistant:last-child')).length;
if (after !== stopped) await fail(page, 'tokens kept arriving after Stop');
if (await page.isDisabled('#send')) await fail(page, 'the page is not ready after Stop');

// A second turn completes, with tok/s shown.
await page.fill('#prompt', 'Thanks! Now say hello in French.');
await page.click('#send');
await page.waitForFunction(() => document.querySelector('#speed').textContent.includes('decode'), null, { timeout: 120_000 })
  .catch(() => fail(page, 'the second reply did not finish'));
console.log(`speed: ${await page.textContent('#speed')}`);

// JSON mode: a schema constrains the reply (through model.openaiFetch), and
// the speed line shows the grammar's share.
await page.click('#json-box summary');
await page.check('#json-mode');
await page.fill('#schema', JSON.stringify({
  type: 'object', properties: { greeting: { type: 'string', maxLength: 20 }, language: { enum: ['French', 'English'] } },
  required: ['greeting', 'language'], additionalProperties: false,
}));
await page.fill('#prompt', 'Say hello in French, as JSON.');
await page.click('#send');
await page.waitForFunction(() => document.querySelector('#speed').textContent.includes('grammar'), null, { timeout: 120_000 })
  .catch(() => fail(page, 'the JSON-mode reply did not finish'));
const reply = await page.textContent('.msg.assistant:last-child');
let parsed = null;
try { parsed = JSON.parse(reply); } catch { /* reported below */ }
if (!parsed || typeof parsed.greeting !== 'string' || !['French', 'English'].includes(parsed.language)) {
  await fail(page, `the JSON-mode reply does not follow the schema: ${reply}`);
}
console.log(`JSON mode: ${reply}; ${await page.textContent('#speed')}`);

// A second visit starts without downloading: the model comes from the
// cache (the server counts no weight request), and the page lists it.
const counts = async (reset) => (await fetch(`${base}__requests?path=/models/default.gguf${reset ? '&reset' : ''}`)).json();
await counts(true);
await page.reload();
await page.waitForSelector('#status[data-backend]', { timeout: 120_000 })
  .catch(() => fail(page, 'the second visit did not load'));
const again = await page.textContent('#status');
const c = await counts(false);
console.log(`second visit: ${again}; server: ${JSON.stringify(c)}`);
if (!again.includes('from the cache') || c.range + c.get > 0) await fail(page, `the second visit downloaded: ${JSON.stringify(c)}`);
await page.waitForFunction(() => /default\.gguf/.test(document.querySelector('#cached-list').textContent), null, { timeout: 10_000 })
  .catch(() => fail(page, 'the cached model is not listed'));
console.log(`cached: ${await page.textContent('#cached-total')}`);
await page.screenshot({ path: shot, fullPage: true });
if (errors.length) await fail(page, `page errors: ${errors.join('; ')}`);
console.log(`ok: screenshot at ${shot}`);
await browser.close();
