//! customDashboard cost: the built-in 6-chart `vertx-server` template with avg and three
//! quantiles, through the real binary and a real Prometheus, next to the same range
//! queries sent straight to Prometheus (all at once, one thread each). Prints figures;
//! not run by `cargo test`. Run: `cargo bench -p integration-tests --bench dashboards`
//! (`DASHBOARDS_BENCH_RUNS` changes the number of timed runs, default 30).

use std::time::{Duration, Instant};

use integration_tests::{
    prometheus::{PromServer, fixture, http_get, percent_encode},
    server::{Meshlens, plugin_dir},
};

/// Prometheus's own count of range queries it answered.
fn range_queries_answered(prom: &PromServer) -> f64 {
    let (_, text) = http_get(prom.port(), "/metrics").expect("Prometheus /metrics");
    text.lines()
        .filter(|l| {
            l.starts_with("prometheus_http_requests_total{")
                && l.contains("handler=\"/api/v1/query_range\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The PromQL the template means (spec'd in the dashboards crate), written by hand.
fn direct_queries() -> Vec<String> {
    let sel = r#"{namespace="bookinfo",app="reviews"}"#;
    let mut qs = vec![
        format!("sum(rate(vertx_http_server_requests_total{sel}[1m]))"),
        format!("sum(vertx_http_server_connections{sel})"),
        format!("sum(vertx_http_server_wsConnections{sel})"),
    ];
    for h in [
        "vertx_http_server_responseTime_seconds",
        "vertx_http_server_bytesSent",
        "vertx_http_server_bytesReceived",
    ] {
        qs.push(format!("sum(rate({h}_sum{sel}[1m])) / sum(rate({h}_count{sel}[1m]))"));
        for q in ["0.5", "0.95", "0.99"] {
            qs.push(format!("histogram_quantile({q}, sum by (le) (rate({h}_bucket{sel}[1m])))"));
        }
    }
    qs
}

fn stats(mut v: Vec<Duration>) -> String {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "median {:.2} ms, p90 {:.2} ms, min {:.2} ms",
        ms(v[v.len() / 2]),
        ms(v[v.len() * 9 / 10]),
        ms(v[0])
    )
}

fn main() {
    let runs: usize = std::env::var("DASHBOARDS_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
        .max(1);
    let f = fixture(&["--topology", "demo", "--minutes", "30"]);
    let prom = PromServer::start(&f);
    let dir = plugin_dir(&[
        "metrics-prometheus",
        "dashboards-builtin",
        "dashboards-folder",
        "dashboards-monitoring",
    ]);
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
         [metrics]\nbackend = \"prometheus\"\n[metrics.prometheus]\nurl = {:?}\n",
        dir.path().display().to_string(),
        prom.url()
    );
    let m = Meshlens::start(&cfg, &[], vec![dir]).expect("meshlens starts");
    let (end, duration, step) = (f.end(), 1800, 15);
    let path = format!(
        "/api/namespaces/bookinfo/apps/reviews/customdashboard/vertx-server?queryTime={end}&duration={duration}&step={step}\
         &avg=true&quantiles[]=0.5&quantiles[]=0.95&quantiles[]=0.99"
    );
    let start = (end - duration) - (end - duration).rem_euclid(step);

    // Queries one dashboard sends, as Prometheus counts them.
    let before = range_queries_answered(&prom);
    let r = m.get(&path);
    assert_eq!(r.status, 200, "{}", r.text());
    let sent = range_queries_answered(&prom) - before;
    let charts = r.json()["charts"].as_array().map(Vec::len).unwrap_or(0);
    let points: usize = r.json()["charts"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            let mut v: Vec<serde_json::Value> = c.get("metric").cloned().into_iter().collect();
            v.extend(
                c.get("histogram")
                    .and_then(|h| h.as_object())
                    .into_iter()
                    .flat_map(|h| h.values().cloned()),
            );
            v
        })
        .flat_map(|s| s["matrix"].as_array().cloned().unwrap_or_default())
        .map(|s| s["values"].as_array().map(Vec::len).unwrap_or(0))
        .sum();

    let direct = direct_queries();
    let port = prom.port();
    let send_direct = || {
        std::thread::scope(|s| {
            let handles: Vec<_> = direct
                .iter()
                .map(|q| {
                    let p = format!(
                        "/api/v1/query_range?query={}&start={start}&end={end}&step={step}",
                        percent_encode(q)
                    );
                    s.spawn(move || http_get(port, &p).map(|(st, _)| st))
                })
                .collect();
            for h in handles {
                assert_eq!(h.join().expect("thread"), Some(200));
            }
        })
    };
    // Warm both paths (Prometheus caches chunks; meshlens opens its connections).
    for _ in 0..3 {
        assert_eq!(m.get(&path).status, 200);
        send_direct();
    }
    let mut ours = Vec::with_capacity(runs);
    let mut theirs = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        assert_eq!(m.get(&path).status, 200);
        ours.push(t.elapsed());
        let t = Instant::now();
        send_direct();
        theirs.push(t.elapsed());
    }
    println!(
        "customDashboard vertx-server (6 charts, avg + quantiles 0.5/0.95/0.99), 30 min at 15 s steps, {runs} runs"
    );
    println!(
        "  charts: {charts}; range queries sent to Prometheus per dashboard: {sent}; points returned: {points}"
    );
    println!(
        "  meshlens (HTTP, plan + {} concurrent queries + JSON): {}",
        direct.len(),
        stats(ours)
    );
    println!(
        "  the same {} queries straight to Prometheus, concurrently: {}",
        direct.len(),
        stats(theirs)
    );
}
