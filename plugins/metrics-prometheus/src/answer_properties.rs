//! Property tests of [`decode`](super::decode): random and mutated bodies (the store's
//! answer is untrusted input) finish quickly, without a panic, and a refusal is a serde
//! error that says where (line and column). `ANSWER_CASES` cases per property in the
//! default run; the `#[ignore]`d long run takes 25 times as many.

use proptest::{prelude::*, test_runner::TestRunner};

use super::{Answer, decode};

const ANSWER_CASES: u32 = 3_000;

/// Label and value text: ASCII, escapes, non-ASCII, and JSON-significant characters.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{0,8}",
        "[\\\\\"\\{\\}\\[\\],:a-z\\u{e9}\\u{1F600}]{0,12}",
        Just("\\u00e9\\n\\\"".to_string()),
        Just("\\ud800".to_string()),
    ]
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<f64>().prop_map(|f| format!("{f:?}")),
        any::<i64>().prop_map(|i| i.to_string()),
        Just("NaN".into()),
        Just("+Inf".into()),
        Just("1e999".into()),
        Just("".into()),
    ]
}

fn sample() -> impl Strategy<Value = String> {
    (number(), number(), any::<bool>()).prop_map(|(t, v, quoted)| {
        if quoted { format!("[{t},\"{v}\"]") } else { format!("[{t},{v}]") }
    })
}

fn series(matrix: bool) -> impl Strategy<Value = String> {
    (prop::collection::vec((text(), text()), 0..4), prop::collection::vec(sample(), 0..4)).prop_map(
        move |(labels, samples)| {
            let labels: Vec<String> =
                labels.iter().map(|(k, v)| format!("\"{k}\":\"{v}\"")).collect();
            let at = if matrix {
                format!("\"values\":[{}]", samples.join(","))
            } else {
                format!("\"value\":{}", samples.first().cloned().unwrap_or_else(|| "[]".into()))
            };
            format!("{{\"metric\":{{{}}},{at}}}", labels.join(","))
        },
    )
}

/// Bodies shaped like the store's answers (every result type, errors, extra fields), with
/// wrong types where a value goes.
fn answer() -> impl Strategy<Value = String> {
    let kind =
        prop_oneof![Just("vector"), Just("matrix"), Just("scalar"), Just("string"), Just("bogus")];
    (kind, prop::collection::vec(any::<bool>().prop_flat_map(series), 0..5), text(), any::<u8>())
        .prop_map(|(kind, series, extra, shape)| {
            let result = match kind {
                "scalar" | "string" => series.first().cloned().unwrap_or_else(|| "[1,\"2\"]".into()),
                _ => format!("[{}]", series.join(",")),
            };
            match shape % 6 {
                0 => format!(
                    "{{\"status\":\"error\",\"errorType\":\"{extra}\",\"error\":\"{extra}\"}}"
                ),
                1 => format!("{{\"data\":{{\"result\":{result},\"resultType\":\"{kind}\"}},\"status\":\"success\"}}"),
                2 => format!("{{\"status\":\"success\",\"data\":{{\"resultType\":\"{kind}\",\"result\":{result}}},\"warnings\":[\"{extra}\"],\"{extra}\":1}}"),
                3 => format!("{{\"status\":\"{extra}\",\"data\":null}}"),
                _ => format!("{{\"status\":\"success\",\"data\":{{\"resultType\":\"{kind}\",\"result\":{result}}}}}"),
            }
        })
}

/// An answer with bytes replaced, inserted, removed or cut off.
fn mutated() -> impl Strategy<Value = Vec<u8>> {
    (answer(), prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..4), 1..6))
        .prop_map(|(body, edits)| {
            let mut bytes = body.into_bytes();
            for (at, byte, op) in edits {
                if bytes.is_empty() {
                    break;
                }
                let i = at.index(bytes.len());
                match op {
                    0 => bytes[i] = byte,
                    1 => bytes.insert(i, byte),
                    2 => {
                        bytes.remove(i);
                    }
                    _ => bytes.truncate(i),
                }
            }
            bytes
        })
}

/// Decodes `body`: it returns within a second, and a refusal names the position.
fn check(body: &[u8]) -> Result<(), TestCaseError> {
    let started = std::time::Instant::now();
    let outcome = decode(body);
    prop_assert!(started.elapsed() < std::time::Duration::from_secs(1), "slow decode");
    match outcome {
        Ok(Answer::Data(_)) | Ok(Answer::Error(_)) => {}
        Err(e) => {
            let text = e.to_string();
            prop_assert!(!text.is_empty());
            prop_assert!(text.contains("line ") && text.contains("column "), "{text}");
        }
    }
    Ok(())
}

fn run(cases: u32) -> u32 {
    let config = ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() };
    let mut tried = 0;
    for strategy in [
        answer().prop_map(String::into_bytes).boxed(),
        mutated().boxed(),
        prop::collection::vec(any::<u8>(), 0..256).boxed(),
    ] {
        let mut runner = TestRunner::new(config.clone());
        runner.run(&strategy, |body| check(&body)).unwrap_or_else(|e| panic!("{e}"));
        tried += cases;
    }
    println!("answer decoder: {tried} bodies tried (shaped, mutated, random bytes)");
    tried
}

#[test]
fn random_and_mutated_answers_never_panic_and_refusals_say_where() {
    assert_eq!(run(ANSWER_CASES), 3 * ANSWER_CASES);
}

#[test]
#[ignore = "long run: cargo test -p metrics-prometheus --lib -- --ignored"]
fn random_and_mutated_answers_long_run() {
    run(ANSWER_CASES * 25);
}
