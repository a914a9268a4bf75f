//! The `prometheus` backend against a store that speaks the Prometheus query API but is not
//! Prometheus: Debian's `victoria-metrics`, loaded with the same generated mesh. Graph,
//! health, dashboard and namespace-metrics answers equal those on Prometheus, numbers to
//! 1e-6 relative (float64 in each store's order of operations; see README, "More than one
//! Prometheus").

use integration_tests::{
    prometheus::{PromServer, fixture},
    server::{BUNDLED, Meshlens, plugin_dir},
    victoria::VmServer,
};
use serde_json::Value;

/// Relative difference allowed between the stores' numbers: both evaluate in float64, in
/// their own order of operations. On this data (samples every 15 s, no counter resets,
/// windows on the sample grid) VictoriaMetrics' `rate` without extrapolation and Prometheus's
/// with it give the same values; see README, "More than one Prometheus".
const REL: f64 = 1e-6;

fn meshlens(url: &str) -> Meshlens {
    let dir = plugin_dir(BUNDLED);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"prometheus\"\ncache_ttl = \"0s\"\n[metrics.prometheus]\nurl = {url:?}\n",
        dir.path().display().to_string()
    );
    Meshlens::start(&cfg, &[], vec![dir])
        .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

/// What comparing the two stores' answers found.
#[derive(Default)]
struct Comparison {
    /// Where the answers differ beyond [`REL`] (absolute 1e-9 near zero).
    report: Vec<String>,
    /// Numbers compared, and how many of them were not bit-for-bit equal.
    numbers: usize,
    unequal: usize,
    /// The largest relative difference among the numbers within tolerance.
    max_rel: f64,
}

impl Comparison {
    fn compare(&mut self, path: &str, a: &Value, b: &Value) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    self.compare(
                        &format!("{path}/{k}"),
                        x.get(k).unwrap_or(&Value::Null),
                        y.get(k).unwrap_or(&Value::Null),
                    );
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    self.compare(&format!("{path}[{i}]"), p, q);
                }
            }
            _ => match (number(a), number(b)) {
                (Some(p), Some(q)) if (p - q).abs() <= 1e-9_f64.max(REL * p.abs().max(q.abs())) => {
                    self.numbers += 1;
                    if p != q {
                        self.unequal += 1;
                        self.max_rel = self.max_rel.max((p - q).abs() / p.abs().max(q.abs()));
                    }
                }
                _ if a == b => {}
                _ => self.report.push(format!("{path}: Prometheus {a} vs VictoriaMetrics {b}")),
            },
        }
    }
}

#[test]
fn graph_health_and_dashboards_on_victoria_metrics_equal_those_on_prometheus() {
    // Data to 30 minutes past now: health looks at "now" (see tests/tests/backends/health.rs).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    integration_tests::server::ensure_built();
    let end = (now + 1800).to_string();
    let f = fixture(&["--topology", "demo", "--minutes", "60", "--end", &end]);
    let prom = PromServer::start(&f);
    let vm = VmServer::start(&f);
    let on_prom = meshlens(&prom.url());
    let on_vm = meshlens(&vm.url());

    let t = now - now % 60;
    let mut paths = Vec::new();
    for g in ["versionedApp", "app", "workload", "service"] {
        paths.push(format!("/api/namespaces/graph?namespaces=bookinfo,istio-system&graphType={g}&queryTime={t}&duration=600s"));
    }
    paths.push(format!(
        "/api/namespaces/bookinfo/services/reviews/graph?queryTime={t}&duration=600s"
    ));
    paths.push("/api/namespaces/bookinfo/health".into());
    paths.push("/api/namespaces/istio-system/health".into());
    for app in ["productpage", "reviews", "ratings", "details"] {
        paths.push(format!("/api/namespaces/bookinfo/apps/{app}/health"));
        paths.push(format!("/api/namespaces/bookinfo/services/{app}/health"));
        paths.push(format!(
            "/api/namespaces/bookinfo/apps/{app}/dashboard?queryTime={t}&duration=600&step=60"
        ));
    }
    paths.push("/api/namespaces/bookinfo/workloads/reviews-v2/health".into());
    paths.push(format!("/api/namespaces/bookinfo/apps/reviews/customdashboard/vertx-server?queryTime={t}&duration=600&step=60"));
    paths.push(format!("/api/namespaces/bookinfo/apps/ratings/customdashboard/go?queryTime={t}&duration=600&step=60"));
    paths.push(format!("/api/namespaces/bookinfo/metrics?queryTime={t}&duration=600&step=60&quantiles[]=0.5&quantiles[]=0.95"));

    let mut c = Comparison::default();
    for p in &paths {
        let (a, b) = (on_prom.get(p), on_vm.get(p));
        assert_eq!((a.status, b.status), (200, 200), "{p}: {} / {}", a.text(), b.text());
        let (a, b) = (a.json(), b.json());
        assert!(a.to_string().len() > 40, "{p}: {a}");
        if p.contains("/graph?") {
            let edges = a["elements"]["edges"].as_array().map_or(0, Vec::len);
            assert!(edges > 1, "{p}: the graph on Prometheus has {edges} edges");
        }
        c.compare(p, &a, &b);
    }
    println!(
        "{} numbers compared over {} answers: {} not bit-for-bit equal, largest relative difference {:.2e}",
        c.numbers,
        paths.len(),
        c.unequal,
        c.max_rel
    );
    assert!(c.numbers > 500, "only {} numbers compared", c.numbers);
    assert!(c.report.is_empty(), "{} differences:\n{}", c.report.len(), c.report.join("\n"));
}
