//! Submitting steps: which op lists a step runs (`plan`), recording its
//! command buffer (ahead of time while the GPU runs the previous one),
//! writing its inputs, submitting it, and feeding a step the previous
//! step's pick on the GPU (`submit_fed`, `picked`).

use super::device::Copy;
use super::kernels::{self, Op};
use super::ops::sample_ops;
use super::GpuBackend;
use crate::error::{Error, Result};
use crate::sampler::{Sampler, SamplerParams};

impl GpuBackend {
    fn validate(&self, tokens: &[u32], pos: usize) -> Result<()> {
        let n = tokens.len();
        if n == 0 || n > self.max_batch {
            return Err(Error::InvalidArgument(format!(
                "batch of {n} tokens (1..={} allowed)",
                self.max_batch
            )));
        }
        if pos + n > self.ctx {
            return Err(Error::ContextOverflow {
                needed: pos + n,
                context: self.ctx,
            });
        }
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= self.vocab) {
            return Err(Error::BadToken {
                id: bad,
                vocab: self.vocab,
            });
        }
        self.gpu.check()
    }

    /// Which keys `n` tokens at `pos` attend, as far as the layer list
    /// goes: past SPLIT_KEYS keys one token attends in one dispatch up to
    /// `mid_keys` keys (`layers_mid`, its first tier that holds them), in
    /// splits past them (`layers_long`; in split.wgsl's from the first
    /// tier of `layers_deep`, each tier from its own key count on), and a
    /// batch in tiles (`layers_flash`), where those lists exist. Up to
    /// SPLIT_KEYS keys both keep llama.cpp's f16 accumulation in key order
    /// (the chunked kernel; few.wgsl for one token).
    pub(super) fn keys(&self, n: usize, pos: usize) -> Keys {
        if n == 1 {
            if pos < kernels::SPLIT_KEYS {
                Keys::Few
            } else if let Some(t) = self.layers_mid.iter().position(|(mk, _)| pos < *mk) {
                Keys::Mid(t)
            } else if let Some(t) = self
                .layers_deep
                .iter()
                .rposition(|(from, _)| pos + 1 >= *from)
            {
                Keys::Deep(t)
            } else if !self.layers_long.is_empty() {
                Keys::Long
            } else {
                Keys::Few
            }
        } else if pos + n > kernels::SPLIT_KEYS && !self.layers_flash.is_empty() {
            Keys::Long
        } else {
            Keys::Few
        }
    }

    /// The layer list for `n` tokens attending `keys` (as `keys` says).
    pub(super) fn layer_list(&self, n: usize, keys: Keys) -> &[Op] {
        match (n, keys) {
            (1, Keys::Deep(t)) => &self.layers_deep[t].1,
            (1, Keys::Long) => &self.layers_long,
            (1, Keys::Mid(t)) => &self.layers_mid[t].1,
            (1, Keys::Few) => &self.layers_one,
            (_, Keys::Few) => &self.layers,
            (_, _) => &self.layers_flash,
        }
    }

    /// The op lists for `n` tokens (`long`: see `long`) and `tail`, and
    /// the copy that follows (an id goes to readback buffer `slot`).
    fn plan(&self, n: u32, keys: Keys, tail: Tail, slot: usize) -> (Vec<&[Op]>, Vec<Copy<'_>>) {
        let layers = self.layer_list(n as usize, keys);
        let mut ops: Vec<&[Op]> = vec![&self.embed, layers];
        let mut copies = Vec::new();
        match tail {
            Tail::None => {}
            Tail::Logits => {
                ops.push(&self.head);
                copies.push((&self.s.logits, &self.s.read_logits, self.vocab as u64 * 4));
            }
            Tail::Argmax => {
                ops.extend([&self.head[..], &self.argmax[..]]);
                copies.push((&self.s.argmax, &self.s.read_id[slot], 4));
            }
            Tail::MaskedArgmax => {
                ops.extend([&self.head[..], &self.masked_argmax[..]]);
                copies.push((&self.s.argmax, &self.s.read_id[slot], 4));
            }
            Tail::Sample => {
                ops.extend([&self.head[..], self.sampler_ops()]);
                copies.push((&self.s.argmax, &self.s.read_id[slot], 4));
            }
        }
        (ops, copies)
    }

    /// The GPU sampler's ops, built the first time a step samples.
    fn sampler_ops(&self) -> &[Op] {
        self.sample.get_or_init(|| {
            sample_ops(
                &self.gpu,
                &self.kernels,
                &self.s.logits,
                &self.s.argmax,
                &self.s.sample,
                self.vocab,
            )
        })
    }

    /// One command buffer for `r`; it reads the tokens and the position
    /// from buffers written just before its submit (a fed step copies its
    /// token from the previous step's pick first), so it can be recorded
    /// ahead of time.
    fn encode(&self, r: Recipe) -> wgpu::CommandBuffer {
        let (ops, copies) = self.plan(r.n, r.keys, r.tail, r.slot);
        let feed: &[Copy] = if r.fed {
            &[(&self.s.argmax, &self.s.tokens, 4)]
        } else {
            &[]
        };
        self.gpu
            .encode(feed, &ops, (r.n, Some(r.pos as u32)), &copies, None)
    }

    /// `r`'s command buffer: the one recorded ahead if it matches.
    fn command_buffer(&mut self, r: Recipe) -> wgpu::CommandBuffer {
        match self.ahead.take() {
            Some((a, cb)) if a == r => cb,
            _ => self.encode(r),
        }
    }

    /// Write the tokens and position for the next submit.
    pub(super) fn write_inputs(&self, tokens: &[u32], pos: usize) -> Result<()> {
        self.validate(tokens, pos)?;
        let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        self.gpu.queue.write_buffer(&self.s.tokens, 0, &bytes);
        self.gpu
            .write_step(&self.s.step, pos as u32, tokens.len() as u32);
        Ok(())
    }

    /// Submit the layers for `tokens` and, with `tail`, the LM head and what
    /// follows it (an id to readback buffer 0). A single-token sampling step
    /// uses the command buffer recorded during the previous one, if any,
    /// and records the next while the GPU runs (WEBGGUF_GPU_PIPELINE=0
    /// turns that off). Anything submitted here ends a fed step's claim.
    pub(super) fn submit(
        &mut self,
        tokens: &[u32],
        pos: usize,
        tail: Tail,
    ) -> Result<wgpu::SubmissionIndex> {
        self.fed = None;
        self.write_inputs(tokens, pos)?;
        let r = Recipe {
            n: tokens.len() as u32,
            pos,
            keys: self.keys(tokens.len(), pos),
            tail,
            fed: false,
            slot: 0,
        };
        let cb = self.command_buffer(r);
        let sub = self.gpu.queue.submit([cb]);
        if self.pipeline
            && r.n == 1
            && matches!(tail, Tail::Argmax | Tail::MaskedArgmax | Tail::Sample)
        {
            let next = Recipe {
                pos: pos + 1,
                keys: self.keys(1, pos + 1),
                ..r
            };
            self.ahead = Some((next, self.encode(next)));
        }
        Ok(sub)
    }

    /// Submit the step at `pos` (ending in `tail`, for `sampler`) whose
    /// token is the pick of the step just submitted (into readback buffer
    /// `slot`), and record the one after it (back to the other slot) while
    /// the GPU runs.
    fn submit_fed(
        &mut self,
        pos: usize,
        slot: usize,
        tail: Tail,
        sampler: Option<(u64, SamplerParams)>,
    ) -> Result<()> {
        self.gpu.check()?;
        self.gpu.write_step(&self.s.step, pos as u32, 1);
        let r = Recipe {
            n: 1,
            pos,
            keys: self.keys(1, pos),
            tail,
            fed: true,
            slot,
        };
        let cb = self.command_buffer(r);
        let sub = self.gpu.queue.submit([cb]);
        self.fed = Some(Fed {
            pos,
            slot,
            sub,
            token: None,
            tail,
            sampler,
        });
        if self.pipeline {
            let next = Recipe {
                slot: 1 - slot,
                pos: pos + 1,
                keys: self.keys(1, pos + 1),
                ..r
            };
            self.ahead = Some((next, self.encode(next)));
        }
        Ok(())
    }

    /// Write `sampler`'s parameters, the penalized ids and the step's
    /// random number for the next submitted sampling step (`masked`: with
    /// the mask last written to `s.sample.mask`).
    pub(super) fn write_sample(&self, sampler: &mut Sampler, pen: &[u32], masked: bool) {
        let p = sampler.params();
        // The CPU sampler draws only when not greedy; so does this.
        let r = if p.temperature > 0.0 {
            sampler.draw()
        } else {
            0.0
        };
        self.s
            .sample
            .write(&self.gpu, self.vocab, &p, pen, r, masked);
    }

    /// Submit `tokens` at `pos` ending in `tail` (its inputs written) and
    /// read the id it picks; nothing is fed ahead (the next step depends
    /// on this pick through the host: a penalty's history, a grammar's
    /// mask).
    pub(super) async fn submit_read(
        &mut self,
        tokens: &[u32],
        pos: usize,
        tail: Tail,
    ) -> Result<u32> {
        let sub = self.submit(tokens, pos, tail)?;
        let pending = self.gpu.start_read(&self.s.read_id[0], 4);
        let b = self.gpu.finish_read(pending, Some(sub)).await?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A step whose pick depends on no history: `tokens` at `pos`, then the
    /// argmax, or with `sampler` (no penalty) the GPU sampler. When the fed
    /// step already submitted is exactly this one (same position, its token
    /// the pick it was fed, same tail, and for sampling the same sampler and
    /// parameters, whose random number it drew ahead, in order), it is not
    /// submitted again; with nothing else submitted in between, the GPU
    /// state it ran on is this call's.
    pub(super) async fn picked(
        &mut self,
        tokens: &[u32],
        pos: usize,
        mut sampler: Option<&mut Sampler>,
    ) -> Result<u32> {
        let n = tokens.len();
        let tail = if sampler.is_some() {
            Tail::Sample
        } else {
            Tail::Argmax
        };
        let who = sampler.as_ref().map(|s| (s.id(), s.params()));
        let (slot, sub) = match self.fed.take() {
            Some(f)
                if n == 1
                    && f.pos == pos
                    && f.token == Some(tokens[0])
                    && f.tail == tail
                    && f.sampler == who =>
            {
                (f.slot, f.sub)
            }
            _ => {
                if let Some(s) = sampler.as_deref_mut() {
                    self.write_sample(s, &[], false);
                }
                (0, self.submit(tokens, pos, tail)?)
            }
        };
        // The read is asked for before the fed step is submitted, so that it
        // completes with this step (see start_read); the fed step writes the
        // other readback buffer.
        let read_id = self.s.read_id[slot].clone();
        let pending = self.gpu.start_read(&read_id, 4);
        // Finish the read even if the fed step failed: a map left pending
        // would fail the buffer's next one.
        let fed = if self.feed && pos + n < self.ctx {
            if let Some(s) = sampler {
                self.write_sample(s, &[], false);
            }
            self.submit_fed(pos + n, 1 - slot, tail, who)
        } else {
            Ok(())
        };
        let b = self.gpu.finish_read(pending, Some(sub)).await;
        fed?;
        let b = b?;
        let id = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if let Some(f) = &mut self.fed {
            f.token = Some(id);
        }
        Ok(id)
    }

    pub(super) async fn logits_after(&mut self, tokens: &[u32], pos: usize) -> Result<()> {
        self.submit(tokens, pos, Tail::Logits)?;
        let bytes = self
            .gpu
            .read(&self.s.read_logits, self.vocab as u64 * 4)
            .await?;
        for (o, c) in self.logits.iter_mut().zip(bytes.chunks_exact(4)) {
            *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Ok(())
    }
}

/// Which attention a step's layer list runs (`GpuBackend::keys`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Keys {
    /// Up to SPLIT_KEYS keys: the chunked kernel.
    Few,
    /// More: splits (one token) or tiles (a batch).
    Long,
    /// One token and at most the keys of mid.wgsl's tier t (the first
    /// that holds them): its list.
    Mid(usize),
    /// One token and at least the keys of split.wgsl's tier t (the last
    /// that it reaches): its list.
    Deep(usize),
}

/// What a recorded command buffer runs: `n` tokens at `pos` attending
/// `keys` and `tail`, with the token written by the host or (`fed`) the
/// previous step's pick, and an id copied to readback buffer `slot`. The
/// position is part of it because decode's split dispatches are sized by
/// the keys (`kernels::SplitGrid`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Recipe {
    n: u32,
    pos: usize,
    keys: Keys,
    tail: Tail,
    fed: bool,
    slot: usize,
}

/// A step submitted before its token was known on the CPU: it runs at
/// `pos` on the pick of the step before, which is `token` once read, and
/// ends in `tail` (for sampling: with a random number drawn ahead from the
/// sampler with this id and these parameters).
pub(super) struct Fed {
    pos: usize,
    slot: usize,
    sub: wgpu::SubmissionIndex,
    token: Option<u32>,
    tail: Tail,
    sampler: Option<(u64, SamplerParams)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    None,
    Logits,
    Argmax,
    /// The argmax of the logits a grammar allows (the mask written before
    /// the submit).
    MaskedArgmax,
    /// The GPU sampler, with parameters (and a mask) written before the
    /// submit.
    Sample,
}
