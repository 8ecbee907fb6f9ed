//! The engine: a loaded model, a backend that runs it, and the generation
//! loop shared by the CLI and the browser package.

use crate::cpu::{self, Parallel, RunState};
use crate::error::{Error, Result};
use crate::gguf::Gguf;
use crate::model::{Config, LoadOptions, Weights};
use crate::sampler::{Sampler, SamplerParams};
use crate::tokenizer::{StreamDecoder, Tokenizer};

/// Something that runs the transformer: the CPU here, the GPU in `gpu`.
pub trait Backend {
    fn name(&self) -> &'static str;
    /// Most tokens one `forward` call accepts.
    fn max_batch(&self) -> usize;
    fn context_len(&self) -> usize;
    /// Run `tokens` at positions `pos..`, leaving the logits after the last one in `logits`.
    fn forward(&mut self, tokens: &[u32], pos: usize) -> Result<()>;
    /// The logits of the last `forward` (the sampler may modify them in place).
    fn logits(&mut self) -> &mut [f32];
}

pub struct CpuBackend {
    config: Config,
    weights: Weights,
    state: RunState,
    par: Box<dyn Parallel>,
}

impl CpuBackend {
    pub fn new(
        config: Config,
        weights: Weights,
        ctx: usize,
        max_batch: usize,
        par: Box<dyn Parallel>,
    ) -> Result<CpuBackend> {
        let state = RunState::new(&config, ctx, max_batch)?;
        Ok(CpuBackend {
            config,
            weights,
            state,
            par,
        })
    }
    pub fn weights(&self) -> &Weights {
        &self.weights
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn max_batch(&self) -> usize {
        self.state.max_batch
    }
    fn context_len(&self) -> usize {
        self.state.ctx
    }
    fn forward(&mut self, tokens: &[u32], pos: usize) -> Result<()> {
        cpu::forward(
            &self.config,
            &self.weights,
            &mut self.state,
            &*self.par,
            tokens,
            pos,
        )
        .map(|_| ())
    }
    fn logits(&mut self) -> &mut [f32] {
        self.state.logits_mut()
    }
}

/// What a model file says about itself, for `info` and the JS `model.info`.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub name: Option<String>,
    pub chat_template: Option<String>,
    /// (tensor name, type name, dims) in file order.
    pub tensors: Vec<(String, &'static str, Vec<usize>)>,
    pub file_type: String,
    pub n_params: usize,
    pub tokenizer_model: String,
    pub tokenizer_pre: Option<String>,
}

impl ModelInfo {
    fn from_gguf(g: &Gguf) -> ModelInfo {
        let mut counts = std::collections::BTreeMap::new();
        for t in &g.tensors {
            *counts.entry(t.ty.name()).or_insert(0usize) += 1;
        }
        ModelInfo {
            name: g.get_str("general.name").map(str::to_string),
            chat_template: g.get_str("tokenizer.chat_template").map(str::to_string),
            tensors: g
                .tensors
                .iter()
                .map(|t| (t.name.clone(), t.ty.name(), t.dims.clone()))
                .collect(),
            file_type: counts
                .iter()
                .map(|(k, v)| format!("{k}×{v}"))
                .collect::<Vec<_>>()
                .join(" "),
            n_params: g.tensors.iter().map(|t| t.n_elements()).sum(),
            tokenizer_model: g.get_str("tokenizer.ggml.model").unwrap_or("?").to_string(),
            tokenizer_pre: g.get_str("tokenizer.ggml.pre").map(str::to_string),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct EngineOptions {
    /// Context window to allocate; 0 means min(the model's, 4096).
    pub context: usize,
    /// Largest prefill batch.
    pub max_batch: usize,
    pub load: LoadOptions,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            context: 0,
            max_batch: 512,
            load: LoadOptions::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// An end-of-generation token was produced.
    Eog,
    /// `max_tokens` were generated.
    Length,
    /// The context window is full.
    Context,
    /// The caller's callback asked to stop.
    Stopped,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Eog => "eog",
            StopReason::Length => "length",
            StopReason::Context => "context",
            StopReason::Stopped => "stopped",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Generation {
    pub prompt_ids: Vec<u32>,
    pub generated_ids: Vec<u32>,
    pub text: String,
    /// Prompt tokens actually run (the rest came from the KV cache).
    pub prefilled: usize,
    pub prefill_ms: f64,
    pub decode_ms: f64,
    pub stop: StopReason,
}

impl Generation {
    pub fn prefill_tok_s(&self) -> f64 {
        rate(self.prefilled, self.prefill_ms)
    }
    /// Decode rate over the tokens after the first (the first comes from prefill).
    pub fn decode_tok_s(&self) -> f64 {
        rate(self.generated_ids.len().saturating_sub(1), self.decode_ms)
    }
}

fn rate(n: usize, ms: f64) -> f64 {
    if ms > 0.0 {
        n as f64 * 1000.0 / ms
    } else {
        0.0
    }
}

pub struct Engine {
    pub config: Config,
    pub tokenizer: Tokenizer,
    pub info: ModelInfo,
    backend: Box<dyn Backend>,
    /// Tokens whose keys and values are in the cache, in order.
    cached: Vec<u32>,
    /// Milliseconds from an arbitrary origin; injected because wasm32 has no clock in std.
    clock: fn() -> f64,
}

/// What a load produces before a backend is chosen: the GPU shell uses the
/// same parse and weights.
pub struct Loaded {
    pub config: Config,
    pub tokenizer: Tokenizer,
    pub info: ModelInfo,
    pub weights: Weights,
}

impl Loaded {
    /// Parse and validate a whole GGUF file held in memory; `bytes` is moved,
    /// not copied, into the weights.
    pub fn from_bytes(bytes: Vec<u8>, opts: LoadOptions) -> Result<Loaded> {
        let g = Gguf::parse(&bytes)?;
        let config = Config::from_gguf(&g)?;
        let tokenizer = Tokenizer::from_gguf(&g)?;
        if tokenizer.vocab_size() != config.vocab_size {
            return Err(Error::ShapeMismatch(format!(
                "the tokenizer has {} tokens but token_embd.weight has {} rows",
                tokenizer.vocab_size(),
                config.vocab_size
            )));
        }
        let info = ModelInfo::from_gguf(&g);
        let weights = Weights::from_gguf(&g, &config, bytes, opts)?;
        Ok(Loaded {
            config,
            tokenizer,
            info,
            weights,
        })
    }
}

impl Engine {
    /// Assemble an engine from a load whose weights a backend has taken.
    pub fn with_backend(
        config: Config,
        tokenizer: Tokenizer,
        info: ModelInfo,
        backend: Box<dyn Backend>,
        clock: fn() -> f64,
    ) -> Engine {
        Engine {
            config,
            tokenizer,
            info,
            backend,
            cached: Vec::new(),
            clock,
        }
    }

    /// Load for the CPU backend.
    pub fn load_cpu(
        bytes: Vec<u8>,
        opts: EngineOptions,
        par: Box<dyn Parallel>,
        clock: fn() -> f64,
    ) -> Result<Engine> {
        let Loaded {
            config,
            tokenizer,
            info,
            weights,
        } = Loaded::from_bytes(bytes, opts.load)?;
        let ctx = context_for(&config, opts.context);
        let backend = CpuBackend::new(config.clone(), weights, ctx, opts.max_batch, par)?;
        Ok(Engine {
            config,
            tokenizer,
            info,
            backend: Box::new(backend),
            cached: Vec::new(),
            clock,
        })
    }

    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    pub fn context_len(&self) -> usize {
        self.backend.context_len()
    }

    /// Tokenize a prompt the way llama.cpp's references were made: BOS by the
    /// model's rule and special tokens parsed.
    pub fn prompt_ids(&self, prompt: &str) -> Vec<u32> {
        self.tokenizer.encode(prompt, true, true)
    }

    /// Forget the KV cache.
    pub fn reset(&mut self) {
        self.cached.clear();
    }

    /// Run `ids` after the longest prefix already in the cache and return
    /// the logits after the last id. Also returns how many tokens ran.
    fn feed(&mut self, ids: &[u32]) -> Result<usize> {
        if ids.is_empty() {
            return Err(Error::InvalidArgument("empty prompt".into()));
        }
        let ctx = self.backend.context_len();
        if ids.len() > ctx {
            return Err(Error::ContextOverflow {
                needed: ids.len(),
                context: ctx,
            });
        }
        // Reuse the cache for a shared prefix, but always run at least one
        // token so that there are logits to sample from.
        let mut keep = self
            .cached
            .iter()
            .zip(ids)
            .take_while(|(a, b)| a == b)
            .count();
        if keep == ids.len() {
            keep -= 1;
        }
        self.cached.truncate(keep);
        let batch = self.backend.max_batch();
        for chunk in ids[keep..].chunks(batch) {
            let pos = self.cached.len();
            self.backend.forward(chunk, pos)?;
            self.cached.extend_from_slice(chunk);
        }
        Ok(ids.len() - keep)
    }

    /// Generate up to `max_tokens` after `prompt_ids`. `on_token(id, piece)`
    /// receives each token with its complete-UTF-8 text and returns false to stop.
    pub fn generate(
        &mut self,
        prompt_ids: &[u32],
        max_tokens: usize,
        params: SamplerParams,
        on_token: &mut dyn FnMut(u32, &str) -> bool,
    ) -> Result<Generation> {
        let mut sampler = Sampler::new(params, self.config.vocab_size)?;
        let t0 = (self.clock)();
        let prefilled = self.feed(prompt_ids)?;
        let t1 = (self.clock)();
        let mut history: Vec<u32> = Vec::with_capacity(prompt_ids.len() + max_tokens);
        history.extend_from_slice(prompt_ids);
        let mut decoder = StreamDecoder::new();
        let mut text = String::new();
        let mut generated = Vec::with_capacity(max_tokens);
        let mut stop = StopReason::Length;
        let ctx = self.backend.context_len();
        let mut logits_ready = true;
        while generated.len() < max_tokens {
            if !logits_ready {
                if self.cached.len() >= ctx {
                    stop = StopReason::Context;
                    break;
                }
                let last = *generated.last().expect("a token was generated");
                let pos = self.cached.len();
                self.backend.forward(&[last], pos)?;
                self.cached.push(last);
            }
            logits_ready = false;
            let logits = self.backend.logits();
            let id = sampler.sample(logits, &history);
            generated.push(id);
            history.push(id);
            if self.tokenizer.is_eog(id) {
                stop = StopReason::Eog;
                break;
            }
            let piece = decoder.push(&self.tokenizer, id);
            text.push_str(&piece);
            if !on_token(id, &piece) {
                stop = StopReason::Stopped;
                break;
            }
        }
        let rest = decoder.finish();
        if !rest.is_empty() {
            text.push_str(&rest);
            on_token(u32::MAX, &rest);
        }
        let t2 = (self.clock)();
        Ok(Generation {
            prompt_ids: prompt_ids.to_vec(),
            generated_ids: generated,
            text,
            prefilled,
            prefill_ms: t1 - t0,
            decode_ms: t2 - t1,
            stop,
        })
    }

    /// Teacher-forced logits: feed `tokens`, and for every position i >= start
    /// return the top-`top` (id, logit) pairs after tokens[0..=i]. The prompt
    /// part runs as one batch and the rest one token at a time, as a greedy
    /// generation would.
    pub fn logits_at(
        &mut self,
        tokens: &[u32],
        start: usize,
        top: usize,
    ) -> Result<Vec<Vec<(u32, f32)>>> {
        if start >= tokens.len() {
            return Err(Error::InvalidArgument(format!(
                "--start {start} is past the {} tokens given",
                tokens.len()
            )));
        }
        self.reset();
        self.feed(&tokens[..=start])?;
        let mut steps = vec![top_k(self.backend.logits(), top)];
        for &t in &tokens[start + 1..] {
            let pos = self.cached.len();
            if pos >= self.backend.context_len() {
                return Err(Error::ContextOverflow {
                    needed: pos + 1,
                    context: self.backend.context_len(),
                });
            }
            self.backend.forward(&[t], pos)?;
            self.cached.push(t);
            steps.push(top_k(self.backend.logits(), top));
        }
        Ok(steps)
    }
}

#[derive(Debug, Clone, Copy)]
pub struct BenchResult {
    pub pp_tok_s: f64,
    pub tg_tok_s: f64,
}

impl Engine {
    /// llama-bench's two tests on an empty cache, `reps` times each, averaged:
    /// pp = one batch of `p` prompt tokens (in max_batch chunks), tg = `n`
    /// tokens run one at a time. Token ids are fixed pseudo-random values.
    pub fn bench(&mut self, p: usize, n: usize, reps: usize) -> Result<BenchResult> {
        let ctx = self.backend.context_len();
        if p.max(n) > ctx {
            return Err(Error::ContextOverflow {
                needed: p.max(n),
                context: ctx,
            });
        }
        let vocab = self.config.vocab_size as u64;
        let mut rng = crate::sampler::Rng::new(1234);
        let ids: Vec<u32> = (0..p.max(n))
            .map(|_| (rng.next_u32() as u64 % vocab) as u32)
            .collect();
        // One untimed warm-up token so first-touch page faults do not count.
        self.backend.forward(&ids[..1], 0)?;
        let (mut pp_ms, mut tg_ms) = (0.0, 0.0);
        for _ in 0..reps {
            self.reset();
            let t0 = (self.clock)();
            if p > 0 {
                self.feed(&ids[..p])?;
            }
            let t1 = (self.clock)();
            for (pos, &t) in ids[..n].iter().enumerate() {
                self.backend.forward(&[t], pos)?;
            }
            let t2 = (self.clock)();
            pp_ms += t1 - t0;
            tg_ms += t2 - t1;
        }
        self.reset();
        Ok(BenchResult {
            pp_tok_s: rate(p * reps, pp_ms),
            tg_tok_s: rate(n * reps, tg_ms),
        })
    }
}

/// The context to allocate: what was asked, else the model's own up to 4096.
pub fn context_for(c: &Config, asked: usize) -> usize {
    if asked > 0 {
        asked
    } else {
        c.train_ctx.min(4096)
    }
}

fn top_k(logits: &[f32], k: usize) -> Vec<(u32, f32)> {
    let mut v: Vec<(u32, f32)> = logits
        .iter()
        .enumerate()
        .map(|(i, &l)| (i as u32, l))
        .collect();
    let k = k.clamp(1, v.len());
    v.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(k);
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}
