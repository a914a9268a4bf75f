//! The browser console, in a real browser (headless Chromium through chromedriver) against
//! the real binary: on the bundled demo's data (demo manifests + generated traffic in the
//! embedded store), on a real Prometheus for a fixed window, and with the login strategy.
//!
//! The API is the oracle: every number or id the page shows is compared with the API's JSON
//! for the same parameters.

use std::collections::BTreeSet;

use fantoccini::{
    Locator,
    actions::{InputSource, MouseActions, PointerAction},
};
use integration_tests::{
    browser::{Client, console_errors, js, screenshot, wait_graph, wait_js, with_browser},
    prometheus::{PromServer, fixture},
    server::{BUNDLED, Meshlens, basic_auth, cluster_only_config, plugin_dir, workspace_root},
};
use serde_json::{Value, json};

use crate::common::{demo, ids, split_ids, synthetic_mesh};

fn base(m: &Meshlens) -> String {
    format!("http://{}", m.addr)
}

/// Loads a console URL and waits for the drawn graph; checks it against the API's graph for
/// the same parameters. Returns the API graph.
async fn graph_matches_api(c: &Client, m: &Meshlens, console_query: &str, api_path: &str) -> Value {
    c.goto(&format!("{}/console/graph?{console_query}", base(m))).await.expect("open graph");
    let drawn = wait_graph(c).await;
    let api = m.get(api_path);
    assert_eq!(api.status, 200, "{api_path}: {}", api.text());
    let g = api.json();
    let nodes = &g["elements"]["nodes"];
    let edges = &g["elements"]["edges"];
    assert_eq!(
        drawn["nodes"],
        json!(nodes.as_array().expect("nodes").len().to_string()),
        "{console_query}"
    );
    assert_eq!(
        drawn["edges"],
        json!(edges.as_array().expect("edges").len().to_string()),
        "{console_query}"
    );
    assert_eq!(
        split_ids(&drawn["ids"]),
        ids(nodes),
        "{console_query}: drawn node ids differ from the API's"
    );
    g
}

async fn no_console_errors(c: &Client, page: &str) {
    let errors = console_errors(c).await;
    assert!(errors.is_empty(), "browser console errors on {page}: {errors:#?}");
}

/// Clicks the drawn node `id` with a real pointer (positions come from the page's cytoscape).
async fn click_node(c: &Client, id: &str) {
    let p = js(
        c,
        "const cy = window.meshlensGraph; const n = cy.getElementById(arguments[0]);
         cy.center(n); const r = n.renderedPosition();
         const box = document.querySelector('[data-testid=graph]').getBoundingClientRect();
         return [Math.round(box.left + r.x), Math.round(box.top + r.y)];",
        vec![json!(id)],
    )
    .await;
    let (x, y) = (p[0].as_f64().expect("x"), p[1].as_f64().expect("y"));
    let mouse = MouseActions::new("mouse".into())
        .then(PointerAction::MoveTo { duration: None, x, y })
        .then(PointerAction::Down { button: fantoccini::actions::MOUSE_BUTTON_LEFT })
        .then(PointerAction::Up { button: fantoccini::actions::MOUSE_BUTTON_LEFT });
    c.perform_actions(mouse).await.expect("click");
}

/// Types into an input and presses Enter (what fires its change event).
async fn type_into(c: &Client, testid: &str, text: &str) {
    let input = c.find(Locator::Css(&format!("[data-testid={testid}]"))).await.expect("input");
    input.clear().await.expect("clear");
    input.send_keys(&format!("{text}\u{E007}")).await.expect("type");
}

/// Picks `format` in the graph's Export menu and returns the file the page offered for
/// download: its name, type and size, the text (SVG, JSON, DOT), and for a PNG its first
/// bytes and decoded size. The download itself is caught in the page (never written to disk).
async fn export_file(c: &Client, format: &str) -> Value {
    let n = js(
        c,
        "if (!window.__exports) {
           window.__exports = [];
           // The blob behind each object URL: the console's CSP (connect-src 'self') lets
           // no script fetch a blob: URL, so the page's own Blob is read instead.
           const blobs = new Map();
           const objectUrl = URL.createObjectURL.bind(URL);
           URL.createObjectURL = (b) => { const u = objectUrl(b); blobs.set(u, b); return u; };
           document.addEventListener('click', (e) => {
             const a = e.target.closest && e.target.closest('a[download]');
             if (!a) return;
             e.preventDefault();
             const rec = { name: a.download };
             window.__exports.push(rec);
             const blob = blobs.get(a.href);
             (blob ? Promise.resolve(blob) : Promise.reject(new Error('no blob for ' + a.href))).then(async (b) => {
               rec.type = b.type; rec.size = b.size;
               if (b.type === 'image/png') {
                 rec.head = Array.from(new Uint8Array(await b.arrayBuffer()).slice(0, 8));
                 const img = await createImageBitmap(b);
                 rec.width = img.width; rec.height = img.height;
               } else rec.text = await b.text();
               rec.done = true;
             }, (err) => { rec.error = String(err); rec.done = true; });
           }, true);
         }
         return window.__exports.length;",
        vec![],
    )
    .await;
    let n = n.as_u64().expect("count");
    c.find(Locator::Css("[data-testid=ctl-export]"))
        .await
        .expect("export menu")
        .select_by_value(format)
        .await
        .expect("select export");
    let file = wait_js(
        c,
        &format!("const e = window.__exports[{n}]; return e && e.done && e"),
        &format!("the {format} export"),
    )
    .await;
    assert!(file.get("error").is_none(), "{format}: {file}");
    file
}

#[test]
fn console_assets_are_embedded_typed_cached_and_compressed() {
    let plugins = tempfile::tempdir().expect("temp dir");
    let cfg =
        cluster_only_config("source = \"snapshot\"\nsnapshot = [\"config/demo\"]", plugins.path());
    let m = Meshlens::start(&cfg, &[], vec![plugins]).expect("meshlens starts");

    // A browser at `/` goes to the console; an API client still gets StatusInfo.
    let r = m.get_with("/", &[("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")]);
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/console/"));
    let r = m.get_with("/", &[("Accept", "application/json")]);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"]["state"], "running");

    let index = m.get("/console/");
    assert_eq!(index.status, 200);
    assert_eq!(index.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(index.text().contains("<base href=\"/console/\">"), "{}", index.text());
    // Deep links get the same page; a missing file is a 404.
    let deep = m.get("/console/graph?namespaces=bookinfo&graphType=workload");
    assert_eq!((deep.status, deep.body.clone()), (200, index.body.clone()));
    assert_eq!(m.get("/console/app").body, index.body);
    assert_eq!(m.get("/console/js/nope.js").status, 404);

    // Every file the page loads is served with its type, and matches the file on disk.
    let console = workspace_root().join("host/console");
    for (path, ctype) in [
        ("js/app.js", "text/javascript; charset=utf-8"),
        ("app.css", "text/css; charset=utf-8"),
        ("vendor/cytoscape/cytoscape.min.js", "text/javascript; charset=utf-8"),
        ("vendor/uplot/uPlot.min.css", "text/css; charset=utf-8"),
        ("vendor/cytoscape/LICENSE", "text/plain; charset=utf-8"),
    ] {
        let r = m.get(&format!("/console/{path}"));
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("content-type"), Some(ctype), "{path}");
        assert_eq!(r.body, std::fs::read(console.join(path)).expect("file"), "{path}");
    }
    for src in index.text().split("src=\"").skip(1).chain(index.text().split("href=\"").skip(1)) {
        let file = src.split('"').next().unwrap_or_default();
        if file.starts_with("data:")
            || file.starts_with('/')
            || file.is_empty()
            || file == "./"
            || !file.contains('.')
        {
            continue;
        }
        assert_eq!(m.get(&format!("/console/{file}")).status, 200, "index.html refers to {file}");
    }

    // ETag: a matching If-None-Match is a 304 without a body; another ETag gets the file.
    let js_file = m.get("/console/js/graph.js");
    let etag = js_file.header("etag").expect("etag").to_string();
    let again = m.get_with("/console/js/graph.js", &[("If-None-Match", &etag)]);
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(m.get_with("/console/js/graph.js", &[("If-None-Match", "\"other\"")]).status, 200);

    // gzip when accepted (and only then), with its own ETag.
    let gz = m.get_with(
        "/console/vendor/cytoscape/cytoscape.min.js",
        &[("Accept-Encoding", "gzip, deflate, br")],
    );
    assert_eq!(gz.header("content-encoding"), Some("gzip"));
    assert!(
        gz.body.len() * 2
            < std::fs::metadata(console.join("vendor/cytoscape/cytoscape.min.js"))
                .expect("file")
                .len() as usize
    );
    assert_eq!(&gz.body[..2], &[0x1f, 0x8b], "a gzip stream");
    assert_ne!(
        gz.header("etag"),
        m.get("/console/vendor/cytoscape/cytoscape.min.js").header("etag")
    );
    let plain = m.get_with("/console/app.css", &[("Accept-Encoding", "gzip;q=0")]);
    assert_eq!(plain.header("content-encoding"), None);

    // The console is GET only, like the API.
    let post = integration_tests::server::request(
        &m.addr,
        "POST",
        "/console/",
        &[("Content-Length", "0")],
    );
    assert_eq!(post.status, 405);
}

#[test]
fn vendored_files_match_their_recorded_checksums() {
    let vendor = workspace_root().join("host/console/vendor");
    let sums = std::fs::read_to_string(vendor.join("SHA256SUMS")).expect("SHA256SUMS");
    let mut packages = BTreeSet::new();
    for line in sums.lines() {
        let (_, file) = line.split_once("  ").expect("sha256sum line");
        let file = file.trim_start_matches("./");
        packages.insert(file.split('/').next().expect("package folder").to_string());
        let out = std::process::Command::new("sha256sum")
            .arg(vendor.join(file))
            .output()
            .expect("sha256sum");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            line.starts_with(text.split_whitespace().next().unwrap_or("-")),
            "{file} changed: {text}"
        );
    }
    for p in &packages {
        assert!(vendor.join(p).join("LICENSE").is_file(), "{p} has no LICENSE");
    }
    assert!(packages.contains("cytoscape") && packages.contains("uplot"), "{packages:?}");
}

/// Every page, at desktop and phone sizes: it renders, logs no console errors, and leaves a
/// screenshot. Then the graph contract, find/hide, node panel, URL round-trip, app charts.
#[test]
fn console_on_the_demo() {
    let m = demo();
    let b = base(&m);
    with_browser(|c| async move {
        // Overview: one card per namespace; validation counts are the API's.
        c.goto(&format!("{b}/console/")).await.expect("open");
        wait_js(
            &c,
            "return document.querySelector('[data-testid=overview]')?.dataset.state === 'drawn'",
            "overview",
        )
        .await;
        let cards = js(&c, "return [...document.querySelectorAll('[data-testid=ns-card]')].map(e => ({ns: e.dataset.namespace, errors: +e.dataset.errors, warnings: +e.dataset.warnings, healthy: +e.dataset.healthy, degraded: +e.dataset.degraded, failing: +e.dataset.failing}))", vec![]).await;
        let namespaces = m.get("/api/namespaces").json();
        assert_eq!(
            cards.as_array().expect("cards").len(),
            namespaces.as_array().expect("ns").len(),
            "{cards}"
        );
        let ambient = js(&c, "return [...document.querySelectorAll('[data-testid=ns-card][data-ambient=true]')].map(e => e.dataset.namespace)", vec![]).await;
        assert_eq!(ambient, json!(["travel"]), "the overview shows the ambient namespace");
        let book = cards
            .as_array()
            .expect("cards")
            .iter()
            .find(|c| c["ns"] == "bookinfo")
            .expect("bookinfo card")
            .clone();
        let v = m.get("/api/namespaces/bookinfo/mesh_validations").json();
        let errors = v.to_string().matches("\"severity\":\"error\"").count();
        assert_eq!(book["errors"], json!(errors), "{book}");
        // The card counts the server's statuses, with no thresholds of its own.
        let apps = m.get("/api/namespaces/bookinfo/health").json();
        let count = |status: &str| {
            apps.as_object().expect("health").values().filter(|h| h["status"] == status).count()
                as u64
        };
        for (card, status) in
            [("healthy", "healthy"), ("degraded", "degraded"), ("failing", "failure")]
        {
            assert_eq!(book[card].as_u64(), Some(count(status)), "{card}: {book} vs {apps}");
        }
        // productpage has 5 % 500s: degraded under the default rule.
        assert!(book["degraded"].as_u64().unwrap_or(0) >= 1, "{book}");
        c.find(Locator::Css("[data-testid=ns-card][data-namespace=bookinfo]"))
            .await
            .expect("card")
            .click()
            .await
            .expect("click");
        wait_graph(&c).await;
        let url = c.current_url().await.expect("url");
        assert!(url.as_str().contains("/console/graph?namespaces=bookinfo"), "{url}");
        // Nodes are coloured by the server's healthStatus (the health appender), nothing else.
        let colours = js(
            &c,
            "const cls = {healthy: 'healthy', degraded: 'degraded', failure: 'failing'}; \
             const ns = window.meshlensGraph.nodes(); \
             return {wrong: ns.filter(n => !n.hasClass('c-' + (cls[n.data('healthStatus')] || 'na'))).map(n => n.id()), \
                     judged: ns.filter(n => n.data('healthStatus')).length, \
                     unhealthy: ns.filter(n => ['degraded', 'failure'].includes(n.data('healthStatus'))).length}",
            vec![],
        )
        .await;
        assert_eq!(colours["wrong"], json!([]), "{colours}");
        assert!(colours["judged"].as_u64().unwrap_or(0) > 0, "{colours}");
        assert!(colours["unhealthy"].as_u64().unwrap_or(0) > 0, "{colours}");

        // The drawn graph is the API's, for several parameter sets (boxes included).
        for (q, api) in [
            (
                "namespaces=bookinfo&graphType=versionedApp",
                "/api/namespaces/graph?namespaces=bookinfo&graphType=versionedApp&duration=10m",
            ),
            (
                "namespaces=bookinfo,istio-system&graphType=workload&injectServiceNodes=true",
                "/api/namespaces/graph?namespaces=bookinfo,istio-system&graphType=workload&injectServiceNodes=true&duration=10m",
            ),
            (
                "namespaces=bookinfo&graphType=versionedApp&groupBy=app",
                "/api/namespaces/graph?namespaces=bookinfo&graphType=versionedApp&groupBy=app&duration=10m",
            ),
            (
                "namespaces=bookinfo&graphType=service",
                "/api/namespaces/graph?namespaces=bookinfo&graphType=service&duration=10m",
            ),
            (
                "namespaces=bookinfo&graphType=app&appenders=deadNode",
                "/api/namespaces/graph?namespaces=bookinfo&graphType=app&appenders=deadNode&duration=10m",
            ),
            (
                "namespaces=bookinfo&app=reviews&graphType=versionedApp",
                "/api/namespaces/bookinfo/applications/reviews/graph?graphType=versionedApp&duration=10m",
            ),
            (
                "namespaces=bookinfo&workload=productpage-v1",
                "/api/namespaces/bookinfo/workloads/productpage-v1/graph?graphType=workload&duration=10m",
            ),
            // The ambient namespace: the selector's and the toggle's parameters reach the API.
            (
                "namespaces=travel&ambientTraffic=ztunnel&waypoints=true",
                "/api/namespaces/graph?namespaces=travel&ambientTraffic=ztunnel&waypoints=true&duration=10m",
            ),
            ("namespaces=travel", "/api/namespaces/graph?namespaces=travel&duration=10m"),
        ] {
            graph_matches_api(&c, &m, q, api).await;
            no_console_errors(&c, q).await;
        }
        // Ambient and waypoint badges on the drawn nodes, never "no sidecar" (the API's
        // flags are the oracle).
        let g = graph_matches_api(
            &c,
            &m,
            "namespaces=travel&waypoints=true",
            "/api/namespaces/graph?namespaces=travel&waypoints=true&duration=10m",
        )
        .await;
        let labels = js(
            &c,
            "return Object.fromEntries(window.meshlensGraph.nodes()
               .map((n) => [n.id(), String(n.data('label') || '')]))",
            vec![],
        )
        .await;
        let mut seen = BTreeSet::new();
        for n in g["elements"]["nodes"].as_array().expect("nodes") {
            let d = &n["data"];
            let label = labels[d["id"].as_str().expect("id")].as_str().unwrap_or_default();
            let want = if d["isWaypoint"] == true {
                "[waypoint]"
            } else if d["isAmbient"] == true {
                "[ambient]"
            } else {
                ""
            };
            assert!(label.contains(want), "{label:?} lacks {want}: {d}");
            assert!(!label.contains("no sidecar"), "{label:?}: {d}");
            seen.insert(want);
        }
        assert!(seen.contains("[waypoint]") && seen.contains("[ambient]"), "{seen:?}");
        let boxed = graph_matches_api(
            &c,
            &m,
            "namespaces=bookinfo&graphType=versionedApp&groupBy=app",
            "/api/namespaces/graph?namespaces=bookinfo&graphType=versionedApp&groupBy=app",
        )
        .await;
        assert!(
            boxed["elements"]["nodes"]
                .as_array()
                .expect("nodes")
                .iter()
                .any(|n| n["data"]["isGroup"] == "app"),
            "the API has boxes"
        );
        screenshot(&c, "graph-boxes").await;

        // Find highlights exactly what the expression selects; hide removes exactly that.
        let q = "namespaces=bookinfo,istio-system&graphType=workload&injectServiceNodes=true&edgeLabels=rps";
        let g = graph_matches_api(&c, &m, q, "/api/namespaces/graph?namespaces=bookinfo,istio-system&graphType=workload&injectServiceNodes=true").await;
        let nodes = g["elements"]["nodes"].as_array().expect("nodes").clone();
        let edges = g["elements"]["edges"].as_array().expect("edges").clone();
        let node_ids = |f: &dyn Fn(&Value) -> bool| -> BTreeSet<String> {
            nodes
                .iter()
                .filter(|n| f(&n["data"]))
                .map(|n| n["data"]["id"].as_str().expect("id").to_string())
                .collect()
        };
        let pct = |d: &Value| -> f64 {
            let r = &d["traffic"]["rates"];
            r["httpPercentErr"]
                .as_str()
                .or(r["grpcPercentErr"].as_str())
                .and_then(|s| s.parse().ok())
                .unwrap_or(0.0)
        };
        type_into(&c, "ctl-find", "node = service").await;
        let drawn = wait_graph(&c).await;
        let services = node_ids(&|d| d["nodeType"] == "service");
        assert!(!services.is_empty());
        assert_eq!(split_ids(&drawn["found"]), services);
        type_into(&c, "ctl-find", "%error > 1").await;
        let drawn = wait_graph(&c).await;
        let want: BTreeSet<String> = edges
            .iter()
            .filter(|e| pct(&e["data"]) > 1.0)
            .map(|e| e["data"]["id"].as_str().expect("id").to_string())
            .collect();
        assert!(!want.is_empty());
        assert_eq!(split_ids(&drawn["found"]), want);
        type_into(&c, "ctl-find", "name = reviews or hasMissingSC").await;
        let drawn = wait_graph(&c).await;
        let want = node_ids(&|d| {
            d["nodeType"] == "service" && d["service"] == "reviews"
                || d["nodeType"] == "workload" && d["workload"] == "reviews"
                || d["hasMissingSC"] == true
        });
        assert_eq!(split_ids(&drawn["found"]), want);
        let edge_ids = |f: &dyn Fn(&Value) -> bool| -> BTreeSet<String> {
            edges
                .iter()
                .filter(|e| f(&e["data"]))
                .map(|e| e["data"]["id"].as_str().expect("id").to_string())
                .collect()
        };
        let rps = |d: &Value| -> f64 {
            ["http", "grpc"]
                .iter()
                .filter_map(|k| {
                    d["traffic"]["rates"][k].as_str().and_then(|s| s.parse::<f64>().ok())
                })
                .sum()
        };
        // The issue's examples, each against the API's own fields.
        for (expr, want) in [
            ("rps > 5", edge_ids(&|d| rps(d) > 5.0)),
            ("ns = istio-system", node_ids(&|d| d["namespace"] == "istio-system")),
            ("hasCB", node_ids(&|d| d["hasCB"] == true)),
            (
                "node = workload and not ns = bookinfo",
                node_ids(&|d| d["nodeType"] == "workload" && d["namespace"] != "bookinfo"),
            ),
        ] {
            assert!(!want.is_empty(), "{expr} selects something in the demo");
            type_into(&c, "ctl-find", expr).await;
            let drawn = wait_graph(&c).await;
            assert_eq!(split_ids(&drawn["found"]), want, "find {expr}");
        }
        // Hiding is the server's (issue #34): the console draws exactly the server's answer
        // for the same expression, and what the server left out is what the expression
        // selects. Hiding edges removes exactly those edges and no node.
        let server_hidden = |expr: &str| -> Value {
            let q = meshlens_params::query::query_string(&[("hide", expr)]);
            m.get(&format!("/api/namespaces/graph?namespaces=bookinfo,istio-system&graphType=workload&injectServiceNodes=true&{q}")).json()
        };
        type_into(&c, "ctl-find", "").await;
        type_into(&c, "ctl-hide", "%error > 1").await;
        let drawn = wait_graph(&c).await;
        let failing = edge_ids(&|d| pct(d) > 1.0);
        let answer = server_hidden("%error > 1");
        let server_edges = ids(&answer["elements"]["edges"]);
        let all_edges = edge_ids(&|_| true);
        assert_eq!(all_edges.difference(&server_edges).cloned().collect::<BTreeSet<_>>(), failing);
        assert_eq!(split_ids(&drawn["ids"]), ids(&answer["elements"]["nodes"]));
        assert_eq!(drawn["edges"], json!((edges.len() - failing.len()).to_string()));
        assert_eq!(drawn["nodes"], json!(nodes.len().to_string()));
        type_into(&c, "ctl-hide", "node = service").await;
        let drawn = wait_graph(&c).await;
        let kept = node_ids(&|d| d["nodeType"] != "service");
        assert_eq!(split_ids(&drawn["ids"]), kept);
        let answer = server_hidden("node = service");
        assert_eq!(split_ids(&drawn["ids"]), ids(&answer["elements"]["nodes"]));
        let hidden: BTreeSet<String> =
            node_ids(&|_| true).difference(&split_ids(&drawn["ids"])).cloned().collect();
        assert_eq!(hidden, services);
        let kept_edges = edges
            .iter()
            .filter(|e| {
                kept.contains(e["data"]["source"].as_str().unwrap_or(""))
                    && kept.contains(e["data"]["target"].as_str().unwrap_or(""))
            })
            .count();
        assert_eq!(drawn["edges"], json!(kept_edges.to_string()));
        // A bad expression says why and changes nothing.
        type_into(&c, "ctl-hide", "rps >").await;
        wait_js(
            &c,
            "return document.querySelector('[data-testid=expr-error]').textContent",
            "an expression error",
        )
        .await;
        type_into(&c, "ctl-hide", "").await;
        let drawn = wait_graph(&c).await;
        assert_eq!(drawn["nodes"], json!(nodes.len().to_string()));
        no_console_errors(&c, "find/hide").await;

        // The console's expression checker (find.js) agrees with the server's language on the
        // shared table (crates/graph-scope/tests/expressions.json).
        let table: Value = serde_json::from_str(include_str!(
            "../../../crates/graph-scope/tests/expressions.json"
        ))
        .expect("table");
        let got = js(
            &c,
            "const [table] = arguments;
             return import(new URL('js/find.js', document.baseURI).href).then(({ compile }) =>
               table.cases.map((c) => {
                 try {
                   const e = compile(c.expr);
                   const list = e.kind === 'edge' ? table.graph.elements.edges : table.graph.elements.nodes;
                   return { kind: e.kind, ids: list.map((x) => x.data).filter((d) => e.test(d)).map((d) => d.id) };
                 } catch (err) { return { error: String(err.message) }; }
               }));",
            vec![table.clone()],
        )
        .await;
        for (case, got) in
            table["cases"].as_array().expect("cases").iter().zip(got.as_array().expect("results"))
        {
            if let Some(kind) = case["error"].as_str() {
                let msg =
                    got["error"].as_str().unwrap_or_else(|| panic!("{case}: no error in {got}"));
                let seen = if msg.contains("unknown attribute") {
                    "unknown"
                } else if msg.contains("not both") {
                    "mixed"
                } else {
                    "syntax"
                };
                assert_eq!(seen, kind, "{case}: {msg}");
            } else {
                assert_eq!(got["kind"], case["kind"], "{case}");
                let want: BTreeSet<&str> =
                    case["ids"].as_array().expect("ids").iter().filter_map(Value::as_str).collect();
                let have: BTreeSet<&str> =
                    got["ids"].as_array().expect("ids").iter().filter_map(Value::as_str).collect();
                assert_eq!(have, want, "{case}");
            }
        }

        // Focus on a node from its side panel: the address carries focus and hops, and the
        // drawing is the server's neighbourhood.
        let pp = nodes
            .iter()
            .find(|n| {
                n["data"]["workload"] == "productpage-v1" && n["data"]["nodeType"] == "workload"
            })
            .expect("productpage")["data"]["id"]
            .as_str()
            .expect("id")
            .to_string();
        click_node(&c, &pp).await;
        wait_js(
            &c,
            "return document.querySelector('[data-testid=panel-focus]') !== null",
            "the focus button",
        )
        .await;
        type_into(&c, "panel-hops", "1").await;
        c.find(Locator::Css("[data-testid=panel-focus]"))
            .await
            .expect("focus")
            .click()
            .await
            .expect("click");
        let drawn = wait_graph(&c).await;
        let url = c.current_url().await.expect("url").to_string();
        assert!(url.contains(&format!("focus={pp}")) && url.contains("hops=1"), "{url}");
        let q = meshlens_params::query::query_string(&[("focus", pp.as_str()), ("hops", "1")]);
        let answer = m.get(&format!("/api/namespaces/graph?namespaces=bookinfo,istio-system&graphType=workload&injectServiceNodes=true&{q}")).json();
        assert_eq!(split_ids(&drawn["ids"]), ids(&answer["elements"]["nodes"]));
        assert!(split_ids(&drawn["ids"]).len() < nodes.len(), "{drawn}");
        c.find(Locator::Css("[data-testid=ctl-unfocus]"))
            .await
            .expect("unfocus")
            .click()
            .await
            .expect("click");
        let drawn = wait_graph(&c).await;
        assert_eq!(drawn["nodes"], json!(nodes.len().to_string()));
        no_console_errors(&c, "focus").await;

        // A node click opens the panel with the API's health numbers.
        let reviews_v2 = nodes
            .iter()
            .find(|n| n["data"]["workload"] == "reviews-v2" && n["data"]["nodeType"] == "workload")
            .expect("reviews-v2");
        click_node(&c, reviews_v2["data"]["id"].as_str().expect("id")).await;
        let panel = wait_js(&c, "const h = document.querySelector('[data-testid=panel-health]'); if (!h || h.dataset.state !== 'drawn') return null;
            return {rateInterval: h.dataset.rateInterval, requests: +h.querySelector('[data-testid=health-request-count]').dataset.value, errors: +h.querySelector('[data-testid=health-error-count]').dataset.value}", "the node panel").await;
        let health = m
            .get(&format!(
                "/api/namespaces/bookinfo/workloads/reviews-v2/health?rateInterval={}",
                panel["rateInterval"].as_str().expect("rateInterval")
            ))
            .json();
        // Same numbers; the two requests sum the same samples in another order (last-bit noise).
        let close = |a: &Value, b: &Value| {
            let (a, b) = (a.as_f64().unwrap_or(f64::NAN), b.as_f64().unwrap_or(f64::NAN));
            (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
        };
        assert!(
            close(&panel["requests"], &health["requests"]["requestCount"]),
            "{panel} vs {health}"
        );
        assert!(
            close(&panel["errors"], &health["requests"]["requestErrorCount"]),
            "{panel} vs {health}"
        );
        assert!(panel["requests"].as_f64().unwrap_or(0.0) > 0.0, "{panel}");
        screenshot(&c, "graph-node-panel").await;

        // URL round trip: the address reproduces the view (controls, find, hide, selection).
        let url = c.current_url().await.expect("url").to_string();
        assert!(url.contains("select="), "{url}");
        type_into(&c, "ctl-find", "ns = istio-system").await;
        let before = wait_graph(&c).await;
        let url = c.current_url().await.expect("url").to_string();
        c.goto("about:blank").await.expect("blank");
        c.goto(&url).await.expect("reopen");
        let after = wait_graph(&c).await;
        assert_eq!(before, after, "{url}");
        let controls = js(&c, "const v = (t) => document.querySelector(`[data-testid=${t}]`);
            return [v('ctl-graphType').value, v('ctl-find').value, v('ctl-edgeLabels').value, v('ctl-injectServiceNodes').checked, document.querySelector('[data-testid=panel]').dataset.id]", vec![]).await;
        assert_eq!(
            controls,
            json!(["workload", "ns = istio-system", "rps", true, reviews_v2["data"]["id"]])
        );
        no_console_errors(&c, "graph round trip").await;

        // App page: as many charts and series as the dashboard JSON the page asked for.
        c.goto(&format!("{b}/console/app?namespace=bookinfo&app=reviews")).await.expect("app page");
        let api_path = wait_js(&c, "const d = document.querySelector('[data-testid=dashboard]'); return d && d.dataset.state === 'drawn' && d.dataset.api", "the app dashboard").await;
        let dash = m.get(&format!("/api/{}", api_path.as_str().expect("path"))).json();
        let drawn = js(&c, "return [...document.querySelectorAll('[data-testid=dashboard] [data-testid=chart]')].map(e => +e.dataset.series)", vec![]).await;
        let want: Vec<usize> = dash["charts"]
            .as_array()
            .expect("charts")
            .iter()
            .map(|ch| {
                ch["metric"]["matrix"].as_array().map_or(0, Vec::len)
                    + ch["histogram"].as_object().map_or(0, |h| {
                        h.values().map(|s| s["matrix"].as_array().map_or(0, Vec::len)).sum()
                    })
            })
            .collect();
        assert_eq!(drawn, json!(want), "{api_path}");
        assert!(want.iter().sum::<usize>() > 0, "the demo has traffic for reviews");
        // The by-label choice asks the API again, grouped.
        let sel = c.find(Locator::Css("[data-testid=dash-byLabels]")).await.expect("byLabels");
        sel.select_by_value("source_app").await.expect("select");
        let api_path = wait_js(&c, "const d = document.querySelector('[data-testid=dashboard]'); return d.dataset.state === 'drawn' && d.dataset.api.includes('byLabels') && d.dataset.api", "grouped dashboard").await;
        let dash = m.get(&format!("/api/{}", api_path.as_str().expect("path"))).json();
        let drawn = js(&c, "return [...document.querySelectorAll('[data-testid=dashboard] [data-testid=chart]')].reduce((a, e) => a + +e.dataset.series, 0)", vec![]).await;
        let want: usize = dash["charts"]
            .as_array()
            .expect("charts")
            .iter()
            .map(|ch| {
                ch["metric"]["matrix"].as_array().map_or(0, Vec::len)
                    + ch["histogram"].as_object().map_or(0, |h| {
                        h.values().map(|s| s["matrix"].as_array().map_or(0, Vec::len)).sum()
                    })
            })
            .sum();
        assert_eq!(drawn, json!(want), "{api_path}");
        let details = m.get("/api/namespaces/bookinfo/apps/reviews").json();
        let refs: usize = details["runtimes"]
            .as_array()
            .expect("runtimes")
            .iter()
            .map(|r| r["dashboardRefs"].as_array().map_or(0, Vec::len))
            .sum();
        let custom = js(
            &c,
            "return document.querySelectorAll('[data-testid=custom-dashboard]').length",
            vec![],
        )
        .await;
        assert_eq!(custom, json!(refs));
        assert!(refs > 0);

        // Mesh config: the broken VirtualService shows as failing with its check.
        c.goto(&format!("{b}/console/mesh?namespace=bookinfo")).await.expect("mesh");
        let st = wait_js(&c, "return document.querySelector('[data-object=\"virtualservice/ratings\"]')?.dataset.status", "mesh objects").await;
        assert_eq!(st, "failing");
        let ok = js(&c, "return document.querySelector('[data-object=\"virtualservice/reviews\"]').dataset.status", vec![]).await;
        assert_eq!(ok, "healthy");
        c.goto(&format!(
            "{b}/console/mesh/object?namespace=bookinfo&objectType=virtualservices&object=ratings"
        ))
        .await
        .expect("object");
        let checks = wait_js(
            &c,
            "return document.querySelector('[data-testid=object-checks]')?.innerText",
            "object checks",
        )
        .await;
        let checks = checks.as_str().unwrap_or_default();
        assert!(
            checks.contains("Weight sum should be 100")
                && checks.contains("spec/http[0]/route")
                && checks.contains("error"),
            "{checks}"
        );
        let spec =
            js(&c, "return document.querySelector('[data-testid=object-spec]').innerText", vec![])
                .await;
        assert!(spec.as_str().unwrap_or_default().contains("\"hosts\""), "{spec}");
        no_console_errors(&c, "mesh").await;

        // Every page at both sizes: renders, no console errors, a screenshot each.
        let pages = [
            (
                "overview",
                "/console/",
                "document.querySelector('[data-testid=overview]')?.dataset.state === 'drawn'",
            ),
            (
                "graph",
                "/console/graph?namespaces=bookinfo,istio-system&graphType=versionedApp&edgeLabels=rps",
                "document.querySelector('[data-testid=graph]')?.dataset.state === 'drawn'",
            ),
            (
                "app",
                "/console/app?namespace=bookinfo&app=reviews",
                "document.querySelector('[data-testid=dashboard]')?.dataset.state === 'drawn'",
            ),
            (
                "workload",
                "/console/workload?namespace=bookinfo&workload=reviews-v1",
                "!!document.querySelector('[data-testid=pods]')",
            ),
            (
                "mesh",
                "/console/mesh?namespace=bookinfo",
                "!!document.querySelector('[data-testid=mesh-objects]')",
            ),
            (
                "mesh-object",
                "/console/mesh/object?namespace=bookinfo&objectType=virtualservices&object=ratings",
                "!!document.querySelector('[data-testid=object-spec]')",
            ),
        ];
        for (w, h, size) in [(1280u32, 800u32, "desktop"), (390, 844, "phone")] {
            c.set_window_size(w, h).await.expect("size");
            for (name, path, ready) in pages {
                c.goto(&format!("{b}{path}")).await.expect("open page");
                wait_js(&c, &format!("return {ready}"), name).await;
                // Nothing may stick out sideways on a phone (the page scrolls only down).
                let overflow = js(&c, "return document.documentElement.scrollWidth - document.documentElement.clientWidth", vec![]).await;
                assert!(
                    overflow.as_i64().unwrap_or(0) <= 1,
                    "{name} at {w}x{h} is {overflow}px too wide"
                );
                screenshot(&c, &format!("{name}-{size}")).await;
                no_console_errors(&c, &format!("{name} at {w}x{h}")).await;
            }
        }
    });
}

#[test]
fn console_mesh_pages_show_the_security_sidecar_and_gateway_api_kinds() {
    let plugins = tempfile::tempdir().expect("temp dir");
    let cfg = cluster_only_config(
        "source = \"snapshot\"\nsnapshot = [\"tests/fixtures/config-kinds\"]",
        plugins.path(),
    );
    let m = Meshlens::start(&cfg, &[], vec![plugins]).expect("meshlens starts");
    let b = base(&m);
    let validations = m.get("/api/namespaces/shop/mesh_validations").json();
    with_browser(|c| async move {
        c.goto(&format!("{b}/console/mesh?namespace=shop")).await.expect("mesh");
        wait_js(
            &c,
            "return !!document.querySelector('[data-testid=mesh-objects]')",
            "mesh objects",
        )
        .await;
        // Every object of the API's namespaceValidations shows, with the API's status.
        let shown = js(&c, "return Object.fromEntries([...document.querySelectorAll('[data-testid=mesh-object-status]')].map(e => [e.dataset.object, e.dataset.status]))", vec![]).await;
        let shown = shown.as_object().expect("statuses").clone();
        let mut expected = 0;
        for (kind, objects) in validations["shop"].as_object().expect("typed map") {
            for (name, v) in objects.as_object().expect("by name") {
                let checks = v["checks"].as_array().expect("checks");
                let want = if checks.iter().any(|c| c["severity"] == "error") {
                    "failing"
                } else if checks.is_empty() {
                    "healthy"
                } else {
                    "degraded"
                };
                assert_eq!(
                    shown.get(&format!("{kind}/{name}")),
                    Some(&json!(want)),
                    "{kind}/{name}"
                );
                expected += 1;
            }
        }
        assert_eq!(shown.len(), expected, "{shown:?}");
        let headings = js(&c, "return [...document.querySelectorAll('[data-testid=mesh-objects] h2')].map(e => e.innerText)", vec![]).await;
        for h in [
            "AuthorizationPolicies",
            "PeerAuthentications",
            "Sidecars",
            "Gateways (Gateway API)",
            "HTTPRoutes",
            "GRPCRoutes",
        ] {
            assert!(headings.as_array().is_some_and(|a| a.contains(&json!(h))), "{h}: {headings}");
        }
        // One object: its checks with their KIA codes, and its spec.
        c.goto(&format!(
            "{b}/console/mesh/object?namespace=shop&objectType=k8shttproutes&object=route-broken"
        ))
        .await
        .expect("object");
        let checks = wait_js(
            &c,
            "return document.querySelector('[data-testid=object-checks]')?.innerText",
            "object checks",
        )
        .await;
        let checks = checks.as_str().unwrap_or_default();
        for part in [
            "KIA1401",
            "KIA1402",
            "spec/parentRefs[0]/name/missing",
            "spec/rules[0]/backendRefs[1]/name",
            "non-existent or inaccessible K8s gateway",
        ] {
            assert!(checks.contains(part), "{part}: {checks}");
        }
        let spec =
            js(&c, "return document.querySelector('[data-testid=object-spec]').innerText", vec![])
                .await;
        assert!(spec.as_str().unwrap_or_default().contains("\"parentRefs\""), "{spec}");
        screenshot(&c, "mesh-object-k8shttproute-desktop").await;
        no_console_errors(&c, "mesh pages of the new kinds").await;
    });
}

#[test]
fn console_login_with_wrong_right_and_expired_credentials() {
    let start = |lifetime: &str| {
        let plugins = tempfile::tempdir().expect("temp dir");
        let cfg = cluster_only_config("source = \"snapshot\"\nsnapshot = [\"config/demo\"]", plugins.path()).replace(
            "strategy = \"anonymous\"",
            &format!("strategy = \"login\"\nusername = \"admin\"\npassword = \"s3cret-pass\"\ntoken_lifetime = \"{lifetime}\""),
        );
        Meshlens::start(&cfg, &[], vec![plugins]).expect("meshlens starts")
    };
    let m = start("1h");
    let short = start("1s");
    let b = base(&m);
    let token = short
        .get_with("/api/token", &[("Authorization", &basic_auth("admin", "s3cret-pass"))])
        .json()["token"]
        .as_str()
        .expect("token")
        .to_string();
    with_browser(|c| async move {
        let mesh = format!("{b}/console/mesh?namespace=bookinfo");
        c.goto(&mesh).await.expect("open");
        wait_js(&c, "return document.getElementById('login').open", "the login form").await;
        screenshot(&c, "login").await;
        // Wrong password: the form stays, with the server's message.
        c.find(Locator::Css("[data-testid=login-user]"))
            .await
            .expect("user")
            .send_keys("admin")
            .await
            .expect("type");
        c.find(Locator::Css("[data-testid=login-password]"))
            .await
            .expect("pass")
            .send_keys("wrong")
            .await
            .expect("type");
        c.find(Locator::Css("[data-testid=login-submit]"))
            .await
            .expect("submit")
            .click()
            .await
            .expect("click");
        let msg = wait_js(
            &c,
            "return document.querySelector('[data-testid=login-error]').textContent",
            "the login error",
        )
        .await;
        assert_eq!(msg, "invalid user or password");
        assert_eq!(
            js(&c, "return document.getElementById('login').open", vec![]).await,
            json!(true)
        );
        assert_eq!(
            js(&c, "return sessionStorage.getItem('meshlens.token')", vec![]).await,
            Value::Null
        );
        // Right password: the page loads, the token sits in this tab's session storage.
        c.find(Locator::Css("[data-testid=login-password]"))
            .await
            .expect("pass")
            .send_keys("s3cret-pass")
            .await
            .expect("type");
        c.find(Locator::Css("[data-testid=login-submit]"))
            .await
            .expect("submit")
            .click()
            .await
            .expect("click");
        let st = wait_js(&c, "return document.querySelector('[data-object=\"virtualservice/ratings\"]')?.dataset.status", "mesh objects after login").await;
        assert_eq!(st, "failing");
        assert_eq!(
            js(&c, "return document.getElementById('login').open", vec![]).await,
            json!(false)
        );
        let stored = js(&c, "return sessionStorage.getItem('meshlens.token')", vec![]).await;
        let stored = stored.as_str().expect("a stored token").to_string();
        assert_eq!(
            m.get_with("/api/namespaces", &[("Authorization", &format!("Bearer {stored}"))]).status,
            200
        );
        // The token survives a reload of the tab.
        c.refresh().await.expect("reload");
        wait_js(
            &c,
            "return document.querySelector('[data-object=\"virtualservice/ratings\"]')",
            "mesh objects after reload",
        )
        .await;
        let _ = console_errors(&c).await; // the 401s above are logged as failed loads; expected

        // An expired token brings the form back with the reason.
        let sb = base(&short);
        c.goto(&format!("{sb}/console/")).await.expect("open other server");
        std::thread::sleep(std::time::Duration::from_millis(2100));
        js(&c, "sessionStorage.setItem('meshlens.token', arguments[0])", vec![json!(token)]).await;
        c.goto(&format!("{sb}/console/mesh?namespace=bookinfo")).await.expect("open");
        let msg = wait_js(&c, "const d = document.getElementById('login'); return d.open && document.querySelector('[data-testid=login-error]').textContent", "the login form for an expired token").await;
        assert_eq!(msg, "token expired");
        assert_eq!(
            js(&c, "return sessionStorage.getItem('meshlens.token')", vec![]).await,
            Value::Null
        );
    });
}

/// A fixed window on a real Prometheus: the drawn graphs are the API's, node for node.
#[test]
fn console_graph_on_prometheus_matches_the_api() {
    let f = fixture(&["--end", "1700000000", "--minutes", "30"]);
    let prom = PromServer::start(&f);
    let dir = plugin_dir(BUNDLED);
    let demo = workspace_root().join("config").join("demo");
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\n[cluster]\nsource = \"snapshot\"\nsnapshot = [{demo:?}]\n[metrics]\nbackend = \"prometheus\"\n[metrics.prometheus]\nurl = {:?}\n",
        dir.path(),
        prom.url()
    );
    let m = Meshlens::start(&cfg, &[], vec![dir]).expect("meshlens starts");
    let end = f.end();
    with_browser(|c| async move {
        for (ty, extra) in [
            ("workload", "&injectServiceNodes=true"),
            ("versionedApp", "&groupBy=version"),
            ("app", ""),
            ("service", ""),
        ] {
            let q = format!(
                "namespaces=bookinfo,istio-system&graphType={ty}&duration=600s&queryTime={end}{extra}"
            );
            let g = graph_matches_api(&c, &m, &q, &format!("/api/namespaces/graph?{q}")).await;
            assert!(g["elements"]["edges"].as_array().expect("edges").len() >= 5, "{q}: {g}");
            no_console_errors(&c, &q).await;
        }
        // The edge panel shows the API's protocol and rates.
        let q = format!("namespaces=bookinfo&graphType=workload&duration=600s&queryTime={end}");
        let g = graph_matches_api(&c, &m, &q, &format!("/api/namespaces/graph?{q}")).await;
        let edge = g["elements"]["edges"]
            .as_array()
            .expect("edges")
            .iter()
            .find(|e| e["data"]["traffic"]["protocol"] == "grpc")
            .expect("a grpc edge")
            .clone();
        let id = edge["data"]["id"].as_str().expect("id");
        js(
            &c,
            "const cy = window.meshlensGraph; cy.getElementById(arguments[0]).emit('tap')",
            vec![json!(id)],
        )
        .await;
        let shown = wait_js(&c, "const p = document.querySelector('[data-testid=panel]'); return p.dataset.kind === 'edge' && [p.querySelector('[data-testid=edge-protocol]').textContent, p.querySelector('[data-testid=edge-rate-grpc]').textContent]", "the edge panel").await;
        assert_eq!(shown, json!(["grpc", edge["data"]["traffic"]["rates"]["grpc"]]));

        // Export: the JSON is the API's answer, the DOT is the API's DOT, the SVG draws exactly
        // the drawn nodes and edges, the PNG is an image of the drawing.
        let q = format!(
            "namespaces=bookinfo,istio-system&graphType=versionedApp&groupBy=app&duration=600s&queryTime={end}"
        );
        let api = graph_matches_api(&c, &m, &q, &format!("/api/namespaces/graph?{q}")).await;
        let drawn = wait_graph(&c).await;
        let file = export_file(&c, "JSON").await;
        assert_eq!(file["name"], "meshlens-graph-versionedApp.json");
        assert_eq!(file["type"], "application/json");
        let text = file["text"].as_str().expect("json text");
        assert_eq!(serde_json::from_str::<Value>(text).expect("JSON"), api);
        let file = export_file(&c, "DOT").await;
        assert_eq!(file["name"], "meshlens-graph-versionedApp.dot");
        assert_eq!(file["type"], "text/vnd.graphviz");
        let dot = m.get(&format!("/api/namespaces/graph?{q}&format=dot"));
        assert_eq!(dot.status, 200);
        assert_eq!(file["text"].as_str(), Some(dot.text().as_str()));
        assert!(dot.text().starts_with("digraph"), "{}", dot.text());

        let svg_ids = "const doc = new DOMParser().parseFromString(arguments[0], 'image/svg+xml');
            if (doc.querySelector('parsererror')) return 'not SVG';
            const ids = (sel) => [...doc.querySelectorAll(sel)].map((e) => e.dataset.id).sort();
            return {root: doc.documentElement.localName, nodes: ids('.node'), boxes: ids('.box'), edges: ids('.edge')};";
        let file = export_file(&c, "SVG").await;
        assert_eq!(file["name"], "meshlens-graph-versionedApp.svg");
        assert_eq!(file["type"], "image/svg+xml");
        let svg = js(&c, svg_ids, vec![file["text"].clone()]).await;
        let api_nodes = api["elements"]["nodes"].as_array().expect("nodes");
        let boxes: BTreeSet<String> = api_nodes
            .iter()
            .filter(|n| n["data"]["isGroup"].is_string())
            .map(|n| n["data"]["id"].as_str().expect("id").to_string())
            .collect();
        assert!(!boxes.is_empty(), "groupBy=app gives boxes");
        let svg_set = |k: &str| -> BTreeSet<String> {
            svg[k]
                .as_array()
                .expect(k)
                .iter()
                .map(|v| v.as_str().expect("id").to_string())
                .collect()
        };
        assert_eq!(svg["root"], "svg", "{svg}");
        let leaves: BTreeSet<String> =
            split_ids(&drawn["ids"]).difference(&boxes).cloned().collect();
        assert_eq!(svg_set("nodes"), leaves);
        assert_eq!(svg_set("boxes"), boxes);
        assert_eq!(svg_set("edges"), ids(&api["elements"]["edges"]));
        // The SVG is of what is drawn: hidden nodes and their edges are left out.
        type_into(&c, "ctl-hide", "node = app").await;
        let hidden_view = wait_graph(&c).await;
        let hidden: BTreeSet<String> = ids(&api["elements"]["nodes"])
            .difference(&split_ids(&hidden_view["ids"]))
            .cloned()
            .collect();
        assert!(!hidden.is_empty(), "{hidden_view}");
        let file = export_file(&c, "SVG").await;
        let svg = js(&c, svg_ids, vec![file["text"].clone()]).await;
        let svg_set = |k: &str| -> BTreeSet<String> {
            svg[k]
                .as_array()
                .expect(k)
                .iter()
                .map(|v| v.as_str().expect("id").to_string())
                .collect()
        };
        let leaves: BTreeSet<String> =
            split_ids(&hidden_view["ids"]).difference(&boxes).cloned().collect();
        assert_eq!(svg_set("nodes"), leaves);
        assert!(svg_set("nodes").is_disjoint(&hidden));
        assert_eq!(svg_set("edges").len().to_string(), hidden_view["edges"].as_str().unwrap_or(""));
        type_into(&c, "ctl-hide", "").await;
        wait_graph(&c).await;

        let file = export_file(&c, "PNG").await;
        assert_eq!(file["name"], "meshlens-graph-versionedApp.png");
        assert_eq!(file["type"], "image/png");
        assert_eq!(file["head"], json!([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
        // The whole graph (full: true) at twice the scale: an image of some size.
        assert!(
            file["width"].as_u64().unwrap_or(0) >= 100
                && file["height"].as_u64().unwrap_or(0) >= 100,
            "{}",
            json!([file["width"], file["height"], file["size"]])
        );
        no_console_errors(&c, "export").await;
    });
}

/// A graph past the big-graph threshold (801 nodes) takes the fast path: still exactly the
/// API's nodes and edges, find still exact, and labels appear for the nodes in view once the
/// user zooms in (none at the fitted overview, where they would be unreadable).
#[test]
fn console_big_graph_matches_the_api_and_labels_what_is_in_view() {
    let m = synthetic_mesh(40, "3");
    let ns: Vec<String> = (0..40).map(|i| format!("ns-{i}")).collect();
    let ns = ns.join(",");
    with_browser(|c| async move {
        let q = format!(
            "namespaces={ns}&graphType=workload&injectServiceNodes=true&duration=120s&queryTime=1700000000"
        );
        let g = graph_matches_api(&c, &m, &q, &format!("/api/namespaces/graph?{q}")).await;
        let nodes = g["elements"]["nodes"].as_array().expect("nodes");
        assert_eq!(nodes.len(), 801, "40 x (10 workloads + 10 services) + unknown");
        no_console_errors(&c, "big graph").await;
        // Labels of the nodes in view, and only those. labelInView runs 120 ms after the
        // view stops moving; the wait below is bounded by wait_js.
        let labelled = "const cy = window.meshlensGraph; const e = cy.extent();
            const inView = cy.nodes().filter((n) => { const p = n.position(); return p.x >= e.x1 && p.x <= e.x2 && p.y >= e.y1 && p.y <= e.y2; });
            return {zoom: cy.zoom(), labelled: cy.nodes('.lbl').map((n) => n.id()).sort(), inView: inView.map((n) => n.id()).sort()};";
        let overview = js(&c, labelled, vec![]).await;
        assert!(overview["zoom"].as_f64().unwrap_or(9.0) < 0.7, "{}", overview["zoom"]);
        assert_eq!(overview["labelled"], json!([]), "no labels at the overview");
        screenshot(&c, "graph-big").await;
        let target = nodes
            .iter()
            .find(|n| n["data"]["workload"] == "w5-v1" && n["data"]["namespace"] == "ns-7")
            .expect("w5-v1 of ns-7");
        js(
            &c,
            "const cy = window.meshlensGraph; cy.zoom(1.5); cy.center(cy.getElementById(arguments[0]));",
            vec![target["data"]["id"].clone()],
        )
        .await;
        let zoomed = wait_js(
            &c,
            &format!("const v = (() => {{ {labelled} }})(); return v.labelled.length > 0 && v;"),
            "labels after zooming in",
        )
        .await;
        assert_eq!(zoomed["labelled"], zoomed["inView"], "labels exactly for the nodes in view");
        assert!(
            zoomed["labelled"]
                .as_array()
                .expect("ids")
                .iter()
                .any(|id| id == &target["data"]["id"]),
            "{zoomed}"
        );
        screenshot(&c, "graph-big-zoomed").await;
        // Find is as exact on the fast path.
        type_into(&c, "ctl-find", "name = w3").await;
        let drawn = wait_graph(&c).await;
        let want: BTreeSet<String> = nodes
            .iter()
            .filter(|n| n["data"]["nodeType"] == "service" && n["data"]["service"] == "w3")
            .map(|n| n["data"]["id"].as_str().expect("id").to_string())
            .collect();
        assert_eq!(want.len(), 40, "one w3 service per namespace (workloads are named w3-v1)");
        assert_eq!(split_ids(&drawn["found"]), want);
        no_console_errors(&c, "big graph find").await;
    });
}

/// The nodes labelled on a big graph and the nodes in view (labelInView's contract).
const LABELLED_AND_IN_VIEW: &str = "const cy = window.meshlensGraph; const e = cy.extent();
    const inView = cy.nodes().filter((n) => { const p = n.position(); return p.x >= e.x1 && p.x <= e.x2 && p.y >= e.y1 && p.y <= e.y2; });
    return {zoom: cy.zoom(), labelled: cy.nodes('.lbl').map((n) => n.id()).sort(), inView: inView.map((n) => n.id()).sort()};";

/// Zooms a big graph in on node `id` and waits for labelInView: labels exactly for the nodes
/// in view, `id` among them, and its label drawn with its name. Returns the zoomed state.
async fn labels_after_zooming_in(c: &Client, id: &Value, name: &str) -> Value {
    js(
        c,
        "const cy = window.meshlensGraph; cy.zoom(1.5); cy.center(cy.getElementById(arguments[0]));",
        vec![id.clone()],
    )
    .await;
    let zoomed = wait_js(
        c,
        &format!(
            "const v = (() => {{ {LABELLED_AND_IN_VIEW} }})(); return v.labelled.length > 0 && v;"
        ),
        "labels after zooming in",
    )
    .await;
    assert_eq!(zoomed["labelled"], zoomed["inView"], "labels exactly for the nodes in view");
    assert!(
        zoomed["labelled"].as_array().expect("ids").contains(id),
        "{id} not labelled: {zoomed}"
    );
    let label = js(
        c,
        "return window.meshlensGraph.getElementById(arguments[0]).style('label');",
        vec![id.clone()],
    )
    .await;
    assert!(label.as_str().unwrap_or_default().starts_with(name), "label of {id}: {label}");
    zoomed
}

/// The scale benchmark's graph (200 namespaces, 2,001 workload nodes) on the big-graph path:
/// every element of the API's answer is in the drawing at a finite position inside the fitted
/// view, the canvas shows them (coloured pixels, not an empty frame), no label at the
/// overview, labels for the nodes in view after zooming in, and no browser errors.
#[test]
fn console_2001_node_graph_draws_completely_with_labels_in_view() {
    let m = synthetic_mesh(200, "3");
    let ns: Vec<String> = (0..200).map(|i| format!("ns-{i}")).collect();
    let ns = ns.join(",");
    with_browser(|c| async move {
        let q = format!("namespaces={ns}&graphType=workload&duration=120s&queryTime=1700000000");
        let g = graph_matches_api(&c, &m, &q, &format!("/api/namespaces/graph?{q}")).await;
        let nodes = g["elements"]["nodes"].as_array().expect("nodes");
        let edges = g["elements"]["edges"].as_array().expect("edges");
        assert_eq!(nodes.len(), 2001, "200 x 10 workloads + unknown");
        assert_eq!(edges.len(), 2000);
        let drawn = js(
            &c,
            "const cy = window.meshlensGraph; const e = cy.extent();
             const placed = cy.nodes().filter((n) => { const p = n.position();
               return Number.isFinite(p.x) && Number.isFinite(p.y) && p.x >= e.x1 && p.x <= e.x2 && p.y >= e.y1 && p.y <= e.y2; });
             let painted = 0;
             for (const cv of document.querySelectorAll('[data-testid=graph] canvas')) {
               const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
               for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0) painted++;
             }
             const t = performance.getEntriesByName('meshlens-graph').pop();
             return {nodes: cy.nodes().length, edges: cy.edges().length, placed: placed.length, painted,
               big: cy.scratch('big'), curve: cy.edges().first().style('curve-style'),
               labelled: cy.elements('.lbl').length, ms: t && t.duration};",
            vec![],
        )
        .await;
        assert_eq!(drawn["nodes"], json!(nodes.len()), "{drawn}");
        assert_eq!(drawn["edges"], json!(edges.len()), "{drawn}");
        assert_eq!(
            drawn["placed"],
            json!(nodes.len()),
            "every node inside the fitted view: {drawn}"
        );
        assert_eq!(drawn["big"], json!(true), "{drawn}");
        assert_eq!(drawn["curve"], "haystack", "the light style of big graphs: {drawn}");
        assert_eq!(drawn["labelled"], json!(0), "no labels at the overview: {drawn}");
        // Nodes and edges at the overview: a few pixels each on transparent layers, thousands in all.
        assert!(
            drawn["painted"].as_u64().unwrap_or(0) > 1000,
            "the canvas shows the graph: {drawn}"
        );
        println!("2,001-node graph (debug server): request to drawn {} ms", drawn["ms"]);
        screenshot(&c, "graph-2001").await;
        let target = nodes
            .iter()
            .find(|n| n["data"]["workload"] == "w5-v1" && n["data"]["namespace"] == "ns-117")
            .expect("w5-v1 of ns-117");
        let zoomed = labels_after_zooming_in(&c, &target["data"]["id"], "w5-v1").await;
        assert!(zoomed["labelled"].as_array().map_or(0, Vec::len) < 400, "{zoomed}");
        screenshot(&c, "graph-2001-zoomed").await;
        no_console_errors(&c, "2,001-node graph").await;
    });
}

/// Benchmark (ignored by default; prints figures, asserts nothing about time):
/// `cargo test -p integration-tests --test console -- --ignored --nocapture console_benchmark`
/// (`MESHLENS_CONSOLE_BENCH_RUNS`, default 5, navigations per figure; for a release server
/// run the release test binary, see README "The console").
///
/// In headless Chromium, with the Performance API, each figure the median of the runs:
/// request to drawn (`meshlens-graph-request` to `meshlens-graph-drawn`) of the demo graph
/// (12 nodes) and of the scale benchmark's mesh (200 namespaces x 10 workloads: 2,001 nodes /
/// 2,000 edges, and with service nodes 4,001 / 4,000), the longest main-thread task while it
/// draws, and the bytes the console's assets transfer. The list pages' times are
/// `console_lists`'s `list_benchmark` (they need the kube objects of a real test mesh).
#[test]
#[ignore]
fn console_benchmark() {
    let runs: usize = std::env::var("MESHLENS_CONSOLE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| (1..=50).contains(n))
        .unwrap_or(5);
    let m = demo();
    let big = synthetic_mesh(200, "10");
    let ns: Vec<String> = (0..200).map(|i| format!("ns-{i}")).collect();
    let ns = ns.join(",");
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        if v.is_empty() { f64::NAN } else { v[v.len() / 2] }
    };
    let range = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{lo:.0}–{hi:.0}")
    };
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_string();
    println!("console bench: {runs} runs per figure; load average at start: {}", load());
    with_browser(|c| async move {
        let timing = "const d = performance.getEntriesByName('meshlens-graph-drawn').pop(); const r = performance.getEntriesByName('meshlens-graph').pop();
            const res = performance.getEntriesByType('resource').filter(e => e.name.includes('/console/'));
            const nav = performance.getEntriesByType('navigation')[0];
            return {drawn: d && d.startTime, request_to_drawn: r && r.duration,
              transfer: res.reduce((a, e) => a + e.transferSize, 0) + nav.transferSize,
              decoded: res.reduce((a, e) => a + e.decodedBodySize, 0) + nav.decodedBodySize, files: res.length + 1,
              longest_task: Math.max(0, ...(window.__long || []))}";
        // Long tasks from the request on (buffered: the observer sees the ones before it).
        let observe = "window.__long = []; new PerformanceObserver(l => l.getEntries().forEach(e => {
              const r = performance.getEntriesByName('meshlens-graph-request').pop();
              if (!r || e.startTime + e.duration >= r.startTime) window.__long.push(e.duration); })).observe({type: 'longtask', buffered: true});";
        let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        let (mut demo_ms, mut demo_long) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            c.goto(&format!(
                "{}/console/graph?namespaces=bookinfo,istio-system&graphType=versionedApp",
                base(&m)
            ))
            .await
            .expect("open");
            js(&c, observe, vec![]).await;
            let g = wait_graph(&c).await;
            let t = js(&c, timing, vec![]).await;
            println!(
                "console bench: demo graph ({} nodes / {} edges): first drawn {:.0} ms after navigation start, request to drawn {:.0} ms; assets {} files, {} bytes transferred (gzip), {} bytes decoded; longest main-thread task {:.0} ms",
                g["nodes"],
                g["edges"],
                f(&t, "drawn"),
                f(&t, "request_to_drawn"),
                t["files"],
                t["transfer"],
                t["decoded"],
                f(&t, "longest_task")
            );
            demo_ms.push(f(&t, "request_to_drawn"));
            demo_long.push(f(&t, "longest_task"));
        }
        let mut summary = vec![format!(
            "demo (12 nodes): request to drawn median {:.0} ms ({} ms), longest task median {:.0} ms",
            median(demo_ms.clone()),
            range(&demo_ms),
            median(demo_long)
        )];
        // The phases of one draw, from the page's marks and the worker's measures.
        let phases = "const at = (n) => { const e = performance.getEntriesByName(n).pop(); return e ? e.startTime : NaN; };
            const dur = (n) => { const e = performance.getEntriesByName(n).pop(); return e ? e.duration : NaN; };
            const r = at('meshlens-graph-request');
            return {fetch: at('meshlens-graph-fetched') - r, add: at('meshlens-graph-added') - at('meshlens-graph-laid-out'),
              worker_build: dur('meshlens-layout-build'), worker_layout: dur('meshlens-layout-run'),
              laid_out: at('meshlens-graph-laid-out') - r, counted: at('meshlens-graph-counted') - r, drawn: at('meshlens-graph-drawn') - r}";
        for extra in ["", "&injectServiceNodes=true"] {
            let path = format!(
                "/api/namespaces/graph?namespaces={ns}&graphType=workload&duration=600s&queryTime=1700000000{extra}"
            );
            let api = big.get(&path);
            let started = std::time::Instant::now();
            let _ = big.get(&path);
            let api_ms = started.elapsed().as_millis();
            let (mut ms, mut long, mut nodes) = (Vec::new(), Vec::new(), Value::Null);
            for run in 1..=runs {
                c.goto(&format!("{}/console/graph?namespaces={ns}&graphType=workload&duration=600s&queryTime=1700000000{extra}", base(&big))).await.expect("open");
                js(&c, observe, vec![]).await;
                let g = wait_graph(&c).await;
                let t = js(&c, timing, vec![]).await;
                let p = js(&c, phases, vec![]).await;
                println!(
                    "console bench: scale mesh{extra} run {run} ({} nodes / {} edges, {} bytes of JSON, API alone {api_ms} ms): drawn {:.0} ms after navigation start, request to drawn {:.0} ms [fetch+parse {:.0}, worker build {:.0} + layout {:.0}, laid out at {:.0}, add {:.0}, counted at {:.0}, painted at {:.0}]; longest main-thread task {:.0} ms",
                    g["nodes"],
                    g["edges"],
                    api.body.len(),
                    f(&t, "drawn"),
                    f(&t, "request_to_drawn"),
                    f(&p, "fetch"),
                    f(&p, "worker_build"),
                    f(&p, "worker_layout"),
                    f(&p, "laid_out"),
                    f(&p, "add"),
                    f(&p, "counted"),
                    f(&p, "drawn"),
                    f(&t, "longest_task"),
                );
                ms.push(f(&t, "request_to_drawn"));
                long.push(f(&t, "longest_task"));
                nodes = g["nodes"].clone();
            }
            summary.push(format!(
                "{} nodes{extra}: request to drawn median {:.0} ms ({} ms), longest task median {:.0} ms",
                nodes.as_str().unwrap_or("?"),
                median(ms.clone()),
                range(&ms),
                median(long)
            ));
        }
        for line in &summary {
            println!("console bench: {line}");
        }
        println!("console bench: load average after the 200-namespace figures: {}", load());
    });
}

/// Benchmark (ignored; prints figures): the 1,000-namespace workload graph of the synthetic
/// mesh (about 10,000 nodes) drawn once, request to drawn and the longest main-thread task,
/// and its labels in view after zooming in (asserted, as on the 2,001-node graph).
/// `cargo test -p integration-tests --test console -- --ignored --nocapture console_benchmark_1000`
#[test]
#[ignore]
fn console_benchmark_1000_namespaces() {
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_string();
    let huge = synthetic_mesh(1000, "3");
    let ns: Vec<String> = (0..1000).map(|i| format!("ns-{i}")).collect();
    let ns = ns.join(",");
    with_browser(|c| async move {
        let q = format!("namespaces={ns}&graphType=workload&duration=120s&queryTime=1700000000");
        let path = format!("/api/namespaces/graph?{q}");
        let started = std::time::Instant::now();
        let api = huge.get(&path);
        let api_ms = started.elapsed().as_millis();
        assert_eq!(api.status, 200, "{}", api.text());
        let g = api.json();
        c.goto(&format!("{}/console/graph?{q}", base(&huge))).await.expect("open");
        js(
            &c,
            "window.__long = []; new PerformanceObserver(l => l.getEntries().forEach(e => window.__long.push(e.duration))).observe({type: 'longtask', buffered: true});",
            vec![],
        )
        .await;
        let drawn = wait_graph(&c).await;
        let nodes = g["elements"]["nodes"].as_array().expect("nodes");
        assert_eq!(drawn["nodes"], json!(nodes.len().to_string()));
        let t = js(
            &c,
            "const r = performance.getEntriesByName('meshlens-graph').pop(); return {ms: r && r.duration, longest: Math.max(0, ...(window.__long || []))};",
            vec![],
        )
        .await;
        let target = nodes
            .iter()
            .find(|n| n["data"]["workload"] == "w5-v1" && n["data"]["namespace"] == "ns-700")
            .expect("w5-v1 of ns-700");
        let zoomed = labels_after_zooming_in(&c, &target["data"]["id"], "w5-v1").await;
        screenshot(&c, "graph-1000-namespaces-zoomed").await;
        println!(
            "console bench: 1,000 namespaces, workload graph ({} nodes / {} edges, {} bytes of JSON, API cold {api_ms} ms): request to drawn {:.0} ms, longest main-thread task {:.0} ms; after zooming in {} nodes in view, all labelled; load average {}",
            drawn["nodes"],
            drawn["edges"],
            api.body.len(),
            t["ms"].as_f64().unwrap_or(f64::NAN),
            t["longest"].as_f64().unwrap_or(f64::NAN),
            zoomed["labelled"].as_array().map_or(0, Vec::len),
            load()
        );
        no_console_errors(&c, "1,000-namespace graph").await;
    });
}
