// One engine per page load, chosen by the query string:
//   ?engine=webgguf&backend=cpu|webgpu   or   ?engine=wllama&threads=1|2
// Both run the same model from the same URL with the same method, timed the
// same way from token callbacks in this page:
//   pp: a ~255-token prompt, time to the first generated token;
//   tg: greedy after "Once upon a time", (n - 1) tokens over the time from
//       the first to the last token callback.
// Each is repeated `reps` times after one warm-up; window.__result gets medians.
const q = new URLSearchParams(location.search);
const engine = q.get('engine');
const reps = Number(q.get('reps') || 3);
const nGen = Number(q.get('n') || 128);
const modelUrl = q.get('model') || '/models/default.gguf';
const longPrompt = 'The history of the printing press begins in the fifteenth century, when movable type changed how books were made. '.repeat(12);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function timed(run) {
  const t0 = performance.now();
  const stamps = [];
  await run(() => stamps.push(performance.now()));
  return { t0, stamps };
}

async function benchWebgguf(bytes) {
  const { default: init, WasmModel } = await import('/pkg/webgguf.js');
  const wasm = await init();
  const memBefore = wasm.memory.buffer.byteLength;
  const tl0 = performance.now();
  const model = await WasmModel.new(bytes, { backend: q.get('backend') || 'cpu', contextLength: 1024 });
  const loadMs = performance.now() - tl0;
  const promptTokens = model.tokenize(longPrompt).length;
  const gen = (prompt, n) => (onTok) => {
    model.reset();
    return model.generate(prompt, { temperature: 0, maxTokens: n, onToken: () => onTok() });
  };
  const memory = () => ({ beforeLoad: memBefore, now: wasm.memory.buffer.byteLength, fileBytes: bytes.length });
  return { promptTokens, loadMs, gen, label: `webgguf ${model.backend}`, info: model.info, memory };
}

async function benchWllama(bytes) {
  const { Wllama } = await import('/wllama/index.js');
  const threads = Number(q.get('threads') || 1);
  const w = new Wllama({
    'single-thread/wllama.wasm': '/wllama/single-thread/wllama.wasm',
    'multi-thread/wllama.wasm': '/wllama/multi-thread/wllama.wasm',
  }, { suppressNativeLog: true });
  const tl0 = performance.now();
  await w.loadModel([new Blob([bytes])], { n_ctx: 1024, n_threads: threads, n_batch: 512 });
  const loadMs = performance.now() - tl0;
  const promptTokens = (await w.tokenize(longPrompt, true)).length;
  const gen = (prompt, n) => (onTok) => w.createCompletion(prompt, {
    nPredict: n, useCache: false, sampling: { temp: 0 }, onNewToken: () => onTok(),
  });
  return { promptTokens, loadMs, gen, label: `wllama ${threads} thread${threads > 1 ? 's' : ''} (multi-thread build: ${threads > 1})` };
}

async function main() {
  const bytes = new Uint8Array(await (await fetch(modelUrl)).arrayBuffer());
  const e = engine === 'wllama' ? await benchWllama(bytes) : await benchWebgguf(bytes);
  await timed(e.gen('Once upon a time', 8)); // warm-up
  const pp = [], tg = [], ns = [];
  for (let i = 0; i < reps; i++) {
    const a = await timed(e.gen(longPrompt, 1));
    pp.push(e.promptTokens / ((a.stamps[0] - a.t0) / 1000));
    const b = await timed(e.gen('Once upon a time', nGen));
    const s = b.stamps;
    ns.push(s.length);
    tg.push((s.length - 1) / ((s[s.length - 1] - s[0]) / 1000));
  }
  return {
    engine: e.label, promptTokens: e.promptTokens, generated: ns, loadMs: e.loadMs,
    pp: median(pp), tg: median(tg), ppRuns: pp, tgRuns: tg,
    crossOriginIsolated: self.crossOriginIsolated, quantization: e.info?.quantization,
    wasmMemory: e.memory?.(),
  };
}

main().then(
  (r) => { window.__result = r; document.getElementById('out').textContent = JSON.stringify(r, null, 2); },
  (e) => { window.__result = { error: String(e && e.stack || e) }; document.getElementById('out').textContent = String(e); },
);
