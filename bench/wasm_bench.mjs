// Runs examples/wasm_bench.rs (built for wasm32-unknown-unknown) in Node.
// usage: node bench/wasm_bench.mjs BENCH.wasm [MODEL.gguf [PP TG REPS]]
// With WASM_BENCH_CLOCK=cpu, times are this process's CPU time rather than
// wall time: steadier on a shared machine (after warm-up the only busy
// thread is the one running the benchmark).
import { readFileSync } from "node:fs";

const [wasm, model, pp = "128", tg = "128", reps = "2"] = process.argv.slice(2);
let memory;
const text = new TextDecoder();
const env = {
  now_ms:
    process.env.WASM_BENCH_CLOCK === "cpu"
      ? () => {
          const u = process.cpuUsage();
          return (u.user + u.system) / 1000;
        }
      : () => performance.now(),
  print: (ptr, len) => console.log(text.decode(new Uint8Array(memory.buffer, ptr, len))),
};
const module = new WebAssembly.Module(readFileSync(wasm));
// wasm-bindgen's glue (linked in through wgpu) leaves imports that the CPU
// engine never calls: stub them.
const imports = { env };
for (const imp of WebAssembly.Module.imports(module)) {
  imports[imp.module] ??= {};
  imports[imp.module][imp.name] ??= () => {
    throw new Error(`${imp.module}.${imp.name} called`);
  };
}
const instance = new WebAssembly.Instance(module, imports);
const ex = instance.exports;
memory = ex.memory;
if (process.env.WASM_BENCH_MATMULS) ex.bench_matmuls(1200);
else if (!process.env.WASM_BENCH_MODEL_ONLY) ex.bench_kernels(300);
if (model) {
  const bytes = readFileSync(model);
  const ptr = ex.bench_alloc(bytes.length);
  new Uint8Array(memory.buffer, ptr, bytes.length).set(bytes);
  ex.bench_model(ptr, bytes.length, +pp, +tg, +reps);
}
