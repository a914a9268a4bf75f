//! The exposition-file parser against a reference implementation, prometheus-parse, on the
//! text both read the same way: the Prometheus text format with millisecond timestamps,
//! `# HELP`/`# TYPE` lines of untyped and counter metrics, `NaN`/`+Inf` values, and label
//! values without the characters prometheus-parse splits on (`,`, `=`, `}`, escapes).
//! Every series must hold the same samples in both.

use std::collections::BTreeMap;

type Samples = BTreeMap<(String, Vec<(String, String)>), Vec<(i64, u64)>>;

/// Reproducible pseudo-random numbers (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A NaN compares by its bits; every NaN the parsers make is the same one.
fn bits(v: f64) -> u64 {
    if v.is_nan() { f64::NAN.to_bits() } else { v.to_bits() }
}

fn exposition(rng: &mut Rng) -> String {
    let mut text = String::new();
    // One clock for the whole text: a series written twice stays in time order.
    let mut t = 1_700_000_000_000i64 + rng.below(1_000_000) as i64;
    let values = ["NaN", "+Inf", "-Inf", "0", "1e3", "-2.5", "3.25"];
    let series = 1 + rng.below(40);
    for s in 0..series {
        let name = format!("metric_{}", rng.below(6));
        if rng.below(4) == 0 {
            text.push_str(&format!("# HELP {name} Some help.\n# TYPE {name} counter\n"));
        }
        let mut labels: Vec<String> = (0..rng.below(5))
            .map(|l| format!("l{l}=\"v {}.é/:{}\"", rng.below(9), s % 3))
            .collect();
        if labels.is_empty() && rng.below(2) == 0 {
            labels.push(format!("only=\"{s}\""));
        }
        // No `name{}`: prometheus-parse skips such a line without a word (ours reads it).
        let head = if labels.is_empty() { name } else { format!("{name}{{{}}}", labels.join(",")) };
        for _ in 0..rng.below(30) {
            t += 1 + rng.below(30_000) as i64;
            let v = if rng.below(3) == 0 {
                values[rng.below(values.len() as u64) as usize].to_string()
            } else {
                format!("{}", rng.below(1_000_000) as f64 / 8.0)
            };
            text.push_str(&format!("{head} {v} {t}\n"));
        }
    }
    text
}

fn ours(text: &str) -> Samples {
    let store = metrics_store::parse::load_str(text, false).expect("our parser reads it");
    let mut out = Samples::new();
    for sd in &store.series {
        let mut labels: Vec<(String, String)> = sd
            .labels
            .iter()
            .map(|&(n, v)| (store.text(n).to_string(), store.text(v).to_string()))
            .collect();
        labels.sort();
        let samples = sd.samples.iter().map(|&(t, v)| (t as i64, bits(v))).collect();
        out.insert((store.text(sd.name).to_string(), labels), samples);
    }
    out
}

fn reference(text: &str) -> Samples {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("prometheus-parse reads it");
    let mut out = Samples::new();
    for s in scrape.samples {
        let v = match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            other => panic!("no histograms or summaries were written: {other:?}"),
        };
        let mut labels: Vec<(String, String)> =
            s.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        labels.sort();
        out.entry((s.metric, labels)).or_default().push((s.timestamp.timestamp_millis(), bits(v)));
    }
    out
}

#[test]
fn samples_equal_prometheus_parse_on_random_expositions() {
    let mut rng = Rng(0x853c_49e6_748f_ea9b);
    let mut compared = 0;
    for round in 0..100 {
        let text = exposition(&mut rng);
        let (a, b) = (ours(&text), reference(&text));
        let only_ours: Vec<_> = a.iter().filter(|(k, v)| b.get(*k) != Some(*v)).collect();
        let only_theirs: Vec<_> = b.iter().filter(|(k, v)| a.get(*k) != Some(*v)).collect();
        assert!(
            only_ours.is_empty() && only_theirs.is_empty(),
            "round {round}: ours {only_ours:?}\nprometheus-parse {only_theirs:?}"
        );
        compared += a.values().map(Vec::len).sum::<usize>();
    }
    assert!(compared > 10_000, "only {compared} samples compared");
}
