//! llama.cpp's reference files and the teacher-forced comparison, free of
//! files and threads so the browser tests (tests/web.rs) share them with the
//! native ones.

#[derive(Debug, Clone)]
pub struct Reference {
    pub model: String,
    pub prompt: String,
    pub prompt_ids: Vec<u32>,
    pub generated_ids: Vec<u32>,
    pub top10: Vec<Vec<(u32, f32)>>,
}

/// The `references` of a ../shared/reference/*.json file.
pub fn parse_references(text: &str) -> Vec<Reference> {
    let v: serde_json::Value = serde_json::from_str(text).expect("reference JSON");
    let ids = |x: &serde_json::Value| -> Vec<u32> {
        x.as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap() as u32)
            .collect()
    };
    v["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| Reference {
            model: r["model"].as_str().unwrap().to_string(),
            prompt: r["prompt"].as_str().unwrap().to_string(),
            prompt_ids: ids(&r["prompt_ids"]),
            generated_ids: ids(&r["generated_ids"]),
            top10: r["top10_logits_per_step"]
                .as_array()
                .unwrap()
                .iter()
                .map(|step| {
                    step.as_array()
                        .unwrap()
                        .iter()
                        .map(|p| (p[0].as_u64().unwrap() as u32, p[1].as_f64().unwrap() as f32))
                        .collect()
                })
                .collect(),
        })
        .collect()
}

/// The tokens to feed for a teacher-forced run of `r` (prompt, then every
/// generated id but the last) and the position of the first logits compared.
pub fn forced_input(r: &Reference) -> (Vec<u32>, usize) {
    let mut toks = r.prompt_ids.clone();
    toks.extend(&r.generated_ids[..r.generated_ids.len() - 1]);
    (toks, r.prompt_ids.len() - 1)
}

/// Compare our per-step top-k (from `Engine::logits_at`) with llama.cpp's:
/// the steps where our top-1 differs outside a near-tie (< 0.5 apart in
/// llama.cpp's logits), and the largest |dlogit| over llama.cpp's top-10.
pub fn compare_forced(steps: &[Vec<(u32, f32)>], r: &Reference) -> (Vec<usize>, f32) {
    assert_eq!(steps.len(), r.top10.len(), "{}: step count", r.model);
    let mut bad = Vec::new();
    let mut worst = 0f32;
    for (i, (ours, theirs)) in steps.iter().zip(&r.top10).enumerate() {
        let their = |id: u32| theirs.iter().find(|p| p.0 == id).map(|p| p.1);
        let (o1, t1) = (ours[0].0, theirs[0].0);
        let near_tie = their(o1).is_some_and(|l| theirs[0].1 - l < 0.5);
        if o1 != t1 && !near_tie {
            bad.push(i);
        }
        for &(id, tl) in theirs {
            if let Some(&(_, ol)) = ours.iter().find(|p| p.0 == id) {
                worst = worst.max((ol - tl).abs());
            }
        }
    }
    (bad, worst)
}
