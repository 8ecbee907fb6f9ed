//! Split models (llama.cpp's gguf-split layout, `NAME-00001-of-00003.gguf`
//! and on): files written by our splitter (`gguf::write::split`, the CLI's
//! `split`) load on the CPU (one buffer plus where each file begins) and on
//! the GPU (a `Concat` source streamed), and give llama.cpp's greedy ids
//! for the unsplit file; files that do not fit together are
//! `Error::Split`, never a panic.
#![cfg(all(not(target_arch = "wasm32"), feature = "gpu"))]

mod common;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use common::{assert_all_passed, references, report, Reference};
use webgguf::engine::{Engine, EngineOptions, LocalFuture};
use webgguf::gguf::{write, Gguf, Parts, Value};
use webgguf::quant::GgmlType;
use webgguf::sampler::SamplerParams;
use webgguf::source::{read_header, Concat, Source};
use webgguf::{synthetic, Error};

/// `file` split into `n` files by our writer.
fn split_n(file: &[u8], n: usize) -> Vec<Vec<u8>> {
    let g = Gguf::parse(file).unwrap();
    let parts = write::split(&g, file, g.tensors.len().div_ceil(n)).unwrap();
    assert_eq!(parts.len(), n);
    parts
}

/// The files laid end to end, and where each begins.
fn concat(files: &[&Vec<u8>]) -> (Vec<u8>, Parts) {
    let lens: Vec<u64> = files.iter().map(|f| f.len() as u64).collect();
    let bytes: Vec<u8> = files.iter().flat_map(|f| f.iter().copied()).collect();
    (bytes, Parts::of_lens(&lens, Vec::new()))
}

/// Both ways of reading a header: the CPU's (one buffer) and the streamed
/// loads' (`read_header` on a `Concat` source); they must agree.
fn merged(files: &[&Vec<u8>]) -> webgguf::Result<Gguf> {
    let (bytes, parts) = concat(files);
    let cpu = Gguf::parse_parts(&bytes, &parts);
    let src = Concat::new(files.iter().map(|f| (*f).clone()).collect())?;
    let streamed = pollster::block_on(read_header(&src)).map(|(g, _)| g);
    match (&cpu, &streamed) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.tensors, b.tensors);
            assert_eq!(a.metadata, b.metadata);
            assert_eq!(a.file_len, b.file_len);
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("the CPU parse gave {cpu:?} but the streamed one {streamed:?}"),
    }
    cpu
}

fn split_err(files: &[&Vec<u8>]) -> String {
    match merged(files) {
        Err(Error::Split(m)) => m,
        other => panic!("expected Error::Split, got {other:?}"),
    }
}

/// `file` written again after `edit` changed its header (not its shapes).
fn rewrite(file: &[u8], edit: impl FnOnce(&mut Gguf)) -> Vec<u8> {
    let old = Gguf::parse(file).unwrap();
    let mut g = old.clone();
    edit(&mut g);
    let mut w = write::Writer::new();
    let mut keys: Vec<&String> = g.metadata.keys().collect();
    keys.sort_by_key(|k| (k.as_str() != "general.alignment", k.as_str()));
    for k in keys {
        w.kv(k, &g.metadata[k]).unwrap();
    }
    let at: Vec<usize> = g
        .tensors
        .iter()
        .map(|t| w.tensor(&t.name, t.ty, &t.dims).unwrap().0 as usize)
        .collect();
    let mut out = w.header();
    let data = out.len();
    out.resize(data + w.data_len() as usize, 0);
    for (t, off) in old.tensors.iter().zip(at) {
        out[data + off..data + off + t.size].copy_from_slice(t.bytes(file));
    }
    out
}

fn tiny() -> Vec<u8> {
    synthetic::build(&common::TINY, GgmlType::Q8_0, 3).unwrap()
}

/// The merged table is the unsplit file's, tensor for tensor, apart from
/// the offsets, and each offset holds that tensor's bytes.
fn assert_same_table(whole: &[u8], files: &[Vec<u8>]) {
    let a = Gguf::parse(whole).unwrap();
    let refs: Vec<&Vec<u8>> = files.iter().collect();
    let (bytes, _) = concat(&refs);
    let b = merged(&refs).unwrap();
    assert_eq!(b.file_len, bytes.len() as u64);
    assert_eq!(a.tensors.len(), b.tensors.len());
    for (x, y) in a.tensors.iter().zip(&b.tensors) {
        assert_eq!(
            (&x.name, x.ty, &x.dims, x.size),
            (&y.name, y.ty, &y.dims, y.size)
        );
        assert_eq!(x.bytes(whole), y.bytes(&bytes), "{}", x.name);
    }
    let mut meta = b.metadata.clone();
    for k in ["split.no", "split.count", "split.tensors.count"] {
        assert!(meta.remove(k).is_some(), "{k} missing");
    }
    assert_eq!(meta, a.metadata);
    // The later files carry only the split keys.
    for f in &files[1..] {
        let g = Gguf::parse(f).unwrap();
        let mut keys: Vec<&str> = g.metadata.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(keys, ["split.count", "split.no", "split.tensors.count"]);
    }
}

#[test]
fn the_merged_header_is_the_unsplit_files_but_for_offsets() {
    let whole = tiny();
    for n in [1, 2, 3, 5] {
        assert_same_table(&whole, &split_n(&whole, n));
    }
    if let Some(shared) = common::shared() {
        let whole = std::fs::read(shared.join("models/stories260K.F32.gguf")).unwrap();
        assert_same_table(&whole, &split_n(&whole, 3));
    }
}

#[test]
fn a_single_unsplit_file_is_read_as_before() {
    let whole = tiny();
    let a = Gguf::parse(&whole).unwrap();
    let b = merged(&[&whole]).unwrap();
    assert_eq!(a.tensors, b.tensors);
    assert_eq!(a.metadata, b.metadata);
    assert_eq!((a.file_len, a.data_start), (b.file_len, b.data_start));
}

#[test]
fn files_that_do_not_fit_together_are_split_errors() {
    let whole = tiny();
    let p = split_n(&whole, 3);
    let (a, b, c) = (&p[0], &p[1], &p[2]);

    // A split file given alone, the first or another.
    let m = split_err(&[a]);
    assert!(
        m.contains("is file 1 of a model split into 3 files; 1 given"),
        "{m}"
    );
    let m = split_err(&[b]);
    assert!(
        m.contains("is file 2 of a model split into 3 files; 1 given"),
        "{m}"
    );
    // One missing.
    let m = split_err(&[a, b]);
    assert!(m.contains("is split into 3 files; 2 given"), "{m}");
    let m = split_err(&[a, c]);
    assert!(m.contains("is split into 3 files; 2 given"), "{m}");
    // One extra: given twice, or an unsplit file after them.
    let m = split_err(&[a, b, c, c]);
    assert!(m.contains("is split into 3 files; 4 given"), "{m}");
    let m = split_err(&[a, b, c, &whole]);
    assert!(m.contains("is split into 3 files; 4 given"), "{m}");
    let m = split_err(&[&whole, a]);
    assert!(
        m.contains("file 1 of the 2 given is not a file of a split model"),
        "{m}"
    );
    // Out of order.
    let m = split_err(&[b, a, c]);
    assert!(
        m.contains("file 1 of the 3 given is file 2 of 3 (split.no = 1) but was given as file 1"),
        "{m}"
    );
    let m = split_err(&[a, c, b]);
    assert!(m.contains("is file 3 of 3"), "{m}");
    // Files of two different splits of the model: the tensor counts differ.
    let q = {
        let g = Gguf::parse(&whole).unwrap();
        write::split(&g, &whole, g.tensors.len().div_ceil(3) + 1).unwrap()
    };
    assert_eq!(q.len(), 3);
    let m = split_err(&[a, b, &q[2]]);
    assert!(
        m.contains("hold 19 tensors but split.tensors.count is 21"),
        "{m}"
    );
    // A tensor in two files.
    let first = Gguf::parse(a).unwrap().tensors[0].name.clone();
    let c_dup = rewrite(c, |g| g.tensors[0].name = first.clone());
    let m = split_err(&[a, b, &c_dup]);
    assert!(
        m.contains(&format!(
            "tensor '{first}' is in both file 1 of the 3 given and file 3 of the 3 given"
        )),
        "{m}"
    );
    // A later file whose split.count disagrees.
    let c4 = rewrite(c, |g| {
        g.metadata.insert("split.count".into(), Value::U16(4));
    });
    let m = split_err(&[a, b, &c4]);
    assert!(
        m.contains("file 3 of the 3 given is split into 4 files; 3 given"),
        "{m}"
    );
    // No split.tensors.count.
    let a0 = rewrite(a, |g| {
        g.metadata.remove("split.tensors.count");
    });
    let m = split_err(&[&a0, b, c]);
    assert!(
        m.contains("file 1 of the 3 given has no split.tensors.count"),
        "{m}"
    );
    // The parts must lie inside the buffer, in order.
    let (bytes, _) = concat(&[a, b, c]);
    let bad = Parts {
        starts: vec![0, 10, 5],
        names: Vec::new(),
    };
    assert!(matches!(
        Gguf::parse_parts(&bytes, &bad),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn errors_name_the_files_when_their_names_are_known() {
    let whole = tiny();
    let p = split_n(&whole, 3);
    let names: Vec<String> = (0..3).map(|i| write::split_name("model", i, 3)).collect();
    let bytes = p[0].clone();
    let parts = Parts {
        starts: vec![0],
        names: names[..1].to_vec(),
    };
    let e = Gguf::parse_parts(&bytes, &parts).unwrap_err();
    assert_eq!(
        e.to_string(),
        "split model: model-00001-of-00003.gguf is file 1 of a model split into 3 files; \
         1 given (load all 3 together, in order: NAME-00001-of-00003.gguf to \
         NAME-00003-of-00003.gguf)"
    );
    let src = Concat::new(vec![p[0].clone(), p[2].clone()])
        .unwrap()
        .with_names(vec![names[0].clone(), names[2].clone()]);
    let e = pollster::block_on(read_header(&src)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "split model: model-00001-of-00003.gguf is split into 3 files; 2 given"
    );
}

/// A file in memory that counts the reads asked of it (in a count shared
/// by the files of a `Concat`).
struct Counted(Vec<u8>, Rc<Cell<usize>>);

impl Source for Counted {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn read(&self, offset: u64, len: usize) -> LocalFuture<'_, webgguf::Result<Vec<u8>>> {
        self.1.set(self.1.get() + 1);
        self.0.read(offset, len)
    }
}

#[test]
fn a_concat_source_reads_across_its_files_and_asks_each_at_once() {
    let reads = Rc::new(Cell::new(0));
    let files: Vec<Counted> = [0..7u8, 7..8, 8..20]
        .into_iter()
        .map(|r| Counted(r.collect(), reads.clone()))
        .collect();
    let all: Vec<u8> = (0..20).collect();
    let src = Concat::new(files).unwrap();
    assert_eq!(src.len(), 20);
    assert_eq!(src.part_starts(), [0, 7, 8]);
    for off in 0..=20usize {
        for len in 0..=20 - off {
            let got = pollster::block_on(src.read(off as u64, len)).unwrap();
            assert_eq!(got, &all[off..off + len], "{off}+{len}");
        }
    }
    assert!(pollster::block_on(src.read(15, 6)).is_err());
    // The files' reads start when the read is made, before it is awaited
    // (a loader keeps several in flight).
    let before = reads.get();
    let pending = src.read(5, 10);
    assert_eq!(reads.get(), before + 3);
    assert_eq!(pollster::block_on(pending).unwrap(), &all[5..15]);
}

fn opts() -> EngineOptions {
    EngineOptions {
        context: 512,
        ..EngineOptions::default()
    }
}

fn cpu_engine(files: &[Vec<u8>]) -> Engine {
    let refs: Vec<&Vec<u8>> = files.iter().collect();
    let (bytes, parts) = concat(&refs);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    Engine::load_cpu_parts(
        bytes,
        &parts,
        opts(),
        Box::new(webgguf::pool::ThreadPool::new(threads)),
        common::now_ms,
    )
    .unwrap()
}

/// Streamed from the files as one `Concat` source, as a browser would
/// from a `Blob` or URL per file.
fn gpu_engine(files: &[Vec<u8>]) -> Option<Engine> {
    let gpu = common::gpu()?;
    let src = Concat::new(files.to_vec()).unwrap();
    Some(
        pollster::block_on(webgguf::gpu::load_engine_from(
            gpu,
            &src,
            opts(),
            webgguf::gpu::GpuOptions::default(),
            common::now_ms,
            &|_, _| {},
        ))
        .unwrap(),
    )
}

fn greedy(e: &mut Engine, r: &Reference) -> Vec<u32> {
    e.reset();
    pollster::block_on(e.generate(
        &r.prompt_ids,
        r.generated_ids.len(),
        SamplerParams::default(),
        &mut |_, _| true,
    ))
    .unwrap()
    .generated_ids
}

/// Teacher-forced top-10 logits of `e` on `r` (see tests/common).
fn forced_steps(e: &mut Engine, r: &Reference) -> Vec<Vec<(u32, f32)>> {
    let (toks, start) = common::oracle::forced_input(r);
    pollster::block_on(e.logits_at(&toks, start, 10)).unwrap()
}

/// The file at `path` split in 3, on each backend: exact greedy ids where
/// `exact`, else teacher-forced within `bound` (cpu, gpu), and the very
/// same logits as the unsplit file on the same backend; at most `max`
/// references.
fn check_split(path: &Path, refs: &[Reference], exact: bool, bound: (f32, f32), max: usize) {
    let whole = std::fs::read(path).unwrap();
    let files = split_n(&whole, 3);
    let mut failures = Vec::new();
    let mut checked = 0;
    let one = std::slice::from_ref(&whole);
    let mut backends: Vec<(&str, Engine, Engine, f32)> =
        vec![("cpu", cpu_engine(&files), cpu_engine(one), bound.0)];
    if let (Some(split), Some(unsplit)) = (gpu_engine(&files), gpu_engine(one)) {
        backends.push(("gpu", split, unsplit, bound.1));
    }
    for (name, e, unsplit, bound) in &mut backends {
        assert_eq!(e.backend_name(), *name);
        for r in refs.iter().take(max) {
            checked += 1;
            if exact {
                let ids = greedy(e, r);
                let detail = format!("{name}: ids {ids:?} vs {:?}", r.generated_ids);
                report(
                    ids == r.generated_ids,
                    r,
                    &format!("{name} split in 3, exact greedy"),
                    &detail,
                    &mut failures,
                );
            }
            // Teacher-forced against llama.cpp (as `common::check_forced`),
            // and the same steps from the unsplit file.
            let steps = forced_steps(e, r);
            let (bad, worst) = common::oracle::compare_forced(&steps, r);
            report(
                bad.is_empty() && worst <= *bound,
                r,
                &format!("{name} split in 3, forced, max |dlogit| {worst:.4} (bound {bound})"),
                &format!("top-1 disagrees at steps {bad:?}; max |dlogit| {worst} > {bound}?"),
                &mut failures,
            );
            let same = steps == forced_steps(unsplit, r);
            report(
                same,
                r,
                &format!("{name} split in 3, the unsplit file's logits"),
                "the split and unsplit files' logits differ",
                &mut failures,
            );
        }
    }
    assert_all_passed(checked, &failures);
}

fn refs_for(shared: &Path, model: &str) -> Vec<Reference> {
    references(shared, "greedy.json")
        .into_iter()
        .filter(|r| r.model == model)
        .collect()
}

#[test]
fn split_stories260k_matches_llama_cpp_on_cpu_and_gpu() {
    let Some(shared) = common::shared() else {
        return;
    };
    let refs = refs_for(&shared, "stories260K.F32.gguf");
    let path = shared.join("models/stories260K.F32.gguf");
    // The bounds of tests/reference_cpu.rs and tests/reference_gpu.rs.
    check_split(&path, &refs, true, (0.05, 0.03), usize::MAX);
}

#[test]
fn split_smollm2_matches_llama_cpp_on_cpu_and_gpu() {
    let Some(shared) = common::shared() else {
        return;
    };
    let Some(path) = common::smollm2() else {
        return;
    };
    let refs = refs_for(&shared, "SmolLM2-135M-Instruct.Q4_1.gguf");
    // Q4_1: llama.cpp's 8-bit activations split greedy paths at near-ties,
    // so teacher-forced. The CPU bound is tests/reference_cpu.rs's for
    // SmolLM2 (30 layers); the GPU's f32 math differs from llama.cpp's
    // 8-bit activations by as much (0.87 measured), so the same bound.
    check_split(&path, &refs, false, (1.5, 1.5), 1);
}

/// A scratch directory for the CLI's files, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("webgguf-split-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_webgguf"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_cli_splits_and_loads_split_files_on_both_backends() {
    let Some(shared) = common::shared() else {
        return;
    };
    let r = &refs_for(&shared, "stories260K.F32.gguf")[0];
    let dir = TempDir::new("cli");
    let input = shared.join("models/stories260K.F32.gguf");
    let prefix = dir.0.join("stories");
    let out = cli(&[
        "split",
        "--max-tensors",
        "16",
        input.to_str().unwrap(),
        prefix.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let first = write::split_name(prefix.to_str().unwrap(), 0, 3);
    for i in 0..3 {
        assert!(Path::new(&write::split_name(prefix.to_str().unwrap(), i, 3)).is_file());
    }
    // The same files as the library's splitter writes.
    let whole = std::fs::read(&input).unwrap();
    assert_eq!(std::fs::read(&first).unwrap(), split_n(&whole, 3)[0]);
    let n = r.generated_ids.len().to_string();
    for backend in ["cpu", "gpu"] {
        let out = cli(&[
            "generate",
            "-m",
            &first,
            "-p",
            &r.prompt,
            "-n",
            &n,
            "--json",
            "--backend",
            backend,
        ]);
        assert!(out.status.success(), "{backend}: {out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ids: Vec<u32> = v["generated_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(ids, r.generated_ids, "{backend}");
    }
    // A file missing: the CLI names it.
    let second = write::split_name(prefix.to_str().unwrap(), 1, 3);
    std::fs::remove_file(&second).unwrap();
    let out = cli(&["info", "-m", &first, "--backend", "cpu"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("split into 3 files, but 1 of them is missing") && err.contains(&second),
        "{err}"
    );
}
