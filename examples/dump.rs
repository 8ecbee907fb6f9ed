fn main() {
    let p = std::env::args().nth(1).unwrap();
    let b = std::fs::read(&p).unwrap();
    let g = webgguf::gguf::Gguf::parse(&b).unwrap();
    let mut keys: Vec<_> = g.metadata.iter().collect();
    keys.sort_by_key(|(k, _)| k.to_string());
    for (k, v) in keys {
        let s = match v {
            webgguf::gguf::Value::Array(a) => format!(
                "[array {} x{}]",
                a.values.len(),
                format!("{:?}", a.values.first())
                    .chars()
                    .take(40)
                    .collect::<String>()
            ),
            v => format!("{:?}", v).chars().take(120).collect(),
        };
        println!("{k} = {s}");
    }
    for t in g.tensors.iter().take(14) {
        println!(
            "{} {:?} {:?} off={} size={}",
            t.name, t.ty, t.dims, t.offset, t.size
        );
    }
}
