//! TEMPORARY stub; replaced by the tokenizer branch.
use crate::error::Result;
use crate::gguf::Gguf;
pub struct Tokenizer {
    n: usize,
    bos: Option<u32>,
    add_bos: bool,
    eos: Option<u32>,
}
impl Tokenizer {
    pub fn from_gguf(g: &Gguf) -> Result<Tokenizer> {
        Ok(Tokenizer {
            n: g.get_array("tokenizer.ggml.tokens").map_or(0, |a| a.len()),
            bos: g.get_u64("tokenizer.ggml.bos_token_id").map(|v| v as u32),
            eos: g.get_u64("tokenizer.ggml.eos_token_id").map(|v| v as u32),
            add_bos: g.get_bool("tokenizer.ggml.add_bos_token").unwrap_or(true),
        })
    }
    pub fn vocab_size(&self) -> usize {
        self.n
    }
    pub fn bos(&self) -> Option<u32> {
        self.bos
    }
    pub fn eos(&self) -> Option<u32> {
        self.eos
    }
    pub fn add_bos(&self) -> bool {
        self.add_bos
    }
    pub fn is_eog(&self, id: u32) -> bool {
        Some(id) == self.eos
    }
    pub fn encode(&self, _text: &str, _a: bool, _p: bool) -> Vec<u32> {
        vec![]
    }
    pub fn token_text(&self, _id: u32) -> Option<&str> {
        None
    }
    pub fn decode(&self, _ids: &[u32]) -> String {
        String::new()
    }
}
#[derive(Default)]
pub struct StreamDecoder;
impl StreamDecoder {
    pub fn new() -> Self {
        StreamDecoder
    }
    pub fn push(&mut self, _t: &Tokenizer, _id: u32) -> String {
        String::new()
    }
    pub fn finish(&mut self) -> String {
        String::new()
    }
}
