// The model runs here, off the page's thread. Messages in:
//   { type: 'load', url } | { type: 'load', file } | { type: 'chat', messages, options }
//   { type: 'stop' } | { type: 'reset' }
// Messages out:
//   { type: 'progress', fraction, stage, detail: { loaded, total } } | { type: 'loaded', info }
//   { type: 'token', piece } | { type: 'done', stats, aborted } | { type: 'error', message }
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
  post({ type: 'loaded', info: model.info });
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

self.onmessage = async ({ data: msg }) => {
  try {
    if (msg.type === 'stop') { controller?.abort(); return; }
    if (msg.type === 'reset') { model?.reset(); return; }
    await init();
    if (msg.type === 'load') await load(msg);
    else if (msg.type === 'chat') await chat(msg);
  } catch (e) {
    post({ type: 'error', message: String(e && e.message || e), code: e && e.code });
  }
};
