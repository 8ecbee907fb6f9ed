// The OpenAI-compatible endpoint (model.openaiFetch) in headless Chromium,
// driven by the real `openai` npm client inside the page; schemas are
// checked here with ajv, an independent validator.
// Usage: node openai.mjs <base-url>   (scripts/test-openai.sh serves it)
import { chromium } from 'playwright-core';
import Ajv from 'ajv';

const [base] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--enable-unsafe-webgpu', '--no-sandbox', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-default-apps', '--disable-extensions'],
});
const page = await browser.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
await page.goto(`${base}/e2e/openai.html`);
await page.waitForFunction(() => window.ready === true, null, { timeout: 60_000 });

const ajv = new Ajv({ allErrors: true, strict: false });
let failed = 0;
const check = (ok, what, detail) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail === undefined ? '' : `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`}`);
  if (!ok) failed++;
};
const step = async (name, fn, arg) => {
  const t0 = Date.now();
  try {
    const r = await page.evaluate(fn, arg);
    console.log(`-- ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    return r;
  } catch (e) {
    check(false, name, String(e));
    return null;
  }
};

// SmolLM2 on the wasm CPU engine (SwiftShader WebGPU is far too slow for it).
await step('load SmolLM2 on the CPU', async () => {
  window.smol = await window.load('/models/default.gguf', 'cpu');
});
const messages = [{ role: 'user', content: 'What is the capital of France?' }];

const basic = await step('non-streaming, streaming, usage, KV reuse', async (messages) => {
  const { client } = window.smol;
  const models = await client.models.list();
  const req = { model: 'local', messages, max_tokens: 12, temperature: 0 };
  const a = await client.chat.completions.create(req);
  const b = await client.chat.completions.create(req);
  let text = ''; let chunks = 0; let usage = null; let finish = null; let role = null;
  const stream = await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  for await (const c of stream) {
    chunks++;
    if (c.usage) usage = c.usage;
    const ch = c.choices[0];
    if (!ch) continue;
    role ??= ch.delta.role;
    text += ch.delta.content ?? '';
    finish = ch.finish_reason ?? finish;
  }
  return { models: models.data.map((m) => m.id), a, b, text, chunks, usage, finish, role };
}, messages);
if (basic) {
  const { a, b } = basic;
  check(basic.models.length === 1, 'GET /v1/models lists the model', basic.models);
  check(a.object === 'chat.completion' && a.choices[0].message.role === 'assistant', 'chat.completion shape', a.choices[0]);
  check(a.choices[0].message.content.length > 0, 'a reply', a.choices[0].message.content);
  check(a.usage.completion_tokens <= 12 && a.usage.prompt_tokens > 0, 'usage counts', a.usage);
  check(['stop', 'length'].includes(a.choices[0].finish_reason), 'finish_reason', a.choices[0].finish_reason);
  check(a.usage.webgguf && a.usage.webgguf.decode_tok_s >= 0, 'timings under usage.webgguf', a.usage.webgguf);
  check(b.usage.prompt_tokens_details.cached_tokens > 0, 'the second identical request reuses the KV cache', b.usage.prompt_tokens_details);
  check(b.choices[0].message.content === a.choices[0].message.content, 'greedy replies repeat');
  check(basic.text === a.choices[0].message.content, 'streamed text equals the non-streamed reply', basic.text);
  check(basic.role === 'assistant' && basic.chunks >= 3, 'chat.completion.chunk stream', basic.chunks);
  check(basic.usage && basic.usage.completion_tokens === a.usage.completion_tokens, 'include_usage chunk', basic.usage);
  check(basic.finish === a.choices[0].finish_reason, 'stream finish_reason', basic.finish);
}

const lp = await step('logprobs', async (messages) => {
  const r = await window.smol.client.chat.completions.create({
    model: 'local', messages, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 3,
  });
  return r.choices[0].logprobs.content;
}, messages);
if (lp) {
  check(lp.length === 4 && lp.every((t) => t.top_logprobs.length === 3 && t.logprob <= 0), 'logprobs and top_logprobs', lp[0]);
  check(lp.every((t) => t.logprob === t.top_logprobs[0].logprob), 'greedy picks the most likely token');
}

const aborted = await step('abort (streaming and not), then the model is usable', async (messages) => {
  const { client } = window.smol;
  const out = {};
  const c1 = new AbortController();
  const stream = await client.chat.completions.create(
    { model: 'local', messages, max_tokens: 200, temperature: 0, stream: true }, { signal: c1.signal });
  let n = 0;
  try {
    for await (const _ of stream) { if (++n === 3) c1.abort(); }
    out.stream = `ended after ${n} chunks`;
  } catch (e) { out.stream = window.describe(e); }
  out.streamChunks = n;
  const c2 = new AbortController();
  setTimeout(() => c2.abort(), 300);
  try {
    await client.chat.completions.create({ model: 'local', messages, max_tokens: 300, temperature: 0 }, { signal: c2.signal });
    out.plain = 'completed';
  } catch (e) { out.plain = window.describe(e); }
  const after = await client.chat.completions.create({ model: 'local', messages, max_tokens: 3, temperature: 0 });
  out.after = after.choices[0].message.content;
  return out;
}, messages);
if (aborted) {
  check(aborted.streamChunks < 10, 'the aborted stream stopped', aborted);
  check(aborted.plain?.name === 'APIUserAbortError', 'an aborted request rejects as an abort', aborted.plain);
  check(typeof aborted.after === 'string' && aborted.after.length > 0, 'a request after the aborts works', aborted.after);
}

const schema = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 24 },
    country: { type: 'string', maxLength: 24 },
    population: { type: 'integer', minimum: 0, maximum: 100000000 },
    climate: { enum: ['oceanic', 'continental', 'mediterranean'] },
    landmarks: { type: 'array', items: { type: 'string', maxLength: 24 }, minItems: 1, maxItems: 3 },
    mayor: {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 24 }, party: { enum: ['left', 'centre', 'right'] } },
      required: ['name', 'party'],
      additionalProperties: false,
    },
  },
  required: ['city', 'country', 'population', 'climate', 'landmarks', 'mayor'],
  additionalProperties: false,
};
const json = await step('json_schema and json_object on SmolLM2', async ({ messages, schema }) => {
  const { client } = window.smol;
  const r = await client.chat.completions.create({
    model: 'local', messages: [{ role: 'user', content: 'Describe Paris as JSON.' }], max_tokens: 200, temperature: 0,
    response_format: { type: 'json_schema', json_schema: { name: 'city', schema, strict: true } },
  });
  const o = await client.chat.completions.create({
    model: 'local', messages, max_tokens: 100, temperature: 0.7, seed: 3, response_format: { type: 'json_object' },
  });
  const plain = await client.chat.completions.create({
    model: 'local', messages: [{ role: 'user', content: 'Describe Paris as JSON.' }], max_tokens: 60, temperature: 0,
  });
  return { schema: r.choices[0].message.content, finish: r.choices[0].finish_reason, usage: r.usage,
    object: o.choices[0].message.content, plain: plain.choices[0].message.content };
}, { messages, schema });
if (json) {
  let parsed = null;
  try { parsed = JSON.parse(json.schema); } catch { /* reported below */ }
  const validate = ajv.compile(schema);
  check(parsed !== null && validate(parsed), 'json_schema output validates (ajv)', parsed === null ? json.schema : validate.errors ?? parsed);
  check(json.finish === 'stop', 'the schema run ends at the closing brace', json.finish);
  check(json.usage.webgguf.grammar_ms > 0, 'grammar time is reported', json.usage.webgguf);
  let obj = null;
  try { obj = JSON.parse(json.object); } catch { /* reported below */ }
  check(obj !== null && typeof obj === 'object' && !Array.isArray(obj), 'json_object output is an object', json.object);
  let free = null;
  try { free = JSON.parse(json.plain); } catch { /* expected */ }
  check(free === null || !validate(free), 'without the grammar the same prompt does not validate', json.plain);
}

const weather = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 24 }, unit: { enum: ['celsius', 'fahrenheit'] } },
  required: ['city', 'unit'],
  additionalProperties: false,
};
const tools = await step('named tool_choice on SmolLM2 (generic tool handling)', async (weather) => {
  const { client } = window.smol;
  const tools = [
    { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city', parameters: weather } },
    { type: 'function', function: { name: 'get_time', description: 'Current time in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
  ];
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const r = await client.chat.completions.create({
    model: 'local', messages, max_tokens: 60, temperature: 0, tools,
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  const call = r.choices[0].message.tool_calls?.[0];
  // The answer goes back as a tool message; the conversation continues.
  const next = await client.chat.completions.create({
    model: 'local', max_tokens: 8, temperature: 0, tools,
    messages: [...messages, r.choices[0].message, { role: 'tool', tool_call_id: call?.id ?? 'x', content: '18 degrees' }],
  });
  let streamed = null;
  for await (const c of await client.chat.completions.create({
    model: 'local', messages, max_tokens: 60, temperature: 0, tools, tool_choice: 'required', stream: true,
  })) {
    const d = c.choices[0]?.delta;
    if (d?.tool_calls) streamed = d.tool_calls;
  }
  return { finish: r.choices[0].finish_reason, call, next: next.choices[0].message, streamed };
}, weather);
if (tools) {
  check(tools.finish === 'tool_calls', 'finish_reason tool_calls', tools.finish);
  check(tools.call?.type === 'function' && tools.call.function.name === 'get_weather' && /^call_/.test(tools.call.id), 'the named tool is called', tools.call);
  let args = null;
  try { args = JSON.parse(tools.call.function.arguments); } catch { /* reported below */ }
  const v = ajv.compile(weather);
  check(typeof tools.call?.function.arguments === 'string' && args !== null && v(args), 'arguments are a JSON string matching the parameters (ajv)', tools.call?.function.arguments);
  check(tools.next?.role === 'assistant', 'a tool result continues the conversation', tools.next);
  check(Array.isArray(tools.streamed) && ['get_weather', 'get_time'].includes(tools.streamed[0]?.function?.name), 'tool_choice required, streamed', tools.streamed);
}

const errs = await step('error statuses', async (messages) => {
  const { client, model } = window.smol;
  const bad = async (extra) => {
    try { await client.chat.completions.create({ model: 'local', messages, max_tokens: 2, ...extra }); return 'accepted'; } catch (e) { return window.describe(e); }
  };
  const out = {
    n: await bad({ n: 2 }),
    temperature: await bad({ temperature: 5 }),
    format: await bad({ response_format: { type: 'xml' } }),
    schema: await bad({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'nonsense' } } } }),
    messages: await bad({ messages: [] }),
    toolChoice: await bad({ tool_choice: { type: 'function', function: { name: 'nope' } }, tools: [{ type: 'function', function: { name: 'f' } }] }),
    role: await bad({ messages: [{ role: 'wizard', content: 'x' }] }),
  };
  const route = await model.openaiFetch('http://webgguf.local/v1/completions', { method: 'POST', body: '{}' });
  out.route = { status: route.status, body: await route.json() };
  const broken = await model.openaiFetch('http://webgguf.local/v1/chat/completions', { method: 'POST', body: '{nope' });
  out.broken = { status: broken.status, body: await broken.json() };
  // Busy: a second request while a stream runs.
  const s = await client.chat.completions.create({ model: 'local', messages, max_tokens: 30, stream: true });
  const it = s[Symbol.asyncIterator]();
  await it.next();
  out.busy = await bad({});
  await it.return?.();
  out.afterBusy = (await client.chat.completions.create({ model: 'local', messages, max_tokens: 2 })).choices.length;
  return out;
}, messages);
if (errs) {
  for (const [k, param] of [['n', 'n'], ['temperature', 'temperature'], ['format', 'response_format.type'], ['schema', 'response_format'], ['messages', 'messages'], ['toolChoice', 'tool_choice'], ['role', 'messages[0].role']]) {
    check(errs[k]?.status === 400 && errs[k]?.param === param, `400 naming ${param}`, errs[k]);
  }
  check(errs.route.status === 404 && errs.route.body.error?.type === 'invalid_request_error', 'unknown route is a 404 with OpenAI error JSON', errs.route);
  check(errs.broken.status === 400 && errs.broken.body.error?.param === 'body', 'a body that is not JSON is a 400', errs.broken);
  check(errs.busy?.status === 409 && errs.busy?.code === 'Busy', 'a request while one runs is a 409 Busy', errs.busy);
  check(errs.afterBusy === 1, 'the model serves again after the busy one ends');
}

// The same schema-constrained greedy ids on WebGPU (SwiftShader) and the
// CPU, on a model small enough for SwiftShader.
const small = {
  type: 'object',
  properties: { mood: { enum: ['happy', 'sad'] }, ages: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 9 }, maxItems: 2 } },
  required: ['mood', 'ages'],
  additionalProperties: false,
};
const same = await step('WebGPU (SwiftShader) and CPU: identical ids under a schema', async (small) => {
  const out = {};
  for (const backend of ['webgpu', 'cpu']) {
    const t0 = performance.now();
    const { model, client } = await window.load('/shared/models/stories260K.F32.gguf', backend);
    const t1 = performance.now();
    const r = await client.chat.completions.create({
      model: 'local', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 80, temperature: 0,
      response_format: { type: 'json_schema', json_schema: { name: 'kid', schema: small, strict: true } },
    });
    out[backend] = { loadMs: t1 - t0, runMs: performance.now() - t1, backend: model.backend, ids: r.usage.webgguf.generated_ids, text: r.choices[0].message.content };
    model.free();
  }
  return out;
}, small);
if (same) {
  check(same.webgpu.backend === 'webgpu' && same.cpu.backend === 'cpu', 'both backends ran', [same.webgpu.backend, same.cpu.backend]);
  check(JSON.stringify(same.webgpu.ids) === JSON.stringify(same.cpu.ids), 'identical ids', same);
  let o = null;
  try { o = JSON.parse(same.cpu.text); } catch { /* reported below */ }
  check(o !== null && ajv.compile(small)(o), 'stories260K output validates (ajv)', same.cpu.text);
}

check(errors.length === 0, 'no page errors', errors);
await browser.close();
if (failed) { console.error(`${failed} check(s) failed`); process.exit(1); }
console.log('openai endpoint: all checks passed');
