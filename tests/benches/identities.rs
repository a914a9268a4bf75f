//! What per-user visibility costs: the graph of 200 namespaces (10 workloads each, real
//! Prometheus) for a `token` user whose reviews are cached, against the same graph with
//! `anonymous`, side by side. Both instances read the same loopback Kubernetes API, which
//! also answers the TokenReview and SubjectAccessReviews.
//!
//! Prints the median and fastest of the runs for each, the token user's first (cold) request,
//! and the reviews the loopback server answered.
//!
//! `cargo bench -p integration-tests --bench identities`

use std::time::{Duration, Instant};

use integration_tests::{
    kube_api::{KubeApi, Options},
    kube_reviews::Reviews,
    prometheus::{PromServer, fixture},
    server::{BUNDLED, Meshlens, plugin_dir},
};
use serde_json::{Value, json};

const NAMESPACES: usize = 200;
const WORKLOADS: usize = 10;
const END: &str = "1700000000";
const RUNS: usize = 9;
const TOKEN: &str = "bench-user-token";

fn objects() -> Vec<Value> {
    let mut out = Vec::new();
    for n in 0..NAMESPACES {
        out.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("ns-{n}")}}));
        for w in 0..WORKLOADS {
            let labels = json!({"app": format!("w{w}"), "version": "v1"});
            out.push(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": format!("w{w}-v1"), "namespace": format!("ns-{n}")},
                "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
                         "spec": {"containers": [{"name": "w", "image": "x"}]}}},
                "status": {"replicas": 1, "availableReplicas": 1}}));
        }
    }
    out
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let names: Vec<String> = (0..NAMESPACES).map(|n| format!("ns-{n}")).collect();
    let reviews = Reviews::new();
    // Rights namespace by namespace (not cluster-wide): the expensive case for the cache.
    reviews.user("bench", TOKEN, &names.iter().map(String::as_str).collect::<Vec<_>>());
    let api = rt.block_on(KubeApi::start(
        objects(),
        Options { reviews: Some(reviews.clone()), ..Default::default() },
    ));

    let f = fixture(&[
        "--end",
        END,
        "--minutes",
        "15",
        "--topology",
        "synthetic",
        "--namespaces",
        &NAMESPACES.to_string(),
        "--workloads",
        &WORKLOADS.to_string(),
    ]);
    let prom = PromServer::start(&f);
    let start = |auth: &str| {
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = api.write_kubeconfig(dir.path());
        let plugins = plugin_dir(BUNDLED);
        let cfg = format!(
            "[server]\nport = 0\n[auth]\n{auth}\n[plugins]\ndirs = [{:?}]\n[cluster]\nsource = \"kube\"\nkubeconfig = {kubeconfig:?}\n\
             [metrics]\nbackend = \"prometheus\"\ntimeout = \"60s\"\n[metrics.prometheus]\nurl = {:?}\n",
            plugins.path(),
            prom.url()
        );
        Meshlens::start(&cfg, &[], vec![plugins, dir])
            .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"))
    };
    let anonymous = start("strategy = \"anonymous\"");
    let token = start("strategy = \"token\"");
    let path = format!(
        "/api/namespaces/graph?namespaces={}&queryTime={END}&duration=600s",
        names.join(",")
    );
    let bearer = format!("Bearer {TOKEN}");

    // Warm-up: the cluster sync, the duration histogram, and (token) the cold review cache.
    let r = anonymous.get(&path);
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let nodes = v["elements"]["nodes"].as_array().map_or(0, Vec::len);
    let t = Instant::now();
    let r = token.get_with(&path, &[("Authorization", &bearer)]);
    let cold = t.elapsed();
    assert_eq!(r.status, 200, "{}", r.text());
    let after_cold = (reviews.token_reviews(), reviews.access_reviews());

    let (mut anon_t, mut token_t) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        // Alternate, so drift on a shared host hits both alike.
        let t = Instant::now();
        assert_eq!(anonymous.get(&path).status, 200);
        anon_t.push(t.elapsed());
        let t = Instant::now();
        assert_eq!(token.get_with(&path, &[("Authorization", &bearer)]).status, 200);
        token_t.push(t.elapsed());
    }
    let warm_reviews =
        (reviews.token_reviews() - after_cold.0, reviews.access_reviews() - after_cold.1);
    let (a_min, t_min) = (
        anon_t.iter().min().copied().unwrap_or_default(),
        token_t.iter().min().copied().unwrap_or_default(),
    );

    println!(
        "graph of {NAMESPACES} namespaces x {WORKLOADS} workloads ({nodes} nodes), {RUNS} runs each, alternating"
    );
    println!("  {:<36} {:>10} {:>10}", "", "median ms", "fastest ms");
    println!("  {:<36} {:>10.1} {:>10.1}", "anonymous", ms(median(anon_t)), ms(a_min));
    println!(
        "  {:<36} {:>10.1} {:>10.1}",
        "token user, warm review cache",
        ms(median(token_t)),
        ms(t_min)
    );
    println!("  token user, first request (cold cache): {:.1} ms", ms(cold));
    println!(
        "  reviews: cold request {} TokenReview + {} SubjectAccessReviews; {RUNS} warm requests {} + {}",
        after_cold.0, after_cold.1, warm_reviews.0, warm_reviews.1
    );
    drop(rt);
}
