// The model runs here, off the page's thread. Messages in:
//   { type: 'load', url } | { type: 'load', file } | { type: 'chat', messages, options, json? }
//   (json: { schema } or { schema: null } for any object: the reply goes through
//   model.openaiFetch with a response_format, so the grammar constrains it)
//   { type: 'stop' } | { type: 'reset' } | { type: 'cache-list' } | { type: 'cache-delete', url }
// Messages out:
//   { type: 'progress', fraction, stage, detail: { loaded, total } } | { type: 'loaded', info }
//   { type: 'token', piece } | { type: 'done', stats, aborted } | { type: 'error', message }
//   { type: 'cache', entries } (WasmModel.cache.list(): what a next visit loads without downloading)
import init, { WasmModel } from './pkg/webgguf.js';

let model = null;
let controller = null;
const post = (m) => self.postMessage(m);

async function load(msg) {
  if (model) { model.free(); model = null; }
  // The file (a Blob) or the URL goes to the engine as it is: on WebGPU it
  // streams into GPU buffers (HTTP Range requests for a URL), on the CPU it
  // is read once into wasm memory; either way the page holds no copy.
  const source = msg.file ?? new URL(msg.url, self.location.href);
  model = await WasmModel.new(source, {
    backend: msg.backend || 'auto',
    onProgress: (fraction, stage, detail) => post({ type: 'progress', fraction, stage, detail }),
  });
  const { cache, ...info } = model.info;
  post({ type: 'loaded', info, cache: cache && JSON.parse(JSON.stringify(cache, (k, v) => (v instanceof Error ? `${v.code}: ${v.message}` : v))) });
  post({ type: 'cache', entries: await WasmModel.cache.list() });
}

async function chat(msg) {
  controller = new AbortController();
  try {
    const result = await model.chat(msg.messages, {
      ...msg.options,
      signal: controller.signal,
      onToken: (piece) => post({ type: 'token', piece }),
    });
    post({ type: 'done', stats: result.stats, aborted: false });
  } catch (e) {
    if (e.name === 'AbortError') post({ type: 'done', stats: null, aborted: true });
    else throw e;
  } finally {
    controller = null;
  }
}

// JSON mode: the OpenAI endpoint, streamed as server-sent events.
async function chatJson(msg) {
  controller = new AbortController();
  const format = msg.json.schema
    ? { type: 'json_schema', json_schema: { name: 'schema', schema: msg.json.schema, strict: true } }
    : { type: 'json_object' };
  const body = {
    model: 'local', messages: msg.messages, max_tokens: msg.options.maxTokens, temperature: msg.options.temperature,
    stream: true, stream_options: { include_usage: true }, response_format: format,
  };
  try {
    const res = await model.openaiFetch('http://webgguf.local/v1/chat/completions', {
      method: 'POST', body: JSON.stringify(body), signal: controller.signal,
    });
    if (!res.ok) {
      const e = (await res.json()).error;
      throw Object.assign(new Error(e.message), { code: e.code });
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let usage = null;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += value;
      let at;
      while ((at = buf.indexOf('\n\n')) >= 0) {
        const data = buf.slice(0, at).replace(/^data: /, '');
        buf = buf.slice(at + 2);
        if (data === '[DONE]') continue;
        const c = JSON.parse(data);
        if (c.usage) usage = c.usage;
        const piece = c.choices[0]?.delta?.content;
        if (piece) post({ type: 'token', piece });
      }
    }
    const w = usage.webgguf;
    post({ type: 'done', aborted: false, stats: {
      promptTokens: usage.prompt_tokens, cachedTokens: usage.prompt_tokens_details.cached_tokens,
      generatedTokens: usage.completion_tokens, prefillTokS: w.prefill_tok_s, decodeTokS: w.decode_tok_s,
      stopReason: w.stop_reason, grammarMs: w.grammar_ms, decodeMs: w.decode_ms,
    } });
  } catch (e) {
    if (e.name === 'AbortError') post({ type: 'done', stats: null, aborted: true });
    else throw e;
  } finally {
    controller = null;
  }
}

self.onmessage = async ({ data: msg }) => {
  try {
    if (msg.type === 'stop') { controller?.abort(); return; }
    if (msg.type === 'reset') { model?.reset(); return; }
    await init();
    if (msg.type === 'cache-delete') await WasmModel.cache.delete(msg.url);
    if (msg.type === 'cache-list' || msg.type === 'cache-delete') {
      post({ type: 'cache', entries: await WasmModel.cache.list() });
    } else if (msg.type === 'load') await load(msg);
    else if (msg.type === 'chat' && msg.json) await chatJson(msg);
    else if (msg.type === 'chat') await chat(msg);
  } catch (e) {
    post({ type: 'error', message: String(e && e.message || e), code: e && e.code });
  }
};
