//! The console with two clusters (issue #32): the demo as shipped, whose config/demo.toml has
//! a second cluster `west` (config/demo-west) and whose simulated traffic runs reviews-v3 in
//! it. The list pages get a Cluster column and link a remote's objects with `clusterName`;
//! the graph boxes nodes by cluster (`boxBy=cluster`) and its side panel names a node's
//! cluster. The API is the oracle: row sets, boxes and members are compared with its answers.
//!
//! These need the server side of #32 (namespaces, lists and graph nodes carrying `cluster`,
//! cluster boxes), which other branches build; the console only reads those fields.

use std::collections::BTreeSet;

use integration_tests::{
    browser::{Client, console_errors, js, screenshot, wait_graph, wait_js, with_browser},
    server::{BUNDLED, Meshlens, plugin_dir, workspace_root},
};
use serde_json::{Value, json};

use crate::common::{api, emulate_scheme, ids, rows, split_ids};

/// The shipped demo (two clusters, live simulated traffic) with `topology` instead of the
/// demo's own topology file when given.
fn two_clusters(topology: Option<&str>) -> Meshlens {
    let config =
        std::fs::read_to_string(workspace_root().join("config/demo.toml")).expect("demo.toml");
    let config = config.replace("port = 20001", "port = 0");
    let plugins = plugin_dir(BUNDLED);
    let dirs = format!("[\"{}\"]", plugins.path().display());
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("topology.toml");
    let mut env = vec![("MESHLENS_PLUGINS__DIRS".to_string(), dirs)];
    if let Some(text) = topology {
        std::fs::write(&path, text).expect("write the topology");
        env.push(("MESHLENS_METRICS__SIMULATOR__TOPOLOGY".into(), path.display().to_string()));
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Meshlens::start(&config, &env, vec![plugins, dir]).expect("the two-cluster demo starts")
}

/// Taps node `id` and reads its side panel once its health is drawn: the cluster it names,
/// its details link and any health error.
async fn node_panel(c: &Client, id: &str) -> Value {
    js(c, "window.meshlensGraph.getElementById(arguments[0]).emit('tap')", vec![json!(id)]).await;
    wait_js(
        c,
        "const p = document.querySelector('[data-testid=panel]');
         const h = p.querySelector('[data-testid=panel-health]');
         return p.dataset.kind === 'node' && h && h.dataset.state === 'drawn' && {
           cluster: p.querySelector('[data-testid=panel-cluster]').textContent,
           link: p.querySelector('[data-testid=panel-link-details]').getAttribute('href'),
           error: (h.querySelector('.error') || {}).textContent || null}",
        "the node panel",
    )
    .await
}

#[test]
fn list_pages_of_two_clusters_show_the_cluster_and_link_a_remote_with_its_name() {
    let m = two_clusters(None);
    let base = format!("http://{}", m.addr);
    // The namespaces of both clusters, each naming its cluster: bookinfo is in both.
    let namespaces = api(&m, "/api/namespaces");
    let clusters: BTreeSet<String> = namespaces
        .as_array()
        .expect("namespaces")
        .iter()
        .filter(|n| n["name"] == "bookinfo")
        .map(|n| n["cluster"].as_str().unwrap_or_else(|| panic!("no cluster: {n}")).to_string())
        .collect();
    assert_eq!(clusters, BTreeSet::from(["Kubernetes".to_string(), "west".to_string()]));
    with_browser(|c| async move {
        for (page, list_key, detail) in [
            ("apps", "applications", "app"),
            ("workloads", "workloads", "workload"),
            ("services", "services", "service"),
        ] {
            c.goto(&format!("{base}/console/{page}?namespaces=bookinfo")).await.expect("open");
            let drawn = rows(&c).await;
            let columns = js(
                &c,
                "return [...document.querySelectorAll('[data-testid=list] th')].map((t) => t.dataset.sort)",
                vec![],
            )
            .await;
            assert_eq!(
                columns[2], "cluster",
                "{page}: the Cluster column follows Namespace: {columns}"
            );
            // Every cluster's items, each row naming its cluster; a remote's link carries it.
            let mut want = BTreeSet::new();
            for cluster in &clusters {
                let list =
                    api(&m, &format!("/api/namespaces/bookinfo/{page}?clusterName={cluster}"));
                for item in list[list_key].as_array().expect("items") {
                    let name = item["name"].as_str().expect("name");
                    want.insert(format!("{cluster}/{name}"));
                    let row = drawn
                        .iter()
                        .find(|r| r["cluster"] == json!(cluster) && r["name"] == name)
                        .unwrap_or_else(|| panic!("{page}: no row {cluster}/{name}"));
                    assert_eq!(row["cell"], json!(cluster), "{page}: the cell names the cluster");
                    let href = format!(
                        "{detail}?namespace=bookinfo&{detail}={name}&clusterName={cluster}"
                    );
                    assert_eq!(row["href"], json!(href), "{page}: row link");
                }
            }
            let got: BTreeSet<String> = drawn
                .iter()
                .map(|r| {
                    format!("{}/{}", r["cluster"].as_str().unwrap(), r["name"].as_str().unwrap())
                })
                .collect();
            assert_eq!(got, want, "{page}: rows differ from the clusters' lists");
            assert!(want.contains("west/reviews-v3") || want.contains("west/reviews"), "{want:?}");
            screenshot(&c, &format!("clusters-list-{page}")).await;
        }

        // Sorting by cluster puts the home cluster's rows first (Kubernetes < west).
        c.goto(&format!("{base}/console/workloads?namespaces=bookinfo&sort=cluster"))
            .await
            .expect("open");
        let sorted: Vec<String> =
            rows(&c).await.iter().map(|r| r["cluster"].as_str().unwrap().to_string()).collect();
        let mut asc = sorted.clone();
        asc.sort();
        assert_eq!(sorted, asc);

        // The remote's workload page reads west (clusterName) and says so.
        c.goto(&format!(
            "{base}/console/workload?namespace=bookinfo&workload=reviews-v3&clusterName=west"
        ))
        .await
        .expect("open workload");
        let shown = wait_js(
            &c,
            "const h = document.querySelector('h1'); const pods = document.querySelector('[data-testid=pods]');
             return h && pods && [h.textContent, pods.textContent]",
            "the workload page",
        )
        .await;
        assert!(shown[0].as_str().unwrap().contains("cluster west"), "{shown}");
        let pod = api(&m, "/api/namespaces/bookinfo/workloads/reviews-v3?clusterName=west");
        let pod_name = pod["pods"][0]["name"].as_str().expect("west's pod");
        assert!(shown[1].as_str().unwrap().contains(pod_name), "{shown}");

        // The overview: a card per namespace of each cluster, named on the card.
        c.goto(&format!("{base}/console/")).await.expect("open overview");
        let cards = wait_js(
            &c,
            "const g = document.querySelector('[data-testid=overview]');
             return g && g.dataset.state === 'drawn' && [...g.querySelectorAll('[data-testid=ns-card]')]
               .map((e) => [e.dataset.namespace, e.dataset.cluster || null])",
            "the overview",
        )
        .await;
        let got: BTreeSet<(String, String)> = cards
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap_or("").into()))
            .collect();
        let want: BTreeSet<(String, String)> = namespaces
            .as_array()
            .unwrap()
            .iter()
            .map(|n| (n["name"].as_str().unwrap().into(), n["cluster"].as_str().unwrap().into()))
            .collect();
        assert_eq!(got, want);
        let errors = console_errors(&c).await;
        assert!(errors.is_empty(), "browser console errors: {errors:#?}");
    });
}

/// The demo topology with ratings-v1 in west too, so west has two top-level nodes (reviews-v3
/// and ratings-v1) and gets a box of its own (a cluster needs two members to be boxed).
fn west_with_two_workloads() -> String {
    let text = std::fs::read_to_string(workspace_root().join("config/demo/topology.toml"))
        .expect("the demo topology");
    let ratings = "name = \"ratings-v1\"\n";
    assert!(text.contains(ratings), "the demo topology has ratings-v1");
    text.replacen(ratings, &format!("{ratings}cluster = \"west\"\n"), 1)
}

#[test]
fn the_graph_boxes_each_cluster_and_its_panel_names_the_node_cluster() {
    let m = two_clusters(Some(&west_with_two_workloads()));
    let base = format!("http://{}", m.addr);
    let query = "namespaces=bookinfo&graphType=workload&duration=600s&boxBy=cluster";
    with_browser(|c| async move {
        // Chosen in the view's controls: the address and the request carry boxBy.
        c.goto(&format!(
            "{base}/console/graph?namespaces=bookinfo&graphType=workload&duration=600s"
        ))
        .await
        .expect("open graph");
        wait_graph(&c).await;
        js(
            &c,
            "const s = document.querySelector('[data-testid=ctl-boxBy]'); s.value = 'cluster';
             s.dispatchEvent(new Event('change'));",
            vec![],
        )
        .await;
        wait_js(&c, "return location.search.includes('boxBy=cluster')", "boxBy in the address")
            .await;
        let drawn = wait_js(
            &c,
            "const g = document.querySelector('[data-testid=graph]');
             return g.dataset.state === 'drawn' && window.meshlensGraph.$('.box-cluster').nonempty()
               && {ids: g.dataset.nodeIds}",
            "the cluster boxes",
        )
        .await;
        let g = api(&m, &format!("/api/namespaces/graph?{query}"));
        let nodes = g["elements"]["nodes"].as_array().expect("nodes").clone();
        assert_eq!(split_ids(&drawn["ids"]), ids(&g["elements"]["nodes"]), "drawn vs API");
        let boxes: Vec<&Value> = nodes.iter().filter(|n| n["data"]["isBox"] == "cluster").collect();
        let names: BTreeSet<&str> =
            boxes.iter().map(|b| b["data"]["cluster"].as_str().expect("box cluster")).collect();
        assert_eq!(names, BTreeSet::from(["Kubernetes", "west"]), "the API's cluster boxes");

        // Each box is drawn as a compound node labelled with its cluster, around exactly
        // the API's members.
        for b in &boxes {
            let id = b["data"]["id"].as_str().unwrap();
            let members: BTreeSet<String> = nodes
                .iter()
                .filter(|n| n["data"]["parent"] == id)
                .map(|n| n["data"]["id"].as_str().unwrap().to_string())
                .collect();
            let shown = js(
                &c,
                "const n = window.meshlensGraph.getElementById(arguments[0]);
                 return {box: n.hasClass('box-cluster'), label: n.data('label'),
                         children: n.children().map((x) => x.id()), w: n.width()}",
                vec![json!(id)],
            )
            .await;
            assert_eq!(shown["box"], true, "{shown}");
            assert_eq!(
                shown["label"],
                json!(format!("cluster {}", b["data"]["cluster"].as_str().unwrap())),
                "{shown}"
            );
            let children: BTreeSet<String> = shown["children"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
            assert_eq!(children, members, "box {id}");
            assert!(members.len() >= 2, "a cluster box holds two or more: {members:?}");
        }
        emulate_scheme(&c, "dark").await;
        screenshot(&c, "clusters-graph-dark").await;
        emulate_scheme(&c, "").await;

        // The side panel of west's reviews-v3 names its cluster, and reads and links it there.
        // reviews-v3 runs in both clusters (home's copy gets no traffic: unused): two nodes.
        let copies: Vec<&Value> = nodes
            .iter()
            .filter(|n| {
                n["data"]["workload"] == "reviews-v3" && n["data"]["nodeType"] == "workload"
            })
            .collect();
        let clusters: BTreeSet<&str> =
            copies.iter().filter_map(|n| n["data"]["cluster"].as_str()).collect();
        assert_eq!(clusters, BTreeSet::from(["Kubernetes", "west"]), "{copies:?}");
        assert_ne!(copies[0]["data"]["id"], copies[1]["data"]["id"]);
        let node = copies.iter().find(|n| n["data"]["cluster"] == "west").expect("west's");
        let id = node["data"]["id"].as_str().unwrap();
        let panel = node_panel(&c, id).await;
        assert_eq!(panel["cluster"], "west", "{panel}");
        assert_eq!(
            panel["link"], "workload?namespace=bookinfo&workload=reviews-v3&clusterName=west",
            "{panel}"
        );
        assert_eq!(panel["error"], Value::Null, "health read in west: {panel}");
        let health = api(
            &m,
            "/api/namespaces/bookinfo/workloads/reviews-v3/health?rateInterval=600s&clusterName=west",
        );
        assert!(
            health["requests"]["requestCount"].as_f64().is_some_and(|r| r > 0.0),
            "west's reviews-v3 has traffic: {health}"
        );
        screenshot(&c, "clusters-graph-panel").await;

        // The panel's node-graph link reads the node in its own cluster.
        let graph_link = js(
            &c,
            "return document.querySelector('[data-testid=panel-link-graph]').getAttribute('href')",
            vec![],
        )
        .await;
        let href = graph_link.as_str().unwrap_or_default().to_string();
        assert!(
            href.contains("workload=reviews-v3") && href.contains("clusterName=west"),
            "{href}"
        );
        js(&c, "document.querySelector('[data-testid=panel-link-graph]').click()", vec![]).await;
        let drawn = wait_js(
            &c,
            "const g = window.meshlensGraph;
             const n = g && g.nodes().filter((n) => n.data('workload') === 'reviews-v3');
             return n && n.length > 0 && location.search.includes('clusterName=west')
               && n.map((x) => x.data('cluster'))",
            "west's reviews-v3 node graph",
        )
        .await;
        assert_eq!(drawn, json!(["west"]), "only west's reviews-v3 in its node graph");
        let errors = console_errors(&c).await;
        assert!(errors.is_empty(), "browser console errors: {errors:#?}");
    });
}

/// Records, in `window.clusterAnswers.graph`, the last graph answer the page drew from
/// (passed through unchanged): the test compares the drawing with the server's answer.
const RECORD_ANSWERS: &str = r#"
const real = window.fetch.bind(window);
window.clusterAnswers = {};
window.fetch = async (url, opts) => {
  const resp = await real(url, opts);
  const u = new URL(url, location.href);
  if (resp.ok && u.pathname.endsWith('/api/namespaces/graph')) {
    window.clusterAnswers.graph = await resp.clone().json();
  }
  return resp;
};
"#;

/// Goes to a console path inside the page (the router renders it; the fetch wrapper stays).
async fn navigate(c: &Client, path: &str) {
    js(
        c,
        "history.pushState(null, '', arguments[0]); window.dispatchEvent(new PopStateEvent('popstate'));",
        vec![json!(path)],
    )
    .await;
}

#[test]
fn the_console_draws_two_clusters_from_the_servers_answers() {
    let m = two_clusters(Some(&west_with_two_workloads()));
    let base = format!("http://{}", m.addr);
    with_browser(|c| async move {
        c.goto(&format!("{base}/console/")).await.expect("open");
        wait_js(&c, "return document.querySelector('[data-testid=overview]')", "the overview")
            .await;
        js(&c, RECORD_ANSWERS, vec![]).await;

        // Lists: both clusters' rows, the Cluster column, clusterName in a row's link.
        navigate(&c, "workloads?namespaces=bookinfo").await;
        let drawn = rows(&c).await;
        let tag = |r: &Value| {
            format!("{}/{}", r["cluster"].as_str().unwrap_or("-"), r["name"].as_str().unwrap())
        };
        let mut want: BTreeSet<String> = BTreeSet::new();
        for (cluster, query) in [("Kubernetes", ""), ("west", "?clusterName=west")] {
            let list = api(&m, &format!("/api/namespaces/bookinfo/workloads{query}"));
            for w in list["workloads"].as_array().expect("workloads") {
                want.insert(format!("{cluster}/{}", w["name"].as_str().unwrap()));
            }
        }
        assert_eq!(drawn.iter().map(tag).collect::<BTreeSet<_>>(), want);
        let row = drawn.iter().find(|r| r["cluster"] == "west").expect("a west row");
        assert_eq!(row["cell"], "west");
        assert_eq!(row["href"], "workload?namespace=bookinfo&workload=reviews-v3&clusterName=west");
        let header =
            js(&c, "return document.querySelector('th[data-sort=cluster]').textContent", vec![])
                .await;
        assert_eq!(header, "Cluster");
        screenshot(&c, "clusters-contract-list").await;

        // The graph without boxes: nodes of both clusters, each naming its cluster.
        navigate(&c, "graph?namespaces=bookinfo&graphType=workload&duration=600s").await;
        wait_graph(&c).await;
        let label = js(
            &c,
            "return window.meshlensGraph.nodes().filter((n) => n.data('workload') === 'reviews-v3').map((n) => n.data('label'))",
            vec![],
        )
        .await;
        let labels: Vec<&str> =
            label.as_array().expect("labels").iter().filter_map(Value::as_str).collect();
        assert_eq!(labels.len(), 2, "{label}");
        assert!(labels.iter().any(|l| l.contains("bookinfo · west")), "{label}");
        assert!(labels.iter().any(|l| l.contains("bookinfo · Kubernetes")), "{label}");

        // boxBy=cluster from the control: a box per cluster around exactly its members.
        js(
            &c,
            "const s = document.querySelector('[data-testid=ctl-boxBy]'); s.value = 'cluster';
             s.dispatchEvent(new Event('change'));",
            vec![],
        )
        .await;
        let boxes = wait_js(
            &c,
            "const g = document.querySelector('[data-testid=graph]'); const cy = window.meshlensGraph;
             return g.dataset.state === 'drawn' && location.search.includes('boxBy=cluster')
               && cy.$('.box-cluster').nonempty() && cy.$('.box-cluster').map((b) => ({id: b.id(),
                 label: b.data('label'), children: b.children().map((x) => x.id()).sort(),
                 w: b.boundingBox().w}))",
            "the cluster boxes",
        )
        .await;
        let answer = js(&c, "return window.clusterAnswers.graph", vec![]).await;
        let nodes = answer["elements"]["nodes"].as_array().expect("nodes");
        assert_eq!(boxes.as_array().map(Vec::len), Some(2), "{boxes}");
        for b in boxes.as_array().unwrap() {
            let id = b["id"].as_str().unwrap();
            let cluster =
                nodes.iter().find(|n| n["data"]["id"] == id).expect("box")["data"]["cluster"]
                    .as_str()
                    .unwrap();
            assert_eq!(b["label"], json!(format!("cluster {cluster}")));
            let mut members: Vec<&str> = nodes
                .iter()
                .filter(|n| n["data"]["parent"] == id)
                .map(|n| n["data"]["id"].as_str().unwrap())
                .collect();
            members.sort();
            assert_eq!(b["children"], json!(members), "{id}");
            assert!(b["w"].as_f64().is_some_and(|w| w > 40.0), "the box is drawn around them: {b}");
        }
        // Inside a cluster box a node's label does not repeat the cluster.
        let label = js(
            &c,
            "return window.meshlensGraph.nodes().filter((n) => n.data('workload') === 'reviews-v3').map((n) => n.data('label'))",
            vec![],
        )
        .await;
        assert!(!label[0].as_str().unwrap_or("west").contains("west"), "{label}");
        emulate_scheme(&c, "dark").await;
        // The graph restyles on the theme's change event: the dark palette's cluster box.
        wait_js(
            &c,
            "return window.meshlensGraph.$('.box-cluster').style('background-color') === 'rgb(26,30,34)'",
            "the dark cluster boxes",
        )
        .await;
        screenshot(&c, "clusters-contract-graph-dark").await;
        emulate_scheme(&c, "").await;

        // The side panel: the node's cluster, its health read there, its page linked there.
        // West's copy of reviews-v3 (home runs one too, without traffic).
        let id = nodes
            .iter()
            .find(|n| n["data"]["workload"] == "reviews-v3" && n["data"]["cluster"] == "west")
            .map(|n| n["data"]["id"].as_str().unwrap().to_string())
            .expect("west's reviews-v3");
        let panel = node_panel(&c, &id).await;
        assert_eq!(
            panel,
            json!({"cluster": "west", "link": "workload?namespace=bookinfo&workload=reviews-v3&clusterName=west", "error": null})
        );

        // The remote's page, from that link: every call names west.
        navigate(&c, "workload?namespace=bookinfo&workload=reviews-v3&clusterName=west").await;
        let heading = wait_js(
            &c,
            "const h = document.querySelector('h1'); const d = document.querySelector('[data-testid=dashboard]');
             return h && d && d.dataset.api && [h.textContent, d.dataset.api]",
            "the workload page",
        )
        .await;
        assert!(heading[0].as_str().unwrap().contains("cluster west"), "{heading}");
        assert!(heading[1].as_str().unwrap().ends_with("&clusterName=west"), "{heading}");
        let errors = console_errors(&c).await;
        assert!(errors.is_empty(), "browser console errors: {errors:#?}");
    });
}
