//! webgguf: GGUF language models on WebGPU and the CPU, natively and in the browser.
//!
//! Data flows top to bottom through the modules:
//! `gguf` (bytes -> metadata + tensor views) -> `model` (config + weights) ->
//! `tokenizer` (text <-> ids) -> `cpu` / `gpu` (forward pass) -> `sampler`
//! (logits -> id), glued together by `engine`.

pub mod arch;
pub mod chat;
pub mod cpu;
pub mod engine;
pub mod error;
pub mod gguf;
/// The WebGPU backend, behind the on-by-default `gpu` feature.
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod grammar;
pub mod memory;
pub mod model;
pub mod openai;
pub mod quant;
pub mod sampler;
pub mod source;
pub mod synthetic;
pub mod tokenizer;

/// Native-only: huge-page weight buffers for the CLI and tests.
#[cfg(not(target_arch = "wasm32"))]
pub mod native;
/// Native-only: the thread pool behind the CPU engine's `Parallel`.
#[cfg(not(target_arch = "wasm32"))]
pub mod pool;

/// The browser package: `WasmModel` and its JS API (needs the `gpu` feature).
#[cfg(all(target_arch = "wasm32", feature = "gpu"))]
pub mod web;

pub use error::{Error, Result};
