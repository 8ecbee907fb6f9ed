//! Next-token selection: greedy, or llama.cpp's chain of repetition penalty,
//! top-k, top-p, min-p and temperature, drawn from a seeded generator so a
//! run is reproducible.

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplerParams {
    /// 0 means greedy.
    pub temperature: f32,
    /// 0 disables.
    pub top_k: usize,
    /// 1 disables.
    pub top_p: f32,
    /// 0 disables.
    pub min_p: f32,
    /// 1 disables.
    pub repeat_penalty: f32,
    /// How many recent tokens the penalty looks at.
    pub repeat_last_n: usize,
    pub seed: u64,
}

impl Default for SamplerParams {
    fn default() -> Self {
        SamplerParams {
            temperature: 0.0,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.0,
            repeat_last_n: 64,
            seed: 0,
        }
    }
}

impl SamplerParams {
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::InvalidArgument(what.to_string()));
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return bad("temperature must be >= 0");
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return bad("top_p must be in (0, 1]");
        }
        if !(0.0..=1.0).contains(&self.min_p) {
            return bad("min_p must be in [0, 1]");
        }
        if !(self.repeat_penalty.is_finite() && self.repeat_penalty > 0.0) {
            return bad("repeat_penalty must be > 0");
        }
        Ok(())
    }
}

/// PCG32: tiny, fast, and identical on every platform.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
    inc: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut r = Rng {
            state: 0,
            inc: (seed << 1) | 1,
        };
        r.next_u32();
        r.state = r.state.wrapping_add(seed ^ 0x853c_49e6_748f_ea9b);
        r.next_u32();
        r
    }
    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(self.inc);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }
    /// Uniform in [0, 1).
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }
}

pub struct Sampler {
    pub params: SamplerParams,
    rng: Rng,
    /// (logit or probability, id), sized to the vocabulary once.
    cand: Vec<(f32, u32)>,
    /// Unique per sampler: the GPU backend draws a step's random number
    /// ahead of time and may only use it for the sampler it came from.
    id: u64,
    /// Per-request adjustments beyond the llama.cpp chain (OpenAI's
    /// logit_bias, frequency/presence penalties, logprobs, and a grammar's
    /// allowed-token mask); see [`Extras`].
    pub extras: Extras,
}

/// Adjustments a request may add to sampling. Any of them makes a step
/// depend on the host (the mask changes with each token, logprobs need the
/// logits), so the GPU backend never feeds such a step ahead. It applies
/// the mask itself (uploaded per step); for the rest it reads the logits
/// back and samples here ([`Extras::needs_logits`]).
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// Added to a token's logit (OpenAI's `logit_bias`, -100..100).
    pub bias: Vec<(u32, f32)>,
    /// OpenAI's penalties over the generated tokens: a token seen `c` times
    /// loses `c * frequency + (c > 0) * presence` from its logit.
    pub frequency: f32,
    pub presence: f32,
    /// The allowed tokens of this step, one bit per id in 32-bit words
    /// (bit `i % 32` of word `i / 32`); `None` allows all. Set before each
    /// step by a grammar.
    pub mask: Option<Vec<u32>>,
    /// Record the chosen token's log-probability and this many of the most
    /// likely alternatives (OpenAI's `logprobs`/`top_logprobs`).
    pub logprobs: Option<usize>,
    /// What the last `sample` recorded when `logprobs` is set.
    pub last: Option<TokenLogprobs>,
    /// Where the generated tokens start in the history `sample` is given
    /// (OpenAI's penalties count only those).
    pub prompt_len: usize,
}

/// The log-probabilities of a step, over the logits after bias, penalties
/// and mask (before temperature, as OpenAI reports them).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprobs {
    pub id: u32,
    pub logprob: f32,
    pub top: Vec<(u32, f32)>,
}

impl Extras {
    /// Whether anything beyond the llama.cpp chain applies.
    pub fn active(&self) -> bool {
        self.mask.is_some() || self.needs_logits()
    }

    /// Whether a step needs its logits on the host: everything but the
    /// mask (which the GPU backend applies itself).
    pub fn needs_logits(&self) -> bool {
        !self.bias.is_empty()
            || self.frequency != 0.0
            || self.presence != 0.0
            || self.logprobs.is_some()
    }

    /// Whether the mask (if any) allows `id`.
    pub fn allows(&self, id: u32) -> bool {
        match &self.mask {
            None => true,
            Some(m) => m
                .get(id as usize / 32)
                .is_some_and(|w| w >> (id % 32) & 1 == 1),
        }
    }

    /// Apply bias, penalties (over `generated`) and the mask to `logits`.
    fn apply(&self, logits: &mut [f32], generated: &[u32]) {
        for &(id, b) in &self.bias {
            if let Some(l) = logits.get_mut(id as usize) {
                *l += b;
            }
        }
        if self.frequency != 0.0 || self.presence != 0.0 {
            let mut counts = std::collections::HashMap::<u32, u32>::new();
            for &t in generated {
                *counts.entry(t).or_default() += 1;
            }
            for (t, c) in counts {
                if let Some(l) = logits.get_mut(t as usize) {
                    *l -= c as f32 * self.frequency + self.presence;
                }
            }
        }
        if let Some(m) = &self.mask {
            for (i, l) in logits.iter_mut().enumerate() {
                let allowed = m.get(i / 32).is_some_and(|w| w >> (i % 32) & 1 == 1);
                if !allowed {
                    *l = f32::NEG_INFINITY;
                }
            }
        }
    }

    fn record(&mut self, logits: &[f32], id: u32) {
        let Some(n) = self.logprobs else {
            return;
        };
        let max = logits.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
        let lse = max + logits.iter().map(|&l| (l - max).exp()).sum::<f32>().ln();
        let lp = |l: f32| {
            if l == f32::NEG_INFINITY {
                -9999.0
            } else {
                l - lse
            }
        };
        let mut top: Vec<(u32, f32)> = Vec::new();
        if n > 0 {
            let mut all: Vec<(u32, f32)> = logits
                .iter()
                .enumerate()
                .filter(|(_, l)| l.is_finite())
                .map(|(i, &l)| (i as u32, l))
                .collect();
            let k = n.min(all.len());
            if k > 0 {
                all.select_nth_unstable_by(k - 1, |a, b| b.1.total_cmp(&a.1));
                all.truncate(k);
                all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            }
            top = all.into_iter().map(|(i, l)| (i, lp(l))).collect();
        }
        self.last = Some(TokenLogprobs {
            id,
            logprob: logits.get(id as usize).map_or(-9999.0, |&l| lp(l)),
            top,
        });
    }
}

impl Sampler {
    pub fn new(params: SamplerParams, vocab: usize) -> Result<Sampler> {
        params.validate()?;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Ok(Sampler {
            params,
            rng: Rng::new(params.seed),
            cand: Vec::with_capacity(vocab),
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            extras: Extras::default(),
        })
    }

    pub fn params(&self) -> SamplerParams {
        self.params
    }

    /// This sampler's identity (no two samplers share one).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The tokens the repetition penalty applies to: each distinct token of
    /// the last `repeat_last_n` of `recent` once, as llama.cpp does.
    pub fn penalized(&self, recent: &[u32]) -> Vec<u32> {
        if self.params.repeat_penalty == 1.0 {
            return Vec::new();
        }
        let start = recent.len().saturating_sub(self.params.repeat_last_n);
        let window = &recent[start..];
        let mut out = Vec::new();
        for (i, &tok) in window.iter().enumerate() {
            if !window[..i].contains(&tok) {
                out.push(tok);
            }
        }
        out
    }

    /// The next random number of the draw, for a sampler that runs the
    /// chain elsewhere (the GPU) but keeps this one's random sequence.
    pub fn draw(&mut self) -> f32 {
        self.rng.next_f32()
    }

    /// Pick the next token. `logits` is modified in place by the penalty;
    /// `recent` are the tokens seen so far (prompt and generated).
    /// [`Extras`] apply first.
    pub fn sample(&mut self, logits: &mut [f32], recent: &[u32]) -> u32 {
        if self.extras.active() {
            let generated = recent.get(self.extras.prompt_len..).unwrap_or(&[]);
            self.extras.apply(logits, generated);
        }
        let id = self.chain(logits, recent);
        if self.extras.logprobs.is_some() {
            self.extras.record(logits, id);
        }
        id
    }

    fn chain(&mut self, logits: &mut [f32], recent: &[u32]) -> u32 {
        let p = self.params;
        if p.repeat_penalty != 1.0 {
            for tok in self.penalized(recent) {
                if let Some(l) = logits.get_mut(tok as usize) {
                    *l = if *l > 0.0 {
                        *l / p.repeat_penalty
                    } else {
                        *l * p.repeat_penalty
                    };
                }
            }
        }
        if p.temperature <= 0.0 {
            return argmax(logits);
        }

        self.cand.clear();
        // Masked-out tokens (-inf) are never candidates, so the fallback
        // pick at the end of the draw cannot land on one.
        self.cand.extend(
            logits
                .iter()
                .enumerate()
                .filter(|(_, &l)| l > f32::NEG_INFINITY)
                .map(|(i, &l)| (l, i as u32)),
        );
        if self.cand.is_empty() {
            return argmax(logits);
        }
        let by_logit_desc = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0);
        let k = if p.top_k == 0 {
            self.cand.len()
        } else {
            p.top_k.min(self.cand.len())
        };
        if k < self.cand.len() {
            self.cand.select_nth_unstable_by(k - 1, by_logit_desc);
            self.cand.truncate(k);
        }
        self.cand.sort_unstable_by(by_logit_desc);

        // Softmax over the survivors (at temperature 1) for top-p and min-p.
        softmax(&mut self.cand, 1.0);
        if p.top_p < 1.0 {
            let mut cum = 0.0;
            let mut keep = self.cand.len();
            for (i, c) in self.cand.iter().enumerate() {
                cum += c.0;
                if cum >= p.top_p {
                    keep = i + 1;
                    break;
                }
            }
            self.cand.truncate(keep.max(1));
        }
        if p.min_p > 0.0 {
            let floor = self.cand[0].0 * p.min_p;
            let keep = self.cand.iter().take_while(|c| c.0 >= floor).count();
            self.cand.truncate(keep.max(1));
        }
        // Temperature reshapes what is left: p^(1/T), renormalised.
        let inv_t = 1.0 / p.temperature;
        for c in &mut self.cand {
            c.0 = c.0.max(f32::MIN_POSITIVE).ln() * inv_t;
        }
        softmax(&mut self.cand, 1.0);

        let r = self.rng.next_f32();
        let mut cum = 0.0;
        for c in &self.cand {
            cum += c.0;
            if r < cum {
                return c.1;
            }
        }
        self.cand[self.cand.len() - 1].1
    }
}

/// Index of the largest logit; the lowest index wins ties, as in llama.cpp.
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    best as u32
}

/// In-place softmax over the first element of each pair (sorted descending).
fn softmax(c: &mut [(f32, u32)], t: f32) {
    let max = c.iter().fold(f32::NEG_INFINITY, |m, x| m.max(x.0));
    let mut sum = 0.0;
    for x in c.iter_mut() {
        x.0 = ((x.0 - max) / t).exp();
        sum += x.0;
    }
    for x in c.iter_mut() {
        x.0 /= sum;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(t: f32) -> SamplerParams {
        SamplerParams {
            temperature: t,
            seed: 42,
            ..SamplerParams::default()
        }
    }

    #[test]
    fn greedy_picks_argmax_and_first_of_ties() {
        let mut s = Sampler::new(params(0.0), 4).unwrap();
        assert_eq!(s.sample(&mut [0.1, 3.0, 3.0, -1.0], &[]), 1);
    }

    #[test]
    fn same_seed_same_draws_and_draws_follow_probabilities() {
        let logits: Vec<f32> = (0..50).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let p = SamplerParams {
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            ..params(1.0)
        };
        let draw = |seed| {
            let mut s = Sampler::new(SamplerParams { seed, ..p }, 50).unwrap();
            (0..2000)
                .map(|_| s.sample(&mut logits.clone(), &[]))
                .collect::<Vec<_>>()
        };
        let a = draw(7);
        assert_eq!(a, draw(7));
        assert_ne!(a, draw(8));
        // Empirical frequency of the most likely token vs its softmax probability.
        let max = logits.iter().cloned().fold(f32::MIN, f32::max);
        let z: f32 = logits.iter().map(|l| (l - max).exp()).sum();
        let top = argmax(&logits);
        let expect = 1.0 / z;
        let got = a.iter().filter(|&&t| t == top).count() as f32 / a.len() as f32;
        assert!((got - expect).abs() < 0.04, "freq {got} vs prob {expect}");
    }

    #[test]
    fn top_k_one_is_greedy_and_min_p_cuts_the_tail() {
        let logits = [1.0, 5.0, 2.0, 4.9];
        let mut s = Sampler::new(
            SamplerParams {
                top_k: 1,
                ..params(1.5)
            },
            4,
        )
        .unwrap();
        for _ in 0..50 {
            assert_eq!(s.sample(&mut logits.clone(), &[]), 1);
        }
        let p = SamplerParams {
            top_k: 0,
            top_p: 1.0,
            min_p: 0.5,
            ..params(1.0)
        };
        let mut s = Sampler::new(p, 4).unwrap();
        for _ in 0..200 {
            let t = s.sample(&mut logits.clone(), &[]);
            assert!(t == 1 || t == 3, "token {t} should have been cut by min_p");
        }
    }

    #[test]
    fn repeat_penalty_demotes_seen_tokens() {
        let p = SamplerParams {
            repeat_penalty: 2.0,
            ..params(0.0)
        };
        let mut s = Sampler::new(p, 3).unwrap();
        let mut logits = [3.0, 2.0, -1.0];
        assert_eq!(s.sample(&mut logits, &[0, 0]), 1);
        assert_eq!(logits, [1.5, 2.0, -1.0]);
    }

    #[test]
    fn bad_params_are_rejected() {
        assert!(Sampler::new(
            SamplerParams {
                top_p: 0.0,
                ..params(1.0)
            },
            3
        )
        .is_err());
        assert!(Sampler::new(
            SamplerParams {
                temperature: f32::NAN,
                ..params(1.0)
            },
            3
        )
        .is_err());
    }
}
