// node tests/tint/check.mjs DIR: every kernel in DIR (the .wgsl files the
// kernel tests and the whole-model tests write with WEBGGUF_TEST_WGSL=DIR,
// src/gpu/tests.rs and tests/common/mod.rs) through
// Chrome's WGSL compiler, Tint, in Dawn's node bindings (the `webgpu`
// package, on Dawn's null backend: it compiles, it runs nothing), on a
// device with subgroups and shader-f16.
//
// Why: a browser on a real GPU takes our subgroup kernels (the matvec's
// sums, the code book's shuffles), and Tint holds subgroup operations to a
// uniformity analysis that naga (our native compiler) does not make. The
// browser tests of CI run on SwiftShader, which has no subgroups, so
// nothing else compiles these kernels as Chrome does. Tint rejects a whole
// module for one offending entry point, even one never dispatched.
//
// As a browser's adapter gets (kernels.rs: `enable subgroups;` before every
// matvec that uses subgroups on the BrowserWebGpu backend; naga rejects
// the directive), a file that uses subgroup operations gets that directive
// first, and one that declares f16 values `enable f16;`.
//
// The tensor-core kernels (wgpu's native cooperative-matrix extension)
// are left out. It fails when: a module has an error; DIR holds fewer
// than MIN others or none with subgroupShuffle (the check would hold
// nothing); or Tint accepts a subgroup operation in non-uniform control
// flow (a compiler that no longer makes the analysis would pass
// everything).
import { create, globals } from 'webgpu';
import fs from 'node:fs';

const MIN = 100;
const dir = process.argv[2];
if (!dir) {
  console.error('usage: node tests/tint/check.mjs DIR');
  process.exit(2);
}
Object.assign(globalThis, globals);
const gpu = create(['backend=null']);
const adapter = await gpu.requestAdapter();
const want = ['subgroups', 'shader-f16'];
if (!adapter || !want.every((f) => adapter.features.has(f))) {
  console.error(`Dawn's null adapter lacks ${want.join(' or ')}`);
  process.exit(1);
}
const device = await adapter.requestDevice({ requiredFeatures: want });

// The WGSL as the browser gets it (see above).
function asTheBrowserGetsIt(code) {
  let head = '';
  if (/\bsubgroup[A-Z]\w*\(|subgroup_invocation_id|subgroup_size/.test(code) && !/^enable subgroups;/m.test(code)) {
    head += 'enable subgroups;\n';
  }
  if (/(:|<|array<)\s*f16\b|\bvec[234]h\b|\bf16\(/.test(code) && !/^enable f16;/m.test(code)) {
    head += 'enable f16;\n';
  }
  return head + code;
}

async function errors(code) {
  // In an error scope, so that Dawn does not print each error again.
  device.pushErrorScope('validation');
  const m = device.createShaderModule({ code });
  const info = await m.getCompilationInfo();
  await device.popErrorScope();
  return info.messages.filter((x) => x.type === 'error');
}

// The analysis is on: a sum in a branch on the thread index is refused.
const bad = asTheBrowserGetsIt(`@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(local_invocation_index) lid: u32) {
  if lid < 3u { o[lid] = subgroupAdd(lid); }
}`);
if ((await errors(bad)).length === 0) {
  console.error('Tint accepted subgroupAdd in non-uniform control flow: the check would hold nothing');
  process.exit(1);
}

const files = fs.readdirSync(dir).filter((f) => f.endsWith('.wgsl')).sort();
let failed = 0;
let shuffles = 0;
let native = 0;
for (const f of files) {
  const code = fs.readFileSync(`${dir}/${f}`, 'utf8');
  // The tensor-core kernels use wgpu's native extension, which no browser
  // has (`Gpu::coop` needs wgpu's experimental feature): never built there.
  if (/^enable wgpu_cooperative_matrix;/m.test(code)) {
    native++;
    continue;
  }
  if (code.includes('subgroupShuffle(')) shuffles++;
  const errs = await errors(asTheBrowserGetsIt(code));
  if (errs.length) {
    failed++;
    console.log(`FAILED ${f}`);
    for (const e of errs.slice(0, 3)) console.log(`  ${e.lineNum}:${e.linePos} ${e.message}`);
  }
}
const checked = files.length - native;
console.log(
  `${checked} kernels through Tint (${shuffles} with subgroupShuffle): ${failed} failed; ` +
    `${native} tensor-core kernels (native only) left out`,
);
if (checked < MIN || shuffles === 0) {
  console.error(`expected at least ${MIN} kernels, some with subgroupShuffle, in ${dir}`);
  process.exit(1);
}
process.exit(failed ? 1 : 0);
