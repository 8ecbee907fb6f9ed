// Run from a fresh folder where the packed tarball was `npm install`ed: the
// package imports by name, loads stories260K on the CPU (Node has no WebGPU,
// so 'auto' must fall back) and reproduces llama.cpp's greedy ids.
// Usage: node installed.mjs <model.gguf> <greedy.json>
import fs from 'node:fs';
import { createRequire } from 'node:module';
import init, { WasmModel } from 'webgguf';

const [modelPath, refPath] = process.argv.slice(2);
const require = createRequire(import.meta.url);
await init({ module_or_path: fs.readFileSync(require.resolve('webgguf/webgguf_bg.wasm')) });
const model = await WasmModel.new(fs.readFileSync(modelPath), { backend: 'auto' });
if (model.backend !== 'cpu' || !/navigator\.gpu/.test(model.fallbackReason)) {
  throw new Error(`expected the CPU fallback, got ${model.backend} (${model.fallbackReason})`);
}
const refs = JSON.parse(fs.readFileSync(refPath, 'utf8')).references
  .filter((r) => r.model === 'stories260K.F32.gguf');
for (const r of refs) {
  model.reset();
  const out = await model.generate(r.prompt, { temperature: 0, maxTokens: r.generated_ids.length });
  if (JSON.stringify(out.tokens) !== JSON.stringify(r.generated_ids)) {
    throw new Error(`${r.prompt}: ids differ from llama.cpp's:\n${out.tokens}\n${r.generated_ids}`);
  }
}
console.log(`installed package ok: ${refs.length} greedy references reproduced (${model.info.quantization}, ${model.backend})`);
model.free();
