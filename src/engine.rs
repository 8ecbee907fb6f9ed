//! The engine: a loaded model, a backend that runs it, and the generation
//! loop shared by the CLI and the browser package.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use crate::chat::{TemplateOrigin, CHATML_TEMPLATE};
use crate::cpu::{self, Parallel, RunState};
use crate::error::{Error, Result};
use crate::gguf::{Gguf, Parts};
use crate::grammar::{Constraint, GrammarSpec, Grammars};
use crate::memory::{CpuMemory, Memory};
use crate::model::{Config, LoadOptions, Weights};
use crate::sampler::{Extras, Sampler, SamplerParams, TokenLogprobs};
use crate::tokenizer::{StreamDecoder, Tokenizer};

/// A future that need not be `Send` (wasm futures never are).
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Something that runs the transformer: the CPU here, the GPU in `gpu`.
///
/// The GPU reads results back asynchronously in the browser, so the two
/// calls that return data are futures; the CPU's are ready at once.
pub trait Backend {
    fn name(&self) -> &'static str;
    /// Most tokens one call accepts.
    fn max_batch(&self) -> usize;
    fn context_len(&self) -> usize;
    /// Run `tokens` at positions `pos..` and pick the next token with
    /// `sampler` (given the token history for penalties). Only the id
    /// comes back.
    fn forward_sample<'a>(
        &'a mut self,
        tokens: &'a [u32],
        pos: usize,
        sampler: &'a mut Sampler,
        history: &'a [u32],
    ) -> LocalFuture<'a, Result<u32>>;
    /// Run `tokens` at positions `pos..` and return the logits after the last.
    fn forward_logits<'a>(
        &'a mut self,
        tokens: &'a [u32],
        pos: usize,
    ) -> LocalFuture<'a, Result<&'a [f32]>>;
    /// Run `tokens` without reading anything back (prefill chunks, benchmarks).
    fn forward(&mut self, tokens: &[u32], pos: usize) -> Result<()>;
    /// Wait until submitted work has finished (benchmarks).
    fn sync(&mut self) -> LocalFuture<'_, Result<()>> {
        Box::pin(async { Ok(()) })
    }
    /// The device the backend runs on, for `info` (adapter, limits, features).
    fn device(&self) -> Option<String> {
        None
    }
    /// The memory the backend holds (`Engine::memory`).
    fn memory(&self) -> Memory;
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
        if !weights.resident {
            // A weight plan (Weights::plan) has no matrix bytes to compute with.
            return Err(Error::InvalidArgument(
                "the CPU backend needs the model's bytes in memory, not a weight plan".into(),
            ));
        }
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
        let par = &*self.par;
        cpu::forward(
            &self.config,
            &self.weights,
            &mut self.state,
            par,
            tokens,
            pos,
        )
        .map(|_| ())
    }
    fn forward_sample<'a>(
        &'a mut self,
        tokens: &'a [u32],
        pos: usize,
        sampler: &'a mut Sampler,
        history: &'a [u32],
    ) -> LocalFuture<'a, Result<u32>> {
        let r = self
            .forward(tokens, pos)
            .map(|_| sampler.sample(self.state.logits_mut(), history));
        Box::pin(std::future::ready(r))
    }
    fn forward_logits<'a>(
        &'a mut self,
        tokens: &'a [u32],
        pos: usize,
    ) -> LocalFuture<'a, Result<&'a [f32]>> {
        let r = self.forward(tokens, pos);
        Box::pin(std::future::ready(r.map(|_| &*self.state.logits_mut())))
    }
    fn memory(&self) -> Memory {
        let (kv, scratch) = RunState::footprint(&self.config, self.state.ctx, self.state.max_batch);
        Memory {
            backend: "cpu",
            gpu: None,
            cpu: Some(CpuMemory::new(self.weights.data.len() as u64, kv, scratch)),
        }
    }
}

/// What a model file says about itself, for `info` and the JS `model.info`.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub name: Option<String>,
    pub chat_template: Option<String>,
    /// The file's template, or which fallback prompts use (see `chat`).
    pub chat_template_origin: TemplateOrigin,
    /// (tensor name, type name, dims) in file order.
    pub tensors: Vec<(String, &'static str, Vec<usize>)>,
    pub file_type: String,
    /// All tensors' elements: a u64, as a streamed model may hold more
    /// than the address space.
    pub n_params: u64,
    pub tokenizer_model: String,
    pub tokenizer_pre: Option<String>,
    /// Weight bytes one decode step reads, as loaded (after any upcast):
    /// divided by memory bandwidth it gives the decode floor.
    pub weight_bytes_per_token: u64,
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
            chat_template_origin: TemplateOrigin::from_gguf(g),
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
            n_params: g.tensors.iter().map(|t| t.n_elements() as u64).sum(),
            tokenizer_model: g.get_str("tokenizer.ggml.model").unwrap_or("?").to_string(),
            tokenizer_pre: g.get_str("tokenizer.ggml.pre").map(str::to_string),
            weight_bytes_per_token: 0,
        }
    }

    /// The chat template prompts are made with: the file's, else the fallback.
    pub fn chat_template_source(&self) -> &str {
        match &self.chat_template {
            Some(own) => own,
            None => self
                .chat_template_origin
                .fallback_source()
                .unwrap_or(CHATML_TEMPLATE),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct EngineOptions {
    /// Context window to allocate; 0 means min(the model's, `default_context`).
    pub context: usize,
    /// The cap on a model's own context when none is asked for.
    pub default_context: usize,
    /// Largest prefill batch.
    pub max_batch: usize,
    pub load: LoadOptions,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            context: 0,
            default_context: 4096,
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
    /// The text reached one of the run's stop strings.
    StopString,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Eog => "eog",
            StopReason::Length => "length",
            StopReason::Context => "context",
            StopReason::Stopped => "stopped",
            StopReason::StopString => "stop",
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

/// State of one generation between `begin` and `finish`.
struct Run {
    sampler: Sampler,
    /// Prompt then generated ids.
    history: Vec<u32>,
    prompt_len: usize,
    /// Index into the prompt of the next token to prefill; `None` until the
    /// KV-cache prefix to keep has been worked out.
    prefill_at: Option<usize>,
    max_tokens: usize,
    decoder: StreamDecoder,
    stops: StopStrings,
    text: String,
    prefilled: usize,
    t_start: f64,
    t_first: f64,
    stop: Option<StopReason>,
    /// The grammar the output must follow, if any (see `constrain`).
    constraint: Option<Constraint>,
}

pub struct Engine {
    pub config: Config,
    /// Shared so a shell can tokenize while a generation holds the engine.
    pub tokenizer: Rc<Tokenizer>,
    pub info: ModelInfo,
    backend: Box<dyn Backend>,
    /// Tokens whose keys and values are in the cache, in order.
    cached: Vec<u32>,
    /// The generation in progress, between `begin` and `finish`.
    run: Option<Run>,
    /// Milliseconds from an arbitrary origin; injected because wasm32 has no clock in std.
    clock: fn() -> f64,
    /// llguidance's view of the vocabulary, built on the first constrained run.
    grammars: Option<Rc<Grammars>>,
    /// Milliseconds the last run spent in its grammar (0 without one).
    pub last_grammar_ms: f64,
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
    /// What the header alone gives: the config, the tokenizer and the info.
    pub fn describe(g: &Gguf) -> Result<(Config, Tokenizer, ModelInfo)> {
        let config = Config::from_gguf(g)?;
        let tokenizer = Tokenizer::from_gguf(g)?;
        if tokenizer.vocab_size() != config.vocab_size {
            return Err(Error::ShapeMismatch(format!(
                "the tokenizer has {} tokens but token_embd.weight has {} rows",
                tokenizer.vocab_size(),
                config.vocab_size
            )));
        }
        Ok((config, tokenizer, ModelInfo::from_gguf(g)))
    }

    /// Parse and validate a whole GGUF file held in memory; `bytes` is moved,
    /// not copied, into the weights.
    pub fn from_bytes(bytes: Vec<u8>, opts: LoadOptions) -> Result<Loaded> {
        Loaded::from_parts(bytes, &Parts::one(), opts)
    }

    /// `from_bytes` for a model held in memory as one or more whole GGUF
    /// files laid end to end: the files of a split model, in order, with
    /// `parts` saying where each begins (`Parts::one()` for one file).
    pub fn from_parts(bytes: Vec<u8>, parts: &Parts, opts: LoadOptions) -> Result<Loaded> {
        let g = Gguf::parse_parts(&bytes, parts)?;
        let (config, tokenizer, mut info) = Loaded::describe(&g)?;
        let weights = Weights::from_gguf(&g, &config, bytes, opts)?;
        info.weight_bytes_per_token = weights.bytes_per_token();
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
            tokenizer: Rc::new(tokenizer),
            info,
            backend,
            cached: Vec::new(),
            run: None,
            clock,
            grammars: None,
            last_grammar_ms: 0.0,
        }
    }

    /// Load for the CPU backend.
    pub fn load_cpu(
        bytes: Vec<u8>,
        opts: EngineOptions,
        par: Box<dyn Parallel>,
        clock: fn() -> f64,
    ) -> Result<Engine> {
        Engine::load_cpu_parts(bytes, &Parts::one(), opts, par, clock)
    }

    /// Load for the CPU backend from one or more whole GGUF files laid end
    /// to end in `bytes` (a split model's files, in order; `parts.starts`
    /// says where each begins, e.g. `Parts::of_lens`).
    pub fn load_cpu_parts(
        bytes: Vec<u8>,
        parts: &Parts,
        opts: EngineOptions,
        par: Box<dyn Parallel>,
        clock: fn() -> f64,
    ) -> Result<Engine> {
        let Loaded {
            config,
            tokenizer,
            info,
            weights,
        } = Loaded::from_parts(bytes, parts, opts.load)?;
        let ctx = context_for(&config, &opts);
        let backend = CpuBackend::new(config.clone(), weights, ctx, opts.max_batch, par)?;
        Ok(Engine::with_backend(
            config,
            tokenizer,
            info,
            Box::new(backend),
            clock,
        ))
    }

    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    pub fn context_len(&self) -> usize {
        self.backend.context_len()
    }

    /// What the loaded backend holds: GPU bytes by kind (weights, KV
    /// cache, scratch) and its largest buffer on the GPU backend; the
    /// file, KV cache and scratch in memory on the CPU one. The JS
    /// `model.info.memory`.
    pub fn memory(&self) -> Memory {
        self.backend.memory()
    }

    pub fn backend_device(&self) -> Option<String> {
        self.backend.device()
    }

    /// Tokenize a prompt the way llama.cpp's references were made: BOS by the
    /// model's rule and special tokens parsed.
    pub fn prompt_ids(&self, prompt: &str) -> Vec<u32> {
        self.tokenizer.encode(prompt, true, true)
    }

    /// Forget the KV cache and any generation in progress.
    pub fn reset(&mut self) {
        self.cached.clear();
        self.run = None;
    }

    /// Whether a generation is between `begin` and `finish`.
    pub fn is_running(&self) -> bool {
        self.run.is_some()
    }

    /// Every id in the vocabulary, and all of them within the context.
    fn check_tokens(&self, ids: &[u32]) -> Result<()> {
        let ctx = self.backend.context_len();
        if ids.len() > ctx {
            return Err(Error::ContextOverflow {
                needed: ids.len(),
                context: ctx,
            });
        }
        match ids.iter().find(|&&t| t as usize >= self.config.vocab_size) {
            Some(&bad) => Err(Error::BadToken {
                id: bad,
                vocab: self.config.vocab_size,
            }),
            None => Ok(()),
        }
    }

    /// Start generating after `prompt_ids`: the prompt runs on the first
    /// `next_token`. Reuses the KV cache for the longest prefix shared with
    /// what it already holds.
    pub fn begin(
        &mut self,
        prompt_ids: &[u32],
        max_tokens: usize,
        params: SamplerParams,
    ) -> Result<()> {
        if prompt_ids.is_empty() {
            return Err(Error::InvalidArgument("empty prompt".into()));
        }
        self.check_tokens(prompt_ids)?;
        let sampler = Sampler::new(params, self.config.vocab_size)?;
        // `max_tokens` is the caller's (the JS option, the CLI's -n) and may
        // be anything up to u32::MAX; the run stops when the context is full,
        // so the history never holds more than the context plus the last pick.
        let ctx = self.backend.context_len();
        let room = max_tokens.min(ctx.saturating_sub(prompt_ids.len()) + 1);
        let mut history = Vec::with_capacity(prompt_ids.len() + room);
        history.extend_from_slice(prompt_ids);
        self.run = Some(Run {
            sampler,
            history,
            prompt_len: prompt_ids.len(),
            prefill_at: None,
            max_tokens,
            decoder: StreamDecoder::new(),
            stops: StopStrings::default(),
            text: String::new(),
            prefilled: 0,
            t_start: (self.clock)(),
            t_first: 0.0,
            stop: None,
            constraint: None,
        });
        Ok(())
    }

    /// Run one full batch of the prompt, if more than a batch is left;
    /// returns whether it did. `next_token` calls this itself; a shell that
    /// wants to abort or yield between batches of a long prompt calls it
    /// first. The last batch always runs in `next_token`, which samples.
    pub fn prefill_chunk(&mut self) -> Result<bool> {
        let Some(run) = self.run.as_mut() else {
            return Err(Error::InvalidArgument("no generation in progress".into()));
        };
        if run.history.len() > run.prompt_len {
            return Ok(false);
        }
        let at = match run.prefill_at {
            Some(at) => at,
            None => {
                // Skip what the cache already holds, but run at least one
                // token so there are logits to sample from.
                let prompt = &run.history[..run.prompt_len];
                let mut keep = self
                    .cached
                    .iter()
                    .zip(prompt)
                    .take_while(|(a, b)| a == b)
                    .count();
                if keep == prompt.len() {
                    keep -= 1;
                }
                self.cached.truncate(keep);
                run.prefill_at = Some(keep);
                run.prefilled = prompt.len() - keep;
                keep
            }
        };
        let batch = self.backend.max_batch();
        if run.prompt_len - at <= batch {
            return Ok(false);
        }
        let chunk = &run.history[at..at + batch];
        self.backend.forward(chunk, self.cached.len())?;
        self.cached.extend_from_slice(chunk);
        run.prefill_at = Some(at + batch);
        Ok(true)
    }

    /// End the run started by `begin` where its text reaches any of `stops`
    /// (the stop string itself is not part of the text). Text that could be
    /// the start of a stop string is held back until it is known not to be.
    pub fn stop_at(&mut self, stops: &[String]) -> Result<()> {
        let run = self
            .run
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("no generation in progress".into()))?;
        run.stops = StopStrings::new(stops);
        Ok(())
    }

    /// Constrain the run started by `begin` to `spec` (JSON, a schema, a
    /// grammar): each step samples only tokens the grammar allows, and the
    /// run ends when the grammar is complete. The vocabulary's trie is built
    /// on the first call and kept.
    pub fn constrain(&mut self, spec: &GrammarSpec) -> Result<()> {
        if self.run.is_none() {
            return Err(Error::InvalidArgument("no generation in progress".into()));
        }
        let grammars = match &self.grammars {
            Some(g) => g.clone(),
            None => {
                let g = Rc::new(Grammars::new(&self.tokenizer)?);
                self.grammars = Some(g.clone());
                g
            }
        };
        let t0 = (self.clock)();
        let mut c = grammars.constraint(spec)?;
        c.ms += (self.clock)() - t0;
        self.run.as_mut().expect("checked above").constraint = Some(c);
        Ok(())
    }

    /// Sampling adjustments for the run started by `begin` (OpenAI's
    /// logit_bias, penalties, logprobs); see [`Extras`].
    pub fn sampling_extras(&mut self, extras: Extras) -> Result<()> {
        let run = self
            .run
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("no generation in progress".into()))?;
        if let Some(&(id, _)) = extras
            .bias
            .iter()
            .find(|(id, _)| *id as usize >= self.config.vocab_size)
        {
            return Err(Error::BadToken {
                id,
                vocab: self.config.vocab_size,
            });
        }
        let mask = run.sampler.extras.mask.take();
        run.sampler.extras = Extras {
            mask,
            prompt_len: run.prompt_len,
            ..extras
        };
        Ok(())
    }

    /// The log-probabilities of the token `next_token` returned last, when
    /// asked for with [`Extras::logprobs`].
    pub fn last_logprobs(&self) -> Option<&TokenLogprobs> {
        self.run.as_ref()?.sampler.extras.last.as_ref()
    }

    /// Set the step's mask from the run's grammar; false when the grammar
    /// is complete (the run then ends as at an end-of-generation token).
    fn prepare_mask(&mut self) -> Result<bool> {
        let clock = self.clock;
        let Some(run) = self.run.as_mut() else {
            return Ok(false);
        };
        let Some(c) = run.constraint.as_mut() else {
            return Ok(true);
        };
        if c.is_stopped() {
            return Ok(false);
        }
        let t0 = clock();
        let mask = c.mask()?;
        c.ms += clock() - t0;
        run.sampler.extras.mask = Some(mask);
        run.sampler.extras.prompt_len = run.prompt_len;
        Ok(true)
    }

    /// Produce the next token of the run started by `begin`: its id and the
    /// complete-UTF-8 text it adds (possibly empty). `None` once finished.
    pub async fn next_token(&mut self) -> Result<Option<(u32, String)>> {
        let Some(run) = self.run.as_mut() else {
            return Err(Error::InvalidArgument("no generation in progress".into()));
        };
        if run.stop.is_some() {
            return Ok(None);
        }
        let generated = run.history.len() - run.prompt_len;
        if generated >= run.max_tokens {
            run.stop = Some(StopReason::Length);
            return Ok(None);
        }
        if !self.prepare_mask()? {
            let run = self.run.as_mut().expect("checked above");
            run.stop = Some(StopReason::Eog);
            return Ok(None);
        }
        let ctx = self.backend.context_len();
        let id = if generated == 0 {
            while self.prefill_chunk()? {}
            let run = self.run.as_mut().expect("checked above");
            let at = run.prefill_at.expect("set by prefill_chunk");
            let last = &run.history[at..run.prompt_len];
            let pos = self.cached.len();
            let id = self
                .backend
                .forward_sample(last, pos, &mut run.sampler, &run.history)
                .await?;
            self.cached.extend_from_slice(last);
            run.prefill_at = Some(run.prompt_len);
            run.t_first = (self.clock)();
            id
        } else {
            let run = self.run.as_mut().expect("checked above");
            if self.cached.len() >= ctx {
                run.stop = Some(StopReason::Context);
                return Ok(None);
            }
            let last = run.history[run.history.len() - 1];
            let pos = self.cached.len();
            let id = self
                .backend
                .forward_sample(
                    std::slice::from_ref(&last),
                    pos,
                    &mut run.sampler,
                    &run.history,
                )
                .await?;
            self.cached.push(last);
            id
        };
        let run = self.run.as_mut().expect("checked above");
        run.history.push(id);
        if let (Some(c), false) = (run.constraint.as_mut(), self.tokenizer.is_eog(id)) {
            let t0 = (self.clock)();
            c.consume(id)?;
            c.ms += (self.clock)() - t0;
        }
        if self.tokenizer.is_eog(id) {
            run.stop = Some(StopReason::Eog);
            return Ok(Some((id, String::new())));
        }
        let (piece, hit) = run.stops.push(&run.decoder.push(&self.tokenizer, id));
        if hit {
            run.stop = Some(StopReason::StopString);
        }
        run.text.push_str(&piece);
        Ok(Some((id, piece)))
    }

    /// End the run (early or not) and report it. Text held back waiting for
    /// the rest of a UTF-8 character is flushed into `text`.
    pub fn finish(&mut self) -> Result<Generation> {
        let mut run = self
            .run
            .take()
            .ok_or_else(|| Error::InvalidArgument("no generation in progress".into()))?;
        if run.stop != Some(StopReason::StopString) {
            let (tail, _) = run.stops.push(&run.decoder.finish());
            run.text.push_str(&tail);
            run.text.push_str(&run.stops.flush());
        }
        let now = (self.clock)();
        self.last_grammar_ms = run.constraint.as_ref().map_or(0.0, |c| c.ms);
        let t_first = if run.t_first > 0.0 { run.t_first } else { now };
        Ok(Generation {
            prompt_ids: run.history[..run.prompt_len].to_vec(),
            generated_ids: run.history[run.prompt_len..].to_vec(),
            text: run.text,
            prefilled: run.prefilled,
            prefill_ms: t_first - run.t_start,
            decode_ms: now - t_first,
            stop: run.stop.unwrap_or(StopReason::Stopped),
        })
    }

    /// Generate up to `max_tokens` after `prompt_ids`. `on_token(id, piece)`
    /// receives each token with its complete-UTF-8 text and returns false to stop.
    pub async fn generate(
        &mut self,
        prompt_ids: &[u32],
        max_tokens: usize,
        params: SamplerParams,
        on_token: &mut dyn FnMut(u32, &str) -> bool,
    ) -> Result<Generation> {
        self.begin(prompt_ids, max_tokens, params)?;
        loop {
            match self.next_token().await {
                Ok(Some((id, piece))) => {
                    if !on_token(id, &piece) {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    self.run = None;
                    self.cached.clear();
                    return Err(e);
                }
            }
        }
        self.finish()
    }

    /// Teacher-forced logits: feed `tokens`, and for every position i >= start
    /// return the top-`top` (id, logit) pairs after tokens[0..=i]. The prompt
    /// part runs as one batch and the rest one token at a time, as a greedy
    /// generation would.
    pub async fn logits_at(
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
        self.check_tokens(tokens)?;
        self.reset();
        let batch = self.backend.max_batch();
        let prompt = &tokens[..=start];
        let chunks = prompt.len().div_ceil(batch);
        for (i, chunk) in prompt.chunks(batch).enumerate() {
            if i + 1 < chunks {
                self.backend.forward(chunk, i * batch)?;
            }
        }
        let last = (chunks - 1) * batch;
        let mut steps = vec![top_k(
            self.backend.forward_logits(&prompt[last..], last).await?,
            top,
        )];
        for (pos, &t) in tokens.iter().enumerate().skip(start + 1) {
            steps.push(top_k(
                self.backend
                    .forward_logits(std::slice::from_ref(&t), pos)
                    .await?,
                top,
            ));
        }
        self.cached = tokens.to_vec();
        Ok(steps)
    }
}

#[derive(Debug, Clone)]
pub struct BenchResult {
    pub pp_tok_s: f64,
    pub tg_tok_s: f64,
    /// Each repetition's milliseconds, pp and tg: whether a low average
    /// is one slow repetition (a one-off stall) or all of them.
    pub pp_rep_ms: Vec<f64>,
    pub tg_rep_ms: Vec<f64>,
}

impl BenchResult {
    /// pp and tg rates of the median repetition. The rates above weigh a
    /// slow repetition in full (total tokens over total time), and
    /// llama-bench prints the mean of its repetitions' rates, whose first
    /// prefill repetition reads slow on every file: the medians compare
    /// the two like with like (BENCHMARKS.md, 2026-11-27f).
    pub fn median_tok_s(&self, p: usize, n: usize) -> (f64, f64) {
        (
            rate(p, median(&self.pp_rep_ms)),
            rate(n, median(&self.tg_rep_ms)),
        )
    }
}

/// The middle value (the mean of the two middle ones for an even count),
/// 0 for none. Also `gpu-profile`'s (gpu::profile).
pub(crate) fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        l if l % 2 == 1 => s[l / 2],
        l => (s[l / 2 - 1] + s[l / 2]) / 2.0,
    }
}

impl Engine {
    /// llama-bench's two tests on an empty cache, `reps` times each, averaged:
    /// pp = one batch of `p` prompt tokens (fixed pseudo-random ids, in
    /// max_batch chunks), tg = `n` tokens generated one at a time, each
    /// pick read back and fed in as the next token, as a generation does.
    pub async fn bench(&mut self, p: usize, n: usize, reps: usize) -> Result<BenchResult> {
        self.bench_sampled(p, n, reps, SamplerParams::default(), 0)
            .await
    }

    /// `bench` with each decoded token picked by a sampler with `params`
    /// (greedy by default) instead of argmax, and the tg test run after a
    /// prompt of `depth` tokens (untimed; llama-bench's `-d`), so that each
    /// step attends to depth + i keys.
    pub async fn bench_sampled(
        &mut self,
        p: usize,
        n: usize,
        reps: usize,
        params: SamplerParams,
        depth: usize,
    ) -> Result<BenchResult> {
        let ctx = self.backend.context_len();
        let needed = p.max(depth + n);
        if needed > ctx {
            return Err(Error::ContextOverflow {
                needed,
                context: ctx,
            });
        }
        let vocab = self.config.vocab_size as u64;
        let mut rng = crate::sampler::Rng::new(1234);
        let ids: Vec<u32> = (0..p.max(n).max(depth).max(1))
            .map(|_| (rng.next_u32() as u64 % vocab) as u32)
            .collect();
        let mut sampler = Sampler::new(params, self.config.vocab_size)?;
        // Warm-up, untimed, as llama-bench warms up each test: a prompt
        // batch of the pp test's size (up to the backend's batch) and a
        // decode step, so that first-touch page faults and any pipeline or
        // driver work that waits for a kernel's first dispatch fall in
        // neither timed test.
        let warm = p.min(self.backend.max_batch());
        if warm > 1 {
            self.backend.forward(&ids[..warm], 0)?;
            self.backend.sync().await?;
            self.reset();
        }
        self.backend
            .forward_sample(&ids[..1], 0, &mut sampler, &[])
            .await?;
        let (mut pp_rep_ms, mut tg_rep_ms) = (Vec::new(), Vec::new());
        let batch = self.backend.max_batch();
        for _ in 0..reps {
            self.reset();
            let t0 = (self.clock)();
            for (i, chunk) in ids[..p].chunks(batch).enumerate() {
                self.backend.forward(chunk, i * batch)?;
            }
            self.backend.sync().await?;
            let t1 = (self.clock)();
            pp_rep_ms.push(t1 - t0);
            if depth > 0 {
                for (i, chunk) in ids[..depth].chunks(batch).enumerate() {
                    self.backend.forward(chunk, i * batch)?;
                }
                self.backend.sync().await?;
            }
            let t2 = (self.clock)();
            let mut t = ids[0];
            for pos in depth..depth + n {
                t = self
                    .backend
                    .forward_sample(&[t], pos, &mut sampler, &[])
                    .await?;
            }
            let t3 = (self.clock)();
            // A step fed ahead may still run; keep it out of the next pp.
            self.backend.sync().await?;
            tg_rep_ms.push(t3 - t2);
        }
        self.reset();
        Ok(BenchResult {
            pp_tok_s: rate(p * reps, pp_rep_ms.iter().sum()),
            tg_tok_s: rate(n * reps, tg_rep_ms.iter().sum()),
            pp_rep_ms,
            tg_rep_ms,
        })
    }
}

/// Holds back text that may be the start of a stop string.
#[derive(Debug, Default)]
struct StopStrings {
    stops: Vec<String>,
    pending: String,
}

impl StopStrings {
    fn new(stops: &[String]) -> StopStrings {
        StopStrings {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            pending: String::new(),
        }
    }

    /// Add `piece`; returns the text now safe to emit and whether a stop
    /// string was reached (the text is then everything before it).
    fn push(&mut self, piece: &str) -> (String, bool) {
        if self.stops.is_empty() {
            return (piece.to_string(), false);
        }
        self.pending.push_str(piece);
        let first = self
            .stops
            .iter()
            .filter_map(|s| self.pending.find(s.as_str()))
            .min();
        if let Some(at) = first {
            let out = self.pending[..at].to_string();
            self.pending.clear();
            return (out, true);
        }
        // The longest tail of `pending` that begins some stop string.
        let keep = self
            .stops
            .iter()
            .filter_map(|s| {
                (1..s.len().min(self.pending.len() + 1))
                    .rev()
                    .find(|&k| s.is_char_boundary(k) && self.pending.ends_with(&s[..k]))
            })
            .max()
            .unwrap_or(0);
        let cut = self.pending.len() - keep;
        (self.pending.drain(..cut).collect(), false)
    }

    fn flush(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }
}

/// The context to allocate: what was asked, else the model's own up to the default.
pub fn context_for(c: &Config, opts: &EngineOptions) -> usize {
    if opts.context > 0 {
        opts.context
    } else {
        c.train_ctx.min(opts.default_context)
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

#[cfg(test)]
mod tests {
    use super::{BenchResult, StopStrings};

    /// The median repetition's rates: the middle time of an odd count, the
    /// mean of the two middle ones of an even count, a slow first
    /// repetition (as in the kit's 1B files) left out of both.
    #[test]
    fn bench_medians_take_the_middle_repetition() {
        let b = BenchResult {
            pp_tok_s: 0.0,
            tg_tok_s: 0.0,
            pp_rep_ms: vec![83.2, 16.25, 16.0],
            tg_rep_ms: vec![200.0, 100.0, 120.0, 160.0],
        };
        let (pp, tg) = b.median_tok_s(512, 128);
        // 512 tokens in 16.25 ms; 128 in (120 + 160) / 2 = 140 ms.
        assert!((pp - 31_507.692).abs() < 0.01, "{pp}");
        assert!((tg - 914.285_7).abs() < 0.001, "{tg}");
        let none = BenchResult {
            pp_tok_s: 0.0,
            tg_tok_s: 0.0,
            pp_rep_ms: vec![],
            tg_rep_ms: vec![],
        };
        assert_eq!(none.median_tok_s(512, 128), (0.0, 0.0));
    }

    fn run(stops: &[&str], pieces: &[&str]) -> (Vec<String>, bool, String) {
        let stops: Vec<String> = stops.iter().map(|s| s.to_string()).collect();
        let mut m = StopStrings::new(&stops);
        let mut out = Vec::new();
        for p in pieces {
            let (o, hit) = m.push(p);
            out.push(o);
            if hit {
                return (out, true, String::new());
            }
        }
        (out, false, m.flush())
    }

    #[test]
    fn stop_strings_hold_back_prefixes_and_cut_at_the_match() {
        // No stops: pieces pass through.
        assert_eq!(
            run(&[], &["a", "b"]),
            (vec!["a".into(), "b".into()], false, "".into())
        );
        // A stop split over tokens: "User:" arrives as "Us" + "er:".
        let (out, hit, _) = run(&["User:"], &["Hi", " Us", "er: x"]);
        assert_eq!(out, vec!["Hi", " ", ""]);
        assert!(hit);
        // A false start is released once it stops matching.
        let (out, hit, tail) = run(&["User:"], &["a Us", "ed", " Use"]);
        assert_eq!(out, vec!["a ", "Used", " "]);
        assert!(!hit);
        assert_eq!(tail, "Use");
        // The earliest of several stops wins; multi-byte text stays whole.
        let (out, hit, _) = run(&["éé", "b"], &["xé", "éab"]);
        assert_eq!(out, vec!["x", ""]);
        assert!(hit);
    }
}
