//! webgguf: GGUF language models on WebGPU and the CPU, natively and in the browser.
//!
//! Data flows top to bottom through the modules:
//! `gguf` (bytes -> metadata + tensor views) -> `model` (config + weights) ->
//! `tokenizer` (text <-> ids) -> `cpu` / `gpu` (forward pass) -> `sampler` (logits -> id),
//! glued together by `engine`.

pub mod error;
pub mod gguf;
pub mod quant;
pub mod tokenizer;

pub use error::{Error, Result};
