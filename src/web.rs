//! The browser shell: `WasmModel`, the JavaScript face of the engine.
//!
//! Everything platform-specific about the web lives here: reading a
//! `Uint8Array` into wasm memory, choosing WebGPU or the CPU, turning engine
//! errors into JS `Error`s, yielding to the event loop so a page (or a
//! worker's message queue) stays responsive, and the JS shapes of options and
//! results. The engine itself is the same one the CLI runs.
//!
//! Methods that run the model return promises built from futures that own a
//! clone of the model's shared state, so no Rust borrow of the JS object is
//! held across an `await`: a second call while one runs gets a clear `Busy`
//! error instead of wasm-bindgen's aliasing trap.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Function, Object, Promise, Reflect, Uint32Array};
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use crate::chat::{ChatTemplate, Message};
use crate::cpu::Serial;
use crate::engine::{Engine, EngineOptions, Generation};
use crate::error::{Error, Result};
use crate::gguf::Parts;
use crate::gpu::{self, Gpu, GpuOptions};
use crate::sampler::SamplerParams;
use crate::source::Source;
use crate::tokenizer::Tokenizer;

mod openai_fetch;
mod source;

pub use source::ModelCache;
use source::{cache_info, open_files, read_all, UrlOptions};

#[wasm_bindgen(start, skip_typescript)]
fn start() {
    console_error_panic_hook::set_once();
}

#[wasm_bindgen(inline_js = r#"
export function now_ms() { return performance.now(); }
export function has_webgpu() {
  return typeof navigator !== 'undefined' && !!navigator.gpu;
}
// A macrotask boundary without setTimeout's 4 ms clamp, so input events,
// worker messages and AbortSignal handlers run between tokens. (Not
// scheduler.yield(): its continuation jumps the queue, so a worker's pending
// "stop" message would wait behind the whole generation.)
export function yield_now() {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => { ch.port1.close(); resolve(); };
    ch.port2.postMessage(null);
  });
}
export function async_iterable(obj) {
  obj[Symbol.asyncIterator] = function () { return this; };
  return obj;
}
export function iter_result(value, done) { return { value, done }; }
export function instance_of(v, name) {
  const c = globalThis[name];
  return typeof c === 'function' && v instanceof c;
}

"#)]
extern "C" {
    fn now_ms() -> f64;
    fn has_webgpu() -> bool;
    fn yield_now() -> Promise;
    fn async_iterable(obj: JsValue) -> JsValue;
    fn iter_result(value: JsValue, done: bool) -> JsValue;
    fn instance_of(v: &JsValue, class: &str) -> bool;
}

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** Options for `WasmModel.new`. */
export interface LoadOptions {
  /** 'auto' (default) uses WebGPU when a hardware adapter and device can be had, else the CPU. */
  backend?: 'auto' | 'webgpu' | 'cpu';
  /** KV-cache length in tokens; default min(the model's, 2048). */
  contextLength?: number;
  /** Let 'auto' use a software WebGPU adapter (SwiftShader, WARP); default false. */
  allowSoftwareAdapter?: boolean;
  /**
   * Cap the bytes one GPU binding may hold below the device's limit (weights are split
   * across bindings up to it), e.g. 128 MiB to act like many phones; a row larger than
   * the cap makes the GPU load fail ('auto' then falls back to the CPU).
   */
  maxBindingBytes?: number;
  /**
   * Called as loading proceeds: fraction in [0, 1]; the stage says where the bytes come
   * from: 'download' (a URL; on WebGPU the weights go to the GPU as they arrive), 'cache'
   * (a URL whose bytes are all cached), 'read' (a Blob or stream, for the CPU), 'copy'
   * (bytes in memory, for the CPU), 'upload' (a Blob or bytes streamed to the GPU), then
   * 'parse' (CPU) and 'ready'; detail the bytes so far and in all.
   */
  onProgress?: (fraction: number, stage: string, detail: { loaded: number; total: number }) => void;
  /** Aborts the load: the promise rejects with an `AbortError` and nothing is left allocated. */
  signal?: AbortSignal;
  /** Parallel HTTP range requests for a URL (1 to 32, default 4). */
  connections?: number;
  /**
   * Keep a URL's bytes in this origin's storage (default true): the Origin Private File
   * System, or the Cache API where OPFS cannot write; 'opfs' or 'cache-api' picks one.
   * Entries are keyed by URL plus the server's ETag or Last-Modified and the length, stored
   * in SHA-256-checked chunks, re-checked when read back, and resumed after an interrupted
   * download. A server that sends no validator is not cached (`info.cache.reason` says so).
   */
  cache?: boolean | 'opfs' | 'cache-api';
  /**
   * The most bytes all cached models may take; a model that would pass it loads without
   * being cached, and `info.cache.error` is a `QuotaExceeded` error (as when the browser's
   * own quota runs out).
   */
  maxCacheBytes?: number;
  /**
   * The file's SHA-256 (64 hex digits): the whole file is checked before it is parsed, and a
   * mismatch rejects with code `ChecksumMismatch` and drops the cache entry. A cached file
   * already checked against it is not hashed whole again.
   */
  sha256?: string;
}

/** What the cache did for a load (`model.info.cache`); null for a source that is not a URL. */
export interface CacheInfo {
  /**
   * 'hit' (nothing fetched), 'partial' (a resumed download: some chunks were cached),
   * 'miss' (nothing was cached), or 'off' (not cached: `reason` or `error` says why).
   */
  status: 'hit' | 'partial' | 'miss' | 'off';
  store: 'opfs' | 'cache-api' | null;
  /** Bytes read from the cache (a chunk read twice in one load counts twice) and fetched. */
  fromCache: number;
  fromNetwork: number;
  /** Cached chunks that failed their check (corrupted, truncated) and were fetched again. */
  refetched: number;
  /** Why the cache was off, e.g. a server without ETag or Last-Modified. */
  reason: string | null;
  /** An `Error` with `code` 'QuotaExceeded' or 'CacheError': the model loaded uncached. */
  error: (Error & { code: string }) | null;
}

/** One cached model (`WasmModel.cache.list()`). */
export interface CacheEntry {
  url: string;
  /** Bytes stored; below `length` for an interrupted download that the next load resumes. */
  bytes: number;
  length: number;
  complete: boolean;
  validator: string;
  /** The SHA-256 the whole file was checked against, if a load gave one. */
  sha256: string | null;
  created: number;
  store: 'opfs' | 'cache-api';
}

/**
 * Where a model comes from: its bytes, a Blob or File, a stream of its bytes, or a URL
 * (read with HTTP Range requests where the server allows them, else as one stream).
 */
export type ModelSource = Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | string | URL;

/** Options for `generate`, `stream` and `chat`. */
export interface GenerateOptions {
  /** Most tokens to generate (default 256). */
  maxTokens?: number;
  /** 0 = greedy (default 0.8). */
  temperature?: number;
  /** 0 disables (default 40). */
  topK?: number;
  /** 1 disables (default 0.95). */
  topP?: number;
  /** 0 disables (default 0.05). */
  minP?: number;
  /** 1 disables (default 1). */
  repeatPenalty?: number;
  /** Seed for sampling; default a random one. */
  seed?: number;
  /** Generation ends before the first of these strings; it is not part of the text. */
  stop?: string | string[];
  /** Called with each piece of text as it is produced, and the token id. */
  onToken?: (piece: string, id: number) => void;
  /** Aborting rejects the promise with an `AbortError`; the model stays usable. */
  signal?: AbortSignal;
}

export interface GenerateStats {
  promptTokens: number;
  /** Prompt tokens whose keys and values were already in the KV cache (not run again). */
  cachedTokens: number;
  generatedTokens: number;
  prefillTokS: number;
  decodeTokS: number;
  /** 'eog' (end-of-generation token), 'length' (maxTokens), 'context' (context full) or 'stop' (a stop string). */
  stopReason: 'eog' | 'length' | 'context' | 'stop';
}

export interface GenerateResult {
  text: string;
  /** The generated token ids, including the end-of-generation token that ended it, if any. */
  tokens: number[];
  stats: GenerateStats;
}

export interface ChatMessage {
  role: string;
  content: string;
}

export interface AdapterInfo {
  name: string;
  /** A software rasterizer (SwiftShader, WARP, lavapipe). */
  software: boolean;
  features: string[];
  limits: {
    maxStorageBufferBindingSize: number;
    maxBufferSize: number;
    maxComputeWorkgroupStorageSize: number;
    maxComputeInvocationsPerWorkgroup: number;
    maxComputeWorkgroupsPerDimension: number;
  };
}

/** Options for `WasmModel.probe`. */
export interface ProbeOptions {
  /** Count a software adapter as WebGPU for 'auto' (as `LoadOptions` does). */
  allowSoftwareAdapter?: boolean;
  /** The context the plan assumes (as `LoadOptions.contextLength`). */
  contextLength?: number;
  /** As `LoadOptions.maxBindingBytes`. */
  maxBindingBytes?: number;
  signal?: AbortSignal;
}

/** GPU bytes by kind. */
export interface GpuMemory {
  weights: number;
  kvCache: number;
  scratch: number;
  total: number;
  /** The largest single buffer (binding). */
  largestBinding: number;
  buffers: number;
}

/** The CPU engine's bytes in wasm memory: the file, its KV cache, its scratch. */
export interface CpuMemory {
  file: number;
  kvCache: number;
  scratch: number;
  total: number;
}

/** A model's memory from its header alone, before anything else is downloaded. */
export interface MemoryPlan {
  context: number;
  /** Null where the GPU backend cannot run the model at all (`gpuError`). */
  gpu: GpuMemory | null;
  /** Why it would not fit this adapter, naming the limit and the sizes. */
  gpuError: string | null;
  gpuFits: boolean;
  cpu: CpuMemory;
  cpuError: string | null;
  cpuFits: boolean;
}

/** What a loaded model holds (`model.info.memory`). */
export interface ModelMemory {
  backend: 'gpu' | 'cpu';
  gpu: GpuMemory | null;
  cpu: CpuMemory | null;
  /** All of this module's wasm memory (it grows and never shrinks). */
  wasmBytes: number;
}

/**
 * What `WasmModel.probe()` finds, without downloading anything; `probe(source)` also reads
 * the model's header (a range request or two) and plans its memory against the adapter.
 */
export interface Probe {
  /** `navigator.gpu` exists. */
  webgpu: boolean;
  /** The adapter a load would use, if one could be opened. */
  adapter: AdapterInfo | null;
  f16: boolean;
  subgroups: boolean;
  /** What `backend: 'auto'` would take. */
  backend: 'webgpu' | 'cpu';
  /** Why 'auto' would take the CPU. */
  fallbackReason: string | null;
  /** With a source: whether it fits, before it is downloaded. */
  model: MemoryPlan | null;
}

export interface ModelInfo {
  architecture: string;
  name: string | null;
  /** Parameter count. */
  parameters: number;
  /** The main weight format, e.g. 'Q4_1'. */
  quantization: string;
  /** Tensor count per format, e.g. 'F32×61 Q4_1×210 Q8_0×1'. */
  tensorTypes: string;
  contextLength: number;
  trainContextLength: number;
  vocabSize: number;
  layers: number;
  embeddingLength: number;
  heads: number;
  kvHeads: number;
  weightBytesPerToken: number;
  /** Whether the file carries its own chat template. */
  hasChatTemplate: boolean;
  /** The template chats use: the file's own, or the fallback chosen for a
   * file without one (Gemma's turns for Gemma, else ChatML). */
  chatTemplate: 'file' | 'fallback: gemma' | 'fallback: chatml';
  backend: 'webgpu' | 'cpu';
  fallbackReason: string | null;
  adapter: AdapterInfo | null;
  /** What the cache did for this load (one per file of a split model); null unless from a URL. */
  cache: CacheInfo | CacheInfo[] | null;
  memory: ModelMemory;
}
"#;

/// A JS `Error` carrying the engine error's message, with `code` set to the
/// kind (`ContextOverflow`, `DeviceLost`, ...) and `name` to `AbortError` /
/// `DeviceLostError` where the web has that convention.
fn js_error(e: &Error) -> JsValue {
    let err = js_sys::Error::new(&e.to_string());
    err.set_name(match e {
        Error::Aborted => "AbortError",
        Error::DeviceLost(_) => "DeviceLostError",
        _ => "WebggufError",
    });
    let _ = Reflect::set(&err, &"code".into(), &e.code().into());
    err.into()
}

fn serialize<T: Serialize>(v: &T) -> JsValue {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .unwrap_or(JsValue::NULL)
}

pub(crate) async fn yield_to_event_loop() {
    let _ = JsFuture::from(yield_now()).await;
}

/// Typed reads from a JS options object, with errors naming the option.
struct Opts {
    obj: JsValue,
    what: &'static str,
}

impl Opts {
    fn new(v: &JsValue, what: &'static str) -> Result<Opts> {
        if v.is_undefined() || v.is_null() {
            return Ok(Opts {
                obj: Object::new().into(),
                what,
            });
        }
        if !v.is_object() {
            return Err(Error::InvalidArgument(format!("{what} must be an object")));
        }
        Ok(Opts {
            obj: v.clone(),
            what,
        })
    }

    fn get(&self, key: &str) -> Option<JsValue> {
        Reflect::get(&self.obj, &key.into())
            .ok()
            .filter(|v| !v.is_undefined() && !v.is_null())
    }

    fn bad(&self, key: &str, want: &str) -> Error {
        Error::InvalidArgument(format!("{}.{key} must be {want}", self.what))
    }

    fn num(&self, key: &str) -> Result<Option<f64>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() => Ok(Some(x)),
                _ => Err(self.bad(key, "a finite number")),
            },
        }
    }

    fn count(&self, key: &str) -> Result<Option<usize>> {
        match self.num(key)? {
            Some(x) if x < 0.0 || x.fract() != 0.0 || x > u32::MAX as f64 => {
                Err(self.bad(key, "a non-negative integer"))
            }
            x => Ok(x.map(|x| x as usize)),
        }
    }

    fn string(&self, key: &str) -> Result<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_string()
                .map(Some)
                .ok_or_else(|| self.bad(key, "a string")),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>> {
        let Some(v) = self.get(key) else {
            return Ok(Vec::new());
        };
        if let Some(s) = v.as_string() {
            return Ok(vec![s]);
        }
        if !Array::is_array(&v) {
            return Err(self.bad(key, "a string or an array of strings"));
        }
        Array::from(&v)
            .iter()
            .map(|s| {
                s.as_string()
                    .ok_or_else(|| self.bad(key, "a string or an array of strings"))
            })
            .collect()
    }

    fn flag(&self, key: &str) -> Result<bool> {
        match self.get(key) {
            None => Ok(false),
            Some(v) => v.as_bool().ok_or_else(|| self.bad(key, "a boolean")),
        }
    }

    fn function(&self, key: &str) -> Result<Option<Function>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .dyn_into::<Function>()
                .map(Some)
                .map_err(|_| self.bad(key, "a function")),
        }
    }

    fn signal(&self, key: &str) -> Result<Option<web_sys::AbortSignal>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .dyn_into::<web_sys::AbortSignal>()
                .map(Some)
                .map_err(|_| self.bad(key, "an AbortSignal")),
        }
    }
}

/// One generation's settings, read from `GenerateOptions`.
struct GenSettings {
    max_tokens: usize,
    params: SamplerParams,
    stop: Vec<String>,
    on_token: Option<Function>,
    signal: Option<web_sys::AbortSignal>,
}

impl GenSettings {
    fn parse(v: &JsValue) -> Result<GenSettings> {
        let o = Opts::new(v, "options")?;
        let f = |key: &str, default: f32| -> Result<f32> {
            Ok(o.num(key)?.map_or(default, |x| x as f32))
        };
        let seed = match o.num("seed")? {
            Some(s) if s >= 0.0 && s.fract() == 0.0 => s as u64,
            Some(_) => return Err(o.bad("seed", "a non-negative integer")),
            None => (js_sys::Math::random() * 2f64.powi(53)) as u64,
        };
        let params = SamplerParams {
            temperature: f("temperature", 0.8)?,
            top_k: o.count("topK")?.unwrap_or(40),
            top_p: f("topP", 0.95)?,
            min_p: f("minP", 0.05)?,
            repeat_penalty: f("repeatPenalty", 1.0)?,
            seed,
            ..SamplerParams::default()
        };
        params.validate()?;
        Ok(GenSettings {
            max_tokens: o.count("maxTokens")?.unwrap_or(256),
            params,
            stop: o.strings("stop")?,
            on_token: o.function("onToken")?,
            signal: o.signal("signal")?,
        })
    }
}

/// State shared by a `WasmModel`, its pending promises and its streams.
struct Shared {
    /// `None` once freed.
    engine: RefCell<Option<Engine>>,
    tokenizer: Rc<Tokenizer>,
    template: Result<ChatTemplate>,
    gpu: Option<Gpu>,
    backend: &'static str,
    fallback_reason: Option<String>,
    info: JsValue,
    busy: Cell<bool>,
    freed: Cell<bool>,
}

/// Marks the model busy for as long as it lives.
struct BusyGuard(Rc<Shared>);

impl BusyGuard {
    fn enter(s: &Rc<Shared>) -> Result<BusyGuard> {
        if s.freed.get() {
            return Err(Error::InvalidArgument("the model was freed".into()));
        }
        if s.busy.get() {
            return Err(Error::Busy);
        }
        s.busy.set(true);
        Ok(BusyGuard(s.clone()))
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.busy.set(false);
        if self.0.freed.get() {
            // `free()` came while this generation ran: release now.
            if let Ok(mut e) = self.0.engine.try_borrow_mut() {
                e.take();
            }
        }
    }
}

/// A generation in progress, driven token by token by `generate` and by a
/// stream's `next()`.
struct Run {
    guard: BusyGuard,
    settings: GenSettings,
    /// Text handed out so far.
    emitted: String,
    last_id: u32,
    result: Option<Generation>,
    last_yield: f64,
}

impl Run {
    fn start(shared: &Rc<Shared>, prompt: &str, settings: GenSettings) -> Result<Run> {
        let guard = BusyGuard::enter(shared)?;
        if let Some(gpu) = &shared.gpu {
            gpu.check()?;
        }
        {
            let mut slot = shared.engine.try_borrow_mut().map_err(|_| Error::Busy)?;
            let engine = slot
                .as_mut()
                .ok_or_else(|| Error::InvalidArgument("the model was freed".into()))?;
            let ids = engine.prompt_ids(prompt);
            engine.begin(&ids, settings.max_tokens, settings.params)?;
            engine.stop_at(&settings.stop)?;
        }
        Ok(Run {
            guard,
            settings,
            emitted: String::new(),
            last_id: 0,
            result: None,
            last_yield: now_ms(),
        })
    }

    fn shared(&self) -> &Rc<Shared> {
        &self.guard.0
    }

    fn check_abort(&self) -> Result<()> {
        if self.shared().freed.get() {
            return Err(Error::InvalidArgument(
                "the model was freed during generation".into(),
            ));
        }
        match &self.settings.signal {
            Some(s) if s.aborted() => Err(Error::Aborted),
            _ => Ok(()),
        }
    }

    /// The next piece of text and its token id; `None` when the run is over.
    /// On an error the run is over too and the model is left ready for the
    /// next call (its KV cache emptied unless the error was an abort).
    async fn step(&mut self) -> Result<Option<(String, u32)>> {
        if self.result.is_some() {
            return Ok(None);
        }
        match self.advance().await {
            Ok(v) => Ok(v),
            Err(e) => {
                let e = self.explain(e).await;
                self.end(e != Error::Aborted);
                self.result = Some(empty_generation());
                Err(e)
            }
        }
    }

    // The engine stays borrowed across the token's await. That is sound
    // here: the run holds the busy flag, and every other path to the engine
    // (reset, free, a second generation) checks that flag or uses
    // try_borrow, so none can reach the RefCell meanwhile.
    #[allow(clippy::await_holding_refcell_ref)]
    async fn advance(&mut self) -> Result<Option<(String, u32)>> {
        self.check_abort()?;
        let shared = self.shared().clone();
        // A long prompt runs in chunks, with a chance to abort between them.
        loop {
            let more = {
                let mut slot = shared.engine.try_borrow_mut().map_err(|_| Error::Busy)?;
                slot.as_mut().map_or(Ok(false), |e| e.prefill_chunk())?
            };
            if !more {
                break;
            }
            yield_to_event_loop().await;
            self.last_yield = now_ms();
            self.check_abort()?;
        }
        let next = {
            let mut slot = shared.engine.try_borrow_mut().map_err(|_| Error::Busy)?;
            let engine = slot
                .as_mut()
                .ok_or_else(|| Error::InvalidArgument("the model was freed".into()))?;
            match engine.next_token().await? {
                Some(t) => Some(t),
                None => {
                    let g = engine.finish()?;
                    let tail = g.text.get(self.emitted.len()..).unwrap_or("").to_string();
                    self.result = Some(g);
                    if tail.is_empty() {
                        return Ok(None);
                    }
                    // Text held back at the end (a partial stop string or
                    // UTF-8 sequence) still belongs to the output.
                    self.emitted.push_str(&tail);
                    return Ok(Some((tail, self.last_id)));
                }
            }
        };
        let (id, piece) = next.expect("handled above");
        self.last_id = id;
        self.emitted.push_str(&piece);
        // The CPU backend never waits on anything: give the event loop a
        // turn now and then so the page and the abort signal stay live.
        if now_ms() - self.last_yield > 8.0 {
            yield_to_event_loop().await;
            self.last_yield = now_ms();
        }
        Ok(Some((piece, id)))
    }

    /// End the engine's side of the run early (an error, an onToken that
    /// threw, `break` out of a stream); `reset` also empties the KV cache.
    fn end(&self, reset: bool) {
        if let Ok(mut slot) = self.shared().engine.try_borrow_mut() {
            if let Some(engine) = slot.as_mut() {
                let _ = engine.finish();
                if reset {
                    engine.reset();
                }
            }
        }
    }

    /// A GPU failure right after the device was lost is reported as the
    /// loss (the lost callback may arrive a moment after the failed read).
    async fn explain(&self, e: Error) -> Error {
        let Some(gpu) = &self.shared().gpu else {
            return e;
        };
        if matches!(e, Error::Gpu(_)) {
            yield_to_event_loop().await;
        }
        match gpu.check() {
            Err(lost @ Error::DeviceLost(_)) => lost,
            _ => e,
        }
    }

    fn call_on_token(&self, piece: &str, id: u32) -> Result<()> {
        if let Some(f) = &self.settings.on_token {
            f.call2(&JsValue::NULL, &piece.into(), &id.into())
                .map_err(|e| {
                    Error::InvalidArgument(format!(
                        "onToken threw: {}",
                        e.as_string()
                            .or_else(|| e.dyn_ref::<js_sys::Error>().map(|e| e.to_string().into()))
                            .unwrap_or_else(|| "an exception".into())
                    ))
                })?;
        }
        Ok(())
    }

    fn result_js(&self) -> JsValue {
        let g = self.result.as_ref().expect("run finished");
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Stats {
            prompt_tokens: usize,
            cached_tokens: usize,
            generated_tokens: usize,
            prefill_tok_s: f64,
            decode_tok_s: f64,
            stop_reason: &'static str,
        }
        #[derive(Serialize)]
        struct Out<'a> {
            text: &'a str,
            tokens: &'a [u32],
            stats: Stats,
        }
        serialize(&Out {
            text: &self.emitted,
            tokens: &g.generated_ids,
            stats: Stats {
                prompt_tokens: g.prompt_ids.len(),
                cached_tokens: g.prompt_ids.len() - g.prefilled,
                generated_tokens: g.generated_ids.len(),
                prefill_tok_s: g.prefill_tok_s(),
                decode_tok_s: g.decode_tok_s(),
                stop_reason: g.stop.as_str(),
            },
        })
    }
}

fn empty_generation() -> Generation {
    Generation {
        prompt_ids: Vec::new(),
        generated_ids: Vec::new(),
        text: String::new(),
        prefilled: 0,
        prefill_ms: 0.0,
        decode_ms: 0.0,
        stop: crate::engine::StopReason::Stopped,
    }
}

/// Start a generation now (so a second call made before this one's promise
/// settles is refused) and drive it to the end in a promise.
fn generate(shared: &Rc<Shared>, prompt: &str, opts: &JsValue) -> Promise {
    match GenSettings::parse(opts).and_then(|s| Run::start(shared, prompt, s)) {
        Ok(run) => promise(drive(run)),
        Err(e) => Promise::reject(&js_error(&e)),
    }
}

async fn drive(mut run: Run) -> Result<JsValue> {
    while let Some((piece, id)) = run.step().await? {
        if let Err(e) = run.call_on_token(&piece, id) {
            // The callback's failure ends the run like any other error.
            run.end(false);
            return Err(e);
        }
    }
    Ok(run.result_js())
}

fn promise<F>(f: F) -> Promise
where
    F: std::future::Future<Output = Result<JsValue>> + 'static,
{
    future_to_promise(async move { f.await.map_err(|e| js_error(&e)) })
}

/// A GGUF model loaded for generation. Create it with `await WasmModel.new(bytes)`.
#[wasm_bindgen]
pub struct WasmModel {
    shared: Rc<Shared>,
}

#[wasm_bindgen]
impl WasmModel {
    /// Load a GGUF file from bytes, a Blob/File, a stream or a URL. On
    /// WebGPU the weights are streamed from the source into GPU buffers in
    /// bounded chunks (wasm memory does not grow with the model); on the
    /// CPU they are read once into wasm memory.
    #[wasm_bindgen(js_name = new)]
    pub async fn load(
        #[wasm_bindgen(unchecked_param_type = "ModelSource | ModelSource[]")] source: JsValue,
        #[wasm_bindgen(unchecked_param_type = "LoadOptions")] options: Option<JsValue>,
    ) -> std::result::Result<WasmModel, JsValue> {
        load(source, options.unwrap_or(JsValue::UNDEFINED))
            .await
            .map_err(|e| js_error(&e))
    }

    /// What this browser offers before any model is downloaded: whether
    /// WebGPU is there, the adapter (name, software or not, limits), f16
    /// and subgroups, and the backend `'auto'` would take (with the
    /// reason when it is the CPU). Options: `allowSoftwareAdapter`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Probe>")]
    pub fn probe(
        #[wasm_bindgen(unchecked_param_type = "ModelSource | ModelSource[] | ProbeOptions")]
        source_or_options: Option<JsValue>,
        #[wasm_bindgen(unchecked_param_type = "ProbeOptions")] options: Option<JsValue>,
    ) -> Promise {
        promise(probe(
            source_or_options.unwrap_or(JsValue::UNDEFINED),
            options.unwrap_or(JsValue::UNDEFINED),
        ))
    }

    /// This origin's model cache: `list()`, `delete(url)` and `clear()`.
    #[wasm_bindgen(getter)]
    pub fn cache() -> ModelCache {
        ModelCache {}
    }

    /// Generate a completion of `prompt` (tokenized as the CLI does: BOS by
    /// the model's rule, special tokens parsed).
    #[wasm_bindgen(unchecked_return_type = "Promise<GenerateResult>")]
    pub fn generate(
        &self,
        prompt: String,
        #[wasm_bindgen(unchecked_param_type = "GenerateOptions")] opts: Option<JsValue>,
    ) -> Promise {
        generate(&self.shared, &prompt, &opts.unwrap_or_default())
    }

    /// The same generation as `generate`, as an async iterator of text
    /// pieces (`for await (const piece of model.stream(prompt)) ...`). The
    /// pieces concatenate to `generate`'s text. Breaking out of the loop
    /// ends the generation.
    #[wasm_bindgen(unchecked_return_type = "AsyncIterableIterator<string>")]
    pub fn stream(
        &self,
        prompt: String,
        #[wasm_bindgen(unchecked_param_type = "GenerateOptions")] opts: Option<JsValue>,
    ) -> std::result::Result<JsValue, JsValue> {
        let run = GenSettings::parse(&opts.unwrap_or_default())
            .and_then(|s| Run::start(&self.shared, &prompt, s))
            .map_err(|e| js_error(&e))?;
        let stream = TokenStream {
            run: Rc::new(RefCell::new(Some(run))),
            stepping: Rc::new(Cell::new(false)),
        };
        Ok(async_iterable(stream.into()))
    }

    /// The prompt the chat template (the file's own, or the fallback for a file
    /// without one) makes of `messages`.
    #[wasm_bindgen(js_name = applyChatTemplate)]
    pub fn apply_chat_template(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatMessage[]")] messages: JsValue,
        #[wasm_bindgen(js_name = addGenerationPrompt)] add_generation_prompt: Option<bool>,
    ) -> std::result::Result<String, JsValue> {
        self.chat_prompt(&messages, add_generation_prompt.unwrap_or(true))
            .map_err(|e| js_error(&e))
    }

    /// Generate the assistant's reply to `messages` with the chat template.
    /// The KV cache is reused for the part of the prompt the model has seen.
    #[wasm_bindgen(unchecked_return_type = "Promise<GenerateResult>")]
    pub fn chat(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatMessage[]")] messages: JsValue,
        #[wasm_bindgen(unchecked_param_type = "GenerateOptions")] opts: Option<JsValue>,
    ) -> Promise {
        match self.chat_prompt(&messages, true) {
            Ok(prompt) => generate(&self.shared, &prompt, &opts.unwrap_or_default()),
            Err(e) => Promise::reject(&js_error(&e)),
        }
    }

    /// Token ids of `text`, as a prompt is tokenized.
    #[wasm_bindgen(unchecked_return_type = "number[]")]
    pub fn tokenize(&self, text: String) -> JsValue {
        let ids = self.shared.tokenizer.encode(&text, true, true);
        serialize(&ids)
    }

    /// The text of `ids` (special tokens included as text).
    pub fn detokenize(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number[] | Uint32Array")] ids: JsValue,
    ) -> std::result::Result<String, JsValue> {
        self.ids_from_js(&ids)
            .map(|ids| self.shared.tokenizer.detokenize(&ids, false, true))
            .map_err(|e| js_error(&e))
    }

    /// Forget the conversation (empty the KV cache).
    pub fn reset(&self) -> std::result::Result<(), JsValue> {
        let _guard = BusyGuard::enter(&self.shared).map_err(|e| js_error(&e))?;
        if let Some(e) = self.shared.engine.borrow_mut().as_mut() {
            e.reset();
        }
        Ok(())
    }

    /// `'webgpu'` or `'cpu'`.
    #[wasm_bindgen(getter, unchecked_return_type = "'webgpu' | 'cpu'")]
    pub fn backend(&self) -> String {
        self.shared.backend.to_string()
    }

    /// Why `backend: 'auto'` chose the CPU, if it did.
    #[wasm_bindgen(getter, js_name = fallbackReason)]
    pub fn fallback_reason(&self) -> Option<String> {
        self.shared.fallback_reason.clone()
    }

    #[wasm_bindgen(getter, unchecked_return_type = "ModelInfo")]
    pub fn info(&self) -> JsValue {
        self.shared.info.clone()
    }

    /// Destroy the GPU device as a driver reset would (`GPUDevice.destroy()`),
    /// to exercise device-loss handling. A no-op on the CPU backend.
    #[wasm_bindgen(js_name = destroyDevice)]
    pub fn destroy_device(&self) {
        if let Some(gpu) = &self.shared.gpu {
            gpu.device.destroy();
        }
    }
}

impl WasmModel {
    fn chat_prompt(&self, messages: &JsValue, add_generation_prompt: bool) -> Result<String> {
        let template = self.shared.template.as_ref().map_err(Clone::clone)?;
        template.apply(&messages_from_js(messages)?, add_generation_prompt)
    }

    fn ids_from_js(&self, v: &JsValue) -> Result<Vec<u32>> {
        let vocab = self.shared.tokenizer.vocab_size();
        let ids: Vec<u32> = if let Some(a) = v.dyn_ref::<Uint32Array>() {
            a.to_vec()
        } else if Array::is_array(v) {
            Array::from(v)
                .iter()
                .map(|x| match x.as_f64() {
                    Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u32::MAX as f64 => Ok(f as u32),
                    _ => Err(Error::InvalidArgument(
                        "token ids must be non-negative integers".into(),
                    )),
                })
                .collect::<Result<_>>()?
        } else {
            return Err(Error::InvalidArgument(
                "ids must be an array of numbers or a Uint32Array".into(),
            ));
        };
        match ids.iter().find(|&&id| id as usize >= vocab) {
            Some(&id) => Err(Error::BadToken { id, vocab }),
            None => Ok(ids),
        }
    }
}

impl Drop for WasmModel {
    fn drop(&mut self) {
        let s = &self.shared;
        s.freed.set(true);
        if !s.busy.get() {
            if let Ok(mut e) = s.engine.try_borrow_mut() {
                e.take();
            }
        }
    }
}

fn messages_from_js(v: &JsValue) -> Result<Vec<Message>> {
    if !Array::is_array(v) {
        return Err(Error::InvalidArgument(
            "messages must be an array of { role, content }".into(),
        ));
    }
    Array::from(v)
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let field = |k: &str| {
                Reflect::get(&m, &k.into())
                    .ok()
                    .and_then(|x| x.as_string())
                    .ok_or_else(|| {
                        Error::InvalidArgument(format!("messages[{i}].{k} must be a string"))
                    })
            };
            Ok(Message {
                role: field("role")?,
                content: field("content")?,
            })
        })
        .collect()
}

/// The async iterator `stream()` returns.
#[wasm_bindgen]
pub struct TokenStream {
    /// `None` once finished; dropping the run releases the model.
    run: Rc<RefCell<Option<Run>>>,
    stepping: Rc<Cell<bool>>,
}

#[wasm_bindgen]
impl TokenStream {
    /// The next piece of text (`{ value, done }`).
    #[wasm_bindgen(unchecked_return_type = "Promise<IteratorResult<string, undefined>>")]
    pub fn next(&self) -> Promise {
        if self.stepping.replace(true) {
            return Promise::reject(&js_error(&Error::InvalidArgument(
                "stream.next() was called again before the previous call settled".into(),
            )));
        }
        let (run, stepping) = (self.run.clone(), self.stepping.clone());
        future_to_promise(async move {
            // Taken out for the await, so no RefCell borrow spans it.
            let taken = run.borrow_mut().take();
            let out = match taken {
                None => Ok(iter_result(JsValue::UNDEFINED, true)),
                Some(mut r) => match r.step().await {
                    Ok(Some((piece, id))) => match r.call_on_token(&piece, id) {
                        Ok(()) => {
                            *run.borrow_mut() = Some(r);
                            Ok(iter_result(piece.into(), false))
                        }
                        Err(e) => {
                            r.end(false);
                            Err(js_error(&e))
                        }
                    },
                    Ok(None) => Ok(iter_result(JsValue::UNDEFINED, true)),
                    Err(e) => Err(js_error(&e)),
                },
            };
            stepping.set(false);
            out
        })
    }

    /// End the generation early (what `break` in `for await` calls).
    #[wasm_bindgen(
        js_name = "return",
        unchecked_return_type = "Promise<IteratorResult<string, undefined>>"
    )]
    pub fn finish(&self) -> Promise {
        if let Ok(mut slot) = self.run.try_borrow_mut() {
            if let Some(r) = slot.take() {
                r.end(false);
            }
        }
        Promise::resolve(&iter_result(JsValue::UNDEFINED, true))
    }
}

async fn load(input: JsValue, options: JsValue) -> Result<WasmModel> {
    let o = Opts::new(&options, "options")?;
    let choice = o.string("backend")?.unwrap_or_else(|| "auto".into());
    if !matches!(choice.as_str(), "auto" | "webgpu" | "cpu") {
        return Err(o.bad("backend", "'auto', 'webgpu' or 'cpu'"));
    }
    let on_progress = o.function("onProgress")?;
    let progress = |fraction: f64, stage: &str, loaded: u64, total: u64| {
        if let Some(f) = &on_progress {
            let detail = obj(&[
                ("loaded", (loaded as f64).into()),
                ("total", (total as f64).into()),
            ]);
            let _ = f.call3(&JsValue::NULL, &fraction.into(), &stage.into(), &detail);
        }
    };
    let signal = o.signal("signal")?;
    let connections = match o.count("connections")? {
        Some(n) if !(1..=32).contains(&n) => return Err(o.bad("connections", "1 to 32")),
        n => n.unwrap_or(4),
    };
    let (opts, gpu_opts) = load_options(&o)?;
    let gpu_opts = GpuOptions {
        read_ahead: connections,
        ..gpu_opts
    };
    let skip_software = choice == "auto" && !o.flag("allowSoftwareAdapter")?;
    let sha256 = match o.string("sha256")? {
        Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Some(h.to_ascii_lowercase())
        }
        Some(_) => return Err(o.bad("sha256", "64 hex digits")),
        None => None,
    };
    let cache = match o.get("cache") {
        None => JsValue::TRUE,
        Some(v) if v.as_bool().is_some() => v,
        Some(v) if matches!(v.as_string().as_deref(), Some("opfs" | "cache-api")) => v,
        Some(_) => return Err(o.bad("cache", "true, false, 'opfs' or 'cache-api'")),
    };
    let url_opts = UrlOptions {
        signal: signal.clone().map(Into::into).unwrap_or(JsValue::UNDEFINED),
        cache,
        max_cache_bytes: o.num("maxCacheBytes")?,
    };
    let files = open_files(&input, &url_opts).await?;
    let total = files.len();
    // Where the bytes come from names the stage: the network, the cache
    // (all of it there already), or memory / a Blob.
    let parts = files.parts();
    let url = parts.iter().all(|p| p.kind.starts_with("url"));
    let cached: u64 = parts.iter().map(|p| p.cached_bytes()).sum();
    let reading = match () {
        _ if url && cached == total => "cache",
        _ if url => "download",
        _ if parts.iter().all(|p| p.kind == "bytes") => "copy",
        _ => "read",
    };
    if let Some(want) = &sha256 {
        let [one] = parts else {
            return Err(o.bad("sha256", "one file's hash (not for a split model's files)"));
        };
        // Checked whole before anything parses it; from the network this
        // reads the file twice unless the cache keeps it.
        one.verify_sha256(want, connections, &|done| {
            progress(0.3 * ratio(done, total), reading, done, total)
        })
        .await?;
    }

    let mut fallback_reason = None;
    if choice != "cpu" {
        match open_gpu(skip_software).await {
            Ok(gpu) => {
                // Streamed: each matrix goes from the source to its GPU
                // buffer in bounded chunks; wasm memory never holds the model.
                // A URL's bytes are uploaded as they arrive, so its stage is
                // the download (or the cache).
                let stage = if url { reading } else { "upload" };
                progress(0.0, stage, 0, total);
                let uploaded =
                    |done: u64, all: u64| progress(0.95 * ratio(done, all), stage, done, all);
                match gpu::load_engine_from(gpu.clone(), &files, opts, gpu_opts, now_ms, &uploaded)
                    .await
                {
                    Ok(engine) => {
                        progress(1.0, "ready", total, total);
                        return Ok(finish_load(engine, Some(gpu), None, cache_info(&files)));
                    }
                    Err(e @ (Error::Gpu(_) | Error::DeviceLimit(_) | Error::DeviceLost(_)))
                        if choice == "auto" =>
                    {
                        fallback_reason = Some(format!("WebGPU could not load the model: {e}"));
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(reason) if choice == "auto" => fallback_reason = Some(reason),
            Err(reason) => return Err(Error::Gpu(reason)),
        }
    }
    // The CPU engine computes from wasm memory: the file is read there once,
    // chunk by chunk, after checking that it fits (before any download).
    let bytes = read_all(&files, connections, &|done| {
        progress(0.8 * ratio(done, total), reading, done, total)
    })
    .await?;
    progress(0.8, "parse", total, total);
    yield_to_event_loop().await;
    let split = Parts {
        starts: files.part_starts(),
        names: files.part_names(),
    };
    let engine = Engine::load_cpu_parts(bytes, &split, opts, Box::new(Serial), now_ms)?;
    progress(1.0, "ready", total, total);
    Ok(finish_load(
        engine,
        None,
        fallback_reason,
        cache_info(&files),
    ))
}

/// A plain JS object of `fields`.
pub(crate) fn obj(fields: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in fields {
        let _ = Reflect::set(&o, &(*k).into(), v);
    }
    o.into()
}

fn ratio(done: u64, all: u64) -> f64 {
    done as f64 / all.max(1) as f64
}

const NO_WEBGPU: &str = "navigator.gpu is missing: this browser or context has no WebGPU";
const SOFTWARE: &str = "the only WebGPU adapter is a software fallback (e.g. SwiftShader); the CPU engine is faster on the same cores";

/// A WebGPU device, or why there is none (as a fallback reason).
async fn open_gpu(skip_software: bool) -> std::result::Result<Gpu, String> {
    if !has_webgpu() {
        return Err(NO_WEBGPU.into());
    }
    let gpu = Gpu::new().await.map_err(|e| e.to_string())?;
    if skip_software && gpu.is_software() {
        return Err(SOFTWARE.into());
    }
    Ok(gpu)
}

fn finish_load(
    engine: Engine,
    gpu: Option<Gpu>,
    fallback_reason: Option<String>,
    cache: JsValue,
) -> WasmModel {
    let tok = engine.tokenizer.clone();
    let text = |id: Option<u32>| id.and_then(|i| tok.token_text(i)).unwrap_or("").to_string();
    // The file's own template, or the fallback for its architecture/vocabulary.
    let template = ChatTemplate::new(
        engine.info.chat_template_source(),
        &text(tok.bos()),
        &text(tok.eos()),
    );
    let backend = if gpu.is_some() { "webgpu" } else { "cpu" };
    let info = model_info(&engine, gpu.as_ref(), backend, fallback_reason.as_deref());
    // What the cache did for this load; the JS object keeps its Error.
    let _ = Reflect::set(&info, &"cache".into(), &cache);
    WasmModel {
        shared: Rc::new(Shared {
            tokenizer: engine.tokenizer.clone(),
            engine: RefCell::new(Some(engine)),
            template,
            gpu,
            backend,
            fallback_reason,
            info,
            busy: Cell::new(false),
            freed: Cell::new(false),
        }),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Limits {
    max_storage_buffer_binding_size: u64,
    max_buffer_size: u64,
    max_compute_workgroup_storage_size: u32,
    max_compute_invocations_per_workgroup: u32,
    max_compute_workgroups_per_dimension: u32,
}

#[derive(Serialize)]
struct Adapter {
    name: String,
    software: bool,
    features: Vec<String>,
    limits: Limits,
}

impl Adapter {
    fn of(g: &Gpu) -> Adapter {
        Adapter {
            name: g.adapter.name.clone(),
            software: g.is_software(),
            features: g
                .features
                .iter_names()
                .map(|(n, _)| n.to_string())
                .collect(),
            limits: Limits {
                max_storage_buffer_binding_size: g.limits.max_storage_buffer_binding_size,
                max_buffer_size: g.limits.max_buffer_size,
                max_compute_workgroup_storage_size: g.limits.max_compute_workgroup_storage_size,
                max_compute_invocations_per_workgroup: g
                    .limits
                    .max_compute_invocations_per_workgroup,
                max_compute_workgroups_per_dimension: g.limits.max_compute_workgroups_per_dimension,
            },
        }
    }
}

/// What `WasmModel.probe` finds, before any model is downloaded; with a
/// model source, its header alone is read and planned against the adapter.
async fn probe(first: JsValue, second: JsValue) -> Result<JsValue> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Probe {
        webgpu: bool,
        adapter: Option<Adapter>,
        f16: bool,
        subgroups: bool,
        backend: &'static str,
        fallback_reason: Option<String>,
        model: Option<gpu::MemoryPlan>,
    }
    // probe(options) or probe(source, options).
    let (source, options) = if is_source(&first) {
        (Some(first), second)
    } else {
        (None, first)
    };
    let o = Opts::new(&options, "options")?;
    let skip_software = !o.flag("allowSoftwareAdapter")?;
    let mut p = Probe {
        webgpu: has_webgpu(),
        adapter: None,
        f16: false,
        subgroups: false,
        backend: "cpu",
        fallback_reason: None,
        model: None,
    };
    let mut limits = crate::memory::GpuLimits::WEBGPU_DEFAULT;
    if !p.webgpu {
        p.fallback_reason = Some(NO_WEBGPU.into());
    } else {
        match Gpu::new().await {
            Ok(g) => {
                p.f16 = g.features.contains(wgpu::Features::SHADER_F16);
                p.subgroups = g.features.contains(wgpu::Features::SUBGROUP);
                p.adapter = Some(Adapter::of(&g));
                limits = g.plan_limits();
                if skip_software && g.is_software() {
                    p.fallback_reason = Some(SOFTWARE.into());
                } else {
                    p.backend = "webgpu";
                }
                // The probe's own device is not kept.
                g.device.destroy();
            }
            Err(e) => p.fallback_reason = Some(e.to_string()),
        }
    }
    if let Some(source) = source {
        // The header only, uncached: nothing of the weights is fetched.
        let url_opts = UrlOptions {
            signal: o
                .signal("signal")?
                .map(Into::into)
                .unwrap_or(JsValue::UNDEFINED),
            cache: JsValue::FALSE,
            max_cache_bytes: None,
        };
        let files = open_files(&source, &url_opts).await?;
        let (engine, gpu) = load_options(&o)?;
        let plan = gpu::PlanOptions {
            engine,
            gpu,
            limits,
            cpu_limit: crate::memory::WASM_LIMIT,
        };
        p.model = Some(gpu::plan_from(&files, &plan).await?);
    }
    Ok(serialize(&p))
}

/// The engine's and the GPU's options from `LoadOptions` (or the same
/// fields of `ProbeOptions`).
fn load_options(o: &Opts) -> Result<(EngineOptions, GpuOptions)> {
    let engine = EngineOptions {
        context: o.count("contextLength")?.unwrap_or(0),
        // On the CPU the KV cache lives in wasm memory (4 GiB at most).
        default_context: 2048,
        max_batch: 64,
        ..EngineOptions::default()
    };
    let gpu = GpuOptions {
        max_binding: o.count("maxBindingBytes")?.map(|b| b as u64),
        ..GpuOptions::default()
    };
    Ok((engine, gpu))
}

/// All of this module's wasm memory (it grows and never shrinks).
fn wasm_memory_bytes() -> f64 {
    wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .map_or(0.0, |m| {
            m.buffer()
                .unchecked_into::<js_sys::ArrayBuffer>()
                .byte_length() as f64
        })
}

/// A model source rather than an options object.
fn is_source(v: &JsValue) -> bool {
    v.is_string()
        || Array::is_array(v)
        || ["Uint8Array", "ArrayBuffer", "URL", "Blob", "ReadableStream"]
            .iter()
            .any(|c| instance_of(v, c))
}

fn model_info(
    engine: &Engine,
    gpu: Option<&Gpu>,
    backend: &str,
    fallback: Option<&str>,
) -> JsValue {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Info<'a> {
        architecture: &'a str,
        name: Option<&'a str>,
        parameters: u64,
        quantization: String,
        tensor_types: &'a str,
        context_length: usize,
        train_context_length: usize,
        vocab_size: usize,
        layers: usize,
        embedding_length: usize,
        heads: usize,
        kv_heads: usize,
        weight_bytes_per_token: u64,
        has_chat_template: bool,
        chat_template: &'a str,
        backend: &'a str,
        fallback_reason: Option<&'a str>,
        adapter: Option<Adapter>,
        memory: Mem,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Mem {
        #[serde(flatten)]
        held: crate::memory::Memory,
        /// This module's wasm memory, all of it (it never shrinks).
        wasm_bytes: f64,
    }
    let c = &engine.config;
    let i = &engine.info;
    // The format holding most matrix elements names the quantization.
    let mut by_type = std::collections::BTreeMap::<&str, u64>::new();
    for (_, ty, dims) in i.tensors.iter().filter(|t| t.2.len() >= 2) {
        *by_type.entry(ty).or_default() += dims.iter().product::<usize>() as u64;
    }
    let quantization = by_type
        .iter()
        .max_by_key(|(_, n)| **n)
        .map_or("?", |(t, _)| t)
        .to_string();
    let adapter = gpu.map(Adapter::of);
    serialize(&Info {
        architecture: c.arch().name(),
        name: i.name.as_deref(),
        parameters: i.n_params,
        quantization,
        tensor_types: &i.file_type,
        context_length: engine.context_len(),
        train_context_length: c.train_ctx,
        vocab_size: c.vocab_size,
        layers: c.n_layers,
        embedding_length: c.dim,
        heads: c.n_heads,
        kv_heads: c.n_kv_heads,
        weight_bytes_per_token: i.weight_bytes_per_token,
        has_chat_template: i.chat_template.is_some(),
        chat_template: i.chat_template_origin.label(),
        backend,
        fallback_reason: fallback,
        adapter,
        memory: Mem {
            held: engine.memory(),
            wasm_bytes: wasm_memory_bytes(),
        },
    })
}
