//! Property tests of the parsers of untrusted input that run in the host: query
//! parameters (graph, dashboards, namespace metrics), durations, the OpenMetrics parser
//! and snapshot manifests. Random and mutated inputs, `CASES` per strategy in the default
//! run (25 times as many in the `#[ignore]`d long run): each parser returns within a
//! second, never panics, and each refusal is a clear error (non-empty, naming where or
//! what, never repeating what was sent). The Prometheus answer decoder has its own in
//! `plugins/metrics-prometheus/src/answer_properties.rs` (a cdylib cannot be linked here).

use std::time::{Duration, Instant};

use proptest::{
    prelude::*,
    strategy::BoxedStrategy,
    test_runner::{TestCaseError, TestRunner},
};

const CASES: u32 = 2_000;
const LONG: u32 = 25;
/// Put into values: a refusal that repeats it reflects request text.
const MARK: &str = "zqmarkqz";

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    })
}

/// Runs `check` on `cases` inputs of each strategy; the number tried.
fn run<T: std::fmt::Debug>(
    cases: u32,
    strategies: Vec<BoxedStrategy<T>>,
    check: impl Fn(&T) -> Result<(), TestCaseError>,
) -> u32 {
    let mut tried = 0;
    for s in strategies {
        runner(cases).run(&s, |input| check(&input)).unwrap_or_else(|e| panic!("{e}"));
        tried += cases;
    }
    tried
}

fn quick<R>(what: &str, f: impl FnOnce() -> R) -> Result<R, TestCaseError> {
    let started = Instant::now();
    let r = f();
    prop_assert!(started.elapsed() < Duration::from_secs(1), "{what} took {:?}", started.elapsed());
    Ok(r)
}

/// A refusal: says something, briefly, and does not repeat the request.
fn clear(what: &str, message: &str) -> Result<(), TestCaseError> {
    prop_assert!(!message.trim().is_empty(), "{what}: empty refusal");
    prop_assert!(message.len() < 600, "{what}: {message}");
    prop_assert!(!message.contains(MARK), "{what} repeats the request: {message}");
    Ok(())
}

/// Byte-level edits of `text` (replace, insert, remove, cut), kept valid UTF-8.
fn mutate(text: String) -> BoxedStrategy<String> {
    prop::collection::vec((any::<prop::sample::Index>(), any::<char>(), 0u8..5), 1..8)
        .prop_map(move |edits| {
            let mut chars: Vec<char> = text.chars().collect();
            for (at, c, op) in edits {
                if chars.is_empty() {
                    chars.push(c);
                    continue;
                }
                let i = at.index(chars.len());
                match op {
                    0 => chars[i] = c,
                    1 => chars.insert(i, c),
                    2 => {
                        chars.remove(i);
                    }
                    3 => chars.truncate(i),
                    _ => {
                        let dup: Vec<char> = chars[i..].iter().take(40).copied().collect();
                        chars.splice(i..i, dup);
                    }
                }
            }
            chars.into_iter().collect()
        })
        .boxed()
}

// ---- query parameters -------------------------------------------------------------------

const KEYS: &[&str] = &[
    "namespaces",
    "graphType",
    "duration",
    "queryTime",
    "appenders",
    "responseTimeQuantile",
    "groupBy",
    "injectServiceNodes",
    "boxBy",
    "rateGrpc",
    "rateHttp",
    "rateTcp",
    "includeIdleEdges",
    "format",
    "step",
    "rateInterval",
    "quantiles[]",
    "quantiles",
    "byLabels[]",
    "direction",
    "reporter",
    "requestProtocol",
    "filters[]",
    "avg",
    "rateFunc",
    "version",
    "destinationPrincipal",
    "sourcePrincipal",
    "type",
    "",
];

const VALUES: &[&str] = &[
    "bookinfo",
    "bookinfo,istio-system",
    "versionedApp",
    "app",
    "service",
    "workload",
    "60s",
    "1h",
    "10m",
    "0s",
    "-1",
    "1e309",
    "NaN",
    "0.99",
    "9999999999999999999999",
    "true",
    "false",
    "inbound",
    "outbound",
    "source",
    "destination",
    "both",
    "http",
    "grpc",
    "tcp",
    "sent",
    "total",
    "none",
    "irate",
    "rate",
    "cytoscape",
    "%zz",
    "%F0%9F%98%80",
    "%00",
    "a%2Cb",
    "",
    ",",
    "[]",
    "1700000000",
    "\u{e9}",
    "deadNode,responseTime",
];

fn query() -> BoxedStrategy<String> {
    let value = prop_oneof![
        prop::sample::select(VALUES).prop_map(str::to_string),
        "[ -~]{0,12}".prop_map(|v| format!("{v}{MARK}")),
        any::<String>().prop_map(|v| v.chars().take(16).collect()),
        (any::<u64>(), prop::sample::select(&["s", "m", "h", "d", "ms", "", "x"][..]))
            .prop_map(|(n, u)| format!("{n}{u}")),
    ];
    let pair = (prop::sample::select(KEYS), value, prop::sample::select(&["=", "", "=="][..]))
        .prop_map(|(k, v, eq)| format!("{k}{eq}{v}"));
    prop::collection::vec(pair, 0..8).prop_map(|p| p.join("&")).boxed()
}

fn check_query(q: &str) -> Result<(), TestCaseError> {
    use meshlens_dashboards::{AppParams, CustomParams, NamespaceMetricsParams};
    use meshlens_traffic::{GraphOptions, GraphSettings, GraphTarget};
    let settings = GraphSettings::default();
    let appenders: Vec<String> = ["deadNode", "responseTime"].map(String::from).to_vec();
    let now = 1_800_000_000;
    let targets = [
        GraphTarget::Namespaces,
        GraphTarget::App { namespace: "bookinfo".into(), app: "reviews".into() },
    ];
    for target in targets {
        if let Err(e) = quick("graph options", || {
            GraphOptions::parse(target.clone(), q, now, &appenders, &settings)
        })? {
            clear("graph options", &e.to_string())?;
        }
    }
    if let Err(e) = quick("app dashboard", || AppParams::parse(q))? {
        clear("app dashboard", &e.to_string())?;
    }
    if let Err(e) = quick("custom dashboard", || CustomParams::parse(q))? {
        clear("custom dashboard", &e.to_string())?;
    }
    if let Err(e) = quick("namespace metrics", || NamespaceMetricsParams::parse(q))? {
        clear("namespace metrics", &e.to_string())?;
    }
    Ok(())
}

fn query_strategies() -> Vec<BoxedStrategy<String>> {
    vec![query(), query().prop_flat_map(mutate).boxed(), any::<String>().boxed()]
}

#[test]
fn query_parameters() {
    let n = run(CASES, query_strategies(), |q: &String| check_query(q));
    println!("query parameters: {n} query strings tried, each on 5 parsers");
}

// ---- durations ---------------------------------------------------------------------------

fn duration_text() -> BoxedStrategy<String> {
    let unit = prop::sample::select(
        &["ns", "us", "\u{b5}s", "ms", "s", "m", "h", "d", "w", "y", "", "sec"][..],
    );
    let part = ("-?[0-9]{0,25}(\\.[0-9]{0,6})?", unit).prop_map(|(n, u)| format!("{n}{u}"));
    prop::collection::vec(part, 1..5).prop_map(|p| p.concat()).boxed()
}

fn check_duration(text: &str) -> Result<(), TestCaseError> {
    let prom = quick("prometheus duration", || meshlens_params::parse_prometheus_duration(text))?;
    quick("go duration", || meshlens_params::parse_go_duration(text))?;
    // A plain count of seconds reads as that many seconds.
    if let Some(n) = text.strip_suffix('s').and_then(|n| n.parse::<u64>().ok())
        && n < 1_000_000_000
        && !text.starts_with('+')
        && !text.starts_with('0')
    {
        prop_assert_eq!(prom, Some(Duration::from_secs(n)), "{}", text);
    }
    Ok(())
}

#[test]
fn durations() {
    let strategies = vec![
        duration_text(),
        duration_text().prop_flat_map(mutate).boxed(),
        any::<String>().boxed(),
    ];
    let n = run(CASES, strategies, |t: &String| check_duration(t));
    println!("durations: {n} texts tried, each on 2 parsers");
}

// ---- OpenMetrics ---------------------------------------------------------------------------

fn openmetrics() -> BoxedStrategy<(String, bool)> {
    let name = "[a-z_:][a-z0-9_:]{0,10}";
    let label = ("[a-z_]{1,6}", "[ -~]{0,8}")
        .prop_map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")));
    let value = prop_oneof![
        any::<f64>().prop_map(|f| format!("{f}")),
        Just("+Inf".to_string()),
        Just("NaN".to_string()),
        "[0-9.eE+-]{0,8}",
    ];
    let sample = (name, prop::collection::vec(label, 0..4), value, prop::option::of(any::<u32>()))
        .prop_map(|(n, l, v, t)| {
            let labels = if l.is_empty() { String::new() } else { format!("{{{}}}", l.join(",")) };
            match t {
                Some(t) => format!("{n}{labels} {v} {t}"),
                None => format!("{n}{labels} {v}"),
            }
        });
    let line = prop_oneof![
        6 => sample,
        1 => "[a-z_]{1,8}".prop_map(|n| format!("# TYPE {n} counter")),
        1 => "[a-z_]{1,8}".prop_map(|n| format!("# HELP {n} help text")),
        1 => Just("# EOF".to_string()),
        1 => Just(String::new()),
    ];
    (prop::collection::vec(line, 0..12), any::<bool>())
        .prop_map(|(lines, om)| (lines.join("\n") + "\n", om))
        .boxed()
}

fn check_openmetrics((text, om): &(String, bool)) -> Result<(), TestCaseError> {
    if let Err(e) = quick("openmetrics", || metrics_store::parse::load_str(text, *om))? {
        prop_assert!(e.starts_with("line "), "a refusal names the line: {e}");
        prop_assert!(e.len() < 600, "{e}");
    }
    Ok(())
}

#[test]
fn openmetrics_text() {
    let strategies = vec![
        openmetrics(),
        openmetrics().prop_flat_map(|(t, om)| mutate(t).prop_map(move |m| (m, om))).boxed(),
        (any::<String>(), any::<bool>()).boxed(),
    ];
    let n = run(CASES, strategies, check_openmetrics);
    println!("OpenMetrics parser: {n} texts tried");
}

// ---- snapshot manifests ---------------------------------------------------------------------

fn demo_documents() -> Vec<String> {
    let dir = integration_tests::server::workspace_root().join("config/demo");
    let mut docs = Vec::new();
    for f in ["bookinfo.yaml", "istio-system.yaml", "mesh-config.yaml"] {
        let text = std::fs::read_to_string(dir.join(f)).expect("demo manifest");
        docs.extend(text.split("\n---").map(str::to_string).filter(|d| d.trim().len() > 10));
    }
    docs
}

fn manifests() -> Vec<BoxedStrategy<String>> {
    let docs = demo_documents();
    let one = prop::sample::select(docs.clone());
    let several =
        prop::collection::vec(prop::sample::select(docs), 1..4).prop_map(|d| d.join("\n---\n"));
    vec![
        one.clone().prop_flat_map(mutate).boxed(),
        several.prop_flat_map(mutate).boxed(),
        // Lines of YAML shuffled and re-indented.
        one.prop_flat_map(|d| {
            let lines: Vec<String> = d.lines().map(str::to_string).collect();
            let n = lines.len();
            (Just(lines), prop::collection::vec((0..n.max(1), 0usize..6), 0..6))
        })
        .prop_map(|(mut lines, moves)| {
            for (i, indent) in moves {
                if i < lines.len() {
                    let l = lines.remove(i).trim_start().to_string();
                    let to = (i * 7 + indent) % (lines.len() + 1);
                    lines.insert(to, format!("{}{l}", " ".repeat(indent)));
                }
            }
            lines.join("\n")
        })
        .boxed(),
        any::<String>().boxed(),
    ]
}

fn check_manifest(text: &str) -> Result<(), TestCaseError> {
    let mut raw = meshlens_cluster::raw::RawObjects::default();
    let mut warnings = Vec::new();
    quick("snapshot", || {
        meshlens_cluster::snapshot::load_text(text, "fuzz.yaml", &mut raw, &mut warnings)
    })?;
    for w in &warnings {
        prop_assert!(w.starts_with("fuzz.yaml: document "), "a warning names where: {w}");
        prop_assert!(w.len() < 1_000, "{w}");
    }
    Ok(())
}

#[test]
fn snapshot_manifests() {
    let strategies = manifests();
    let n = run(CASES / 2, strategies, |t: &String| check_manifest(t));
    println!("snapshot manifests: {n} files tried");
}

// ---- the long run --------------------------------------------------------------------------

#[test]
#[ignore = "long run: cargo test -p integration-tests --test api parser_properties -- --ignored"]
fn long_run() {
    let mut total = run(CASES * LONG, query_strategies(), |q: &String| check_query(q));
    total += run(CASES * LONG, vec![duration_text(), any::<String>().boxed()], |t: &String| {
        check_duration(t)
    });
    total += run(
        CASES * LONG,
        vec![openmetrics(), (any::<String>(), any::<bool>()).boxed()],
        check_openmetrics,
    );
    total += run(CASES / 2 * LONG, manifests(), |t: &String| check_manifest(t));
    println!("long run: {total} inputs tried");
}
