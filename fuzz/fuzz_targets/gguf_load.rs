//! Bytes -> the whole load path (parse, config, tokenizer, weights); when a
//! file loads, one forward step on the CPU.
#![no_main]

use libfuzzer_sys::fuzz_target;
use webgguf::cpu::Serial;
use webgguf::engine::{CpuBackend, Engine, Loaded};
use webgguf::model::LoadOptions;

fuzz_target!(|data: &[u8]| {
    let Ok(l) = Loaded::from_bytes(data.to_vec(), LoadOptions::default()) else {
        return;
    };
    let vocab = l.config.vocab_size as u32;
    let Ok(backend) = CpuBackend::new(l.config.clone(), l.weights, 8, 4, Box::new(Serial)) else {
        return;
    };
    let mut e = Engine::with_backend(l.config, l.tokenizer, l.info, Box::new(backend), || 0.0);
    let prompt = [1 % vocab, 3 % vocab];
    let _ = pollster::block_on(e.generate(&prompt, 1, Default::default(), &mut |_, _| true));
});
