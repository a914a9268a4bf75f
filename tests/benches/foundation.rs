//! Issue-2 figures: the cost of an appender call through the plugin boundary next to the
//! same code called directly, and the start-up time to a listening server with every
//! bundled plugin. Prints figures; asserts nothing about time.

use std::time::{Duration, Instant};

use abi_stable::std_types::RResult;
use integration_tests::server::{BUNDLED, Meshlens, plugin_dir, plugin_library};
use plugin_api::{
    AppenderData, Edge, Graph, GraphAppender, GraphRequest, GraphType, Node, NodeType,
    PluginMod_Ref,
};

fn request() -> GraphRequest {
    GraphRequest {
        namespaces: vec!["bench".into()].into(),
        graph_type: GraphType::Workload,
        node_graph: false,
        duration_secs: 600,
        query_time: 0,
        include_mesh: false,
        inject_service_nodes: false,
        response_time_quantile: 0.95,
        mesh_namespace: "istio-system".into(),
        app_label: "app".into(),
        version_label: "version".into(),
        identity_domain: "svc.cluster.local".into(),
        duration_metric: "istio_request_duration_milliseconds".into(),
        duration_to_ms: 1.0,
        home_cluster: "Kubernetes".into(),
    }
}

fn graph(nodes: usize, edges: usize) -> Graph {
    let mut g = Graph::default();
    for i in 0..nodes {
        let mut n = Node::new(&format!("wl_bench_w{i}"), NodeType::Workload, "bench");
        n.workload = format!("w{i}").into();
        g.nodes.push(n);
    }
    for j in 0..edges {
        let s = j % nodes;
        let t = (j * 7 + 1) % nodes;
        let mut e = Edge::new(&format!("wl_bench_w{s}"), &format!("wl_bench_w{t}"), "http");
        e.rates.http = 1.0;
        g.edges.push(e);
    }
    g
}

fn time_per_call(iterations: u32, mut f: impl FnMut()) -> Duration {
    for _ in 0..iterations.min(100) {
        f();
    }
    let start = Instant::now();
    for _ in 0..iterations {
        f();
    }
    start.elapsed() / iterations
}

fn main() {
    let lib = plugin_library("bench-appender");
    let module = abi_stable::library::lib_header_from_path(&lib)
        .and_then(|h| h.init_root_module::<PluginMod_Ref>())
        .expect("load bench-appender");
    let components = match (module.components())() {
        RResult::ROk(c) => c,
        RResult::RErr(e) => panic!("components: {}", e.message),
    };
    let through_boundary = &components.appenders[0];
    let direct = bench_appender::Degree;
    let req = request();
    let data = AppenderData::default();

    println!("appender call: direct vs through the plugin boundary (release build recommended)");
    for (nodes, edges, iterations) in [(10, 30, 200_000u32), (10_000, 30_000, 200)] {
        let mut g1 = graph(nodes, edges);
        let mut g2 = g1.clone();
        let d = time_per_call(iterations, || {
            let _ = direct.apply(&req, &data, &mut g1);
        });
        let p = time_per_call(iterations, || {
            let _ = through_boundary.apply(&req, &data, &mut g2);
        });
        println!(
            "  {nodes:>6} nodes {edges:>6} edges: direct {:>10.1} µs/call, plugin {:>10.1} µs/call, ratio {:.2}",
            d.as_secs_f64() * 1e6,
            p.as_secs_f64() * 1e6,
            p.as_secs_f64() / d.as_secs_f64()
        );
    }
    let name_cost = time_per_call(1_000_000, || {
        let _ = through_boundary.name();
    });
    println!("  name() through the boundary: {:.0} ns/call", name_cost.as_secs_f64() * 1e9);

    println!(
        "start-up to a listening server with every bundled plugin ({} libraries)",
        BUNDLED.len()
    );
    let config = |dir: &std::path::Path| {
        format!(
            "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [\"{}\"]\n\
             [cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n\
             [metrics.prometheus]\nurl = \"http://127.0.0.1:1\"\n",
            dir.display()
        )
    };
    let mut times = Vec::new();
    for _ in 0..5 {
        let dir = plugin_dir(BUNDLED);
        let cfg = config(dir.path());
        let start = Instant::now();
        let m = Meshlens::start(&cfg, &[], vec![dir]).expect("meshlens starts");
        times.push(start.elapsed());
        drop(m);
    }
    times.sort();
    println!(
        "  min {:.1} ms, median {:.1} ms, max {:.1} ms (5 runs, process spawn included)",
        times[0].as_secs_f64() * 1e3,
        times[2].as_secs_f64() * 1e3,
        times[4].as_secs_f64() * 1e3
    );
}
