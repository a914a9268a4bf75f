//! The graph page as a workbench, in headless Chromium against the real binary: replay (each
//! frame is the API's graph at that queryTime, nodes stay put, a frame replayed again comes
//! from the answer cache) and readable labels on graphs of up to 100 nodes.
//!
//! The API is the oracle: frames are compared with the graph API at the same queryTime, and
//! the cache's own counters (`/metrics`) say whether a frame was served from it.

use std::collections::BTreeMap;

use fantoccini::Locator;
use integration_tests::{
    browser::{Client, console_errors, js, screenshot, wait_graph, wait_js, with_browser},
    prometheus::fixture,
    server::{BUNDLED, Meshlens, plugin_dir, workspace_root},
};
use serde_json::{Value, json};

use crate::common::{emulate_scheme, ids, one_cluster, split_ids, synthetic_mesh};

/// The one-cluster demo (config/demo.toml, bundled plugins, 20 minutes of generated traffic) with the
/// answer cache's TTL set to `ttl`.
fn demo(ttl: &str) -> Meshlens {
    let f = fixture(&["--topology", "demo", "--minutes", "20"]);
    let config =
        std::fs::read_to_string(workspace_root().join("config/demo.toml")).expect("demo.toml");
    let config = config.replace("port = 20001", "port = 0");
    let dir = plugin_dir(BUNDLED);
    let dirs = format!("[\"{}\"]", dir.path().display());
    let om = f.openmetrics.display().to_string();
    let (home, one) = one_cluster();
    let mut env = vec![
        ("MESHLENS_PLUGINS__DIRS", dirs.as_str()),
        ("MESHLENS_METRICS__OPENMETRICS_FILE__PATH", om.as_str()),
        ("MESHLENS_METRICS__CACHE_TTL", ttl),
    ];
    env.extend(one.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    Meshlens::start(&config, &env, vec![dir, home]).expect("the demo starts")
}

fn api(m: &Meshlens, path: &str) -> Value {
    let r = m.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

/// A counter of the server's self-metrics (`/metrics`, Prometheus text).
fn counter(m: &Meshlens, name: &str) -> f64 {
    let text = m.get("/metrics").text();
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
        .unwrap_or(0.0)
}

/// Waits until the graph is drawn at `t` (its `data-query-time`); returns the drawn attributes.
async fn frame_at(c: &Client, t: i64) -> Value {
    wait_js(
        c,
        &format!(
            "const g = document.querySelector('[data-testid=graph]');
             return !!g && g.dataset.state === 'drawn' && g.dataset.queryTime === '{t}' &&
               {{nodes: g.dataset.nodes, edges: g.dataset.edges, ids: g.dataset.nodeIds}}"
        ),
        &format!("the frame at {t}"),
    )
    .await
}

/// The drawn frame equals the API's graph at `t`: same node ids, same edge count.
fn frame_matches_api(m: &Meshlens, drawn: &Value, query: &str, t: i64) {
    let g = api(m, &format!("/api/namespaces/graph?{query}&duration=10m&queryTime={t}"));
    assert_eq!(g["timestamp"], json!(t));
    assert_eq!(split_ids(&drawn["ids"]), ids(&g["elements"]["nodes"]), "frame {t}: node ids");
    assert_eq!(
        drawn["edges"],
        json!(g["elements"]["edges"].as_array().expect("edges").len().to_string()),
        "frame {t}: edges"
    );
}

/// Sets the replay slider to `t` as a user's drag ends (the change event); returns the value
/// the slider took.
async fn pick_time(c: &Client, t: i64) -> Value {
    js(
        c,
        "const i = document.querySelector('[data-testid=replay-time]');
         i.value = String(arguments[0]); i.dispatchEvent(new Event('change', {bubbles: true}));
         return Number(i.value);",
        vec![json!(t)],
    )
    .await
}

/// Model positions of the drawn nodes, by id.
async fn places(c: &Client) -> BTreeMap<String, (f64, f64)> {
    let v = js(
        c,
        "const o = {}; window.meshlensGraph.nodes().forEach((n) => { if (!n.isParent()) { const p = n.position(); o[n.id()] = [p.x, p.y]; } }); return o;",
        vec![],
    )
    .await;
    v.as_object()
        .expect("places")
        .iter()
        .map(|(k, p)| (k.clone(), (p[0].as_f64().expect("x"), p[1].as_f64().expect("y"))))
        .collect()
}

async fn query_time_in_address(c: &Client) -> Option<String> {
    let url = c.current_url().await.expect("url");
    url.query_pairs().find(|(k, _)| k == "queryTime").map(|(_, v)| v.to_string())
}

#[test]
fn replay_frames_are_the_api_graph_at_their_time_keep_places_and_repeat_from_the_cache() {
    let m = demo("60s");
    let base = format!("http://{}", m.addr);
    let query = "namespaces=bookinfo,travel&graphType=workload";
    with_browser(|c| async move {
        let grid = api(&m, "/api/config")["metricsCacheTtl"].as_i64().expect("metricsCacheTtl");
        assert_eq!(grid, 60);

        // Live: data-query-time is the answer's timestamp (now, on the cache's grid).
        c.goto(&format!("{base}/console/graph?{query}")).await.expect("open graph");
        wait_graph(&c).await;
        let live: i64 = js(
            &c,
            "return Number(document.querySelector('[data-testid=graph]').dataset.queryTime)",
            vec![],
        )
        .await
        .as_i64()
        .expect("data-query-time on the live graph");
        let now = api(&m, &format!("/api/namespaces/graph?{query}&duration=10m"))["timestamp"]
            .as_i64()
            .expect("timestamp");
        assert!(live == now || live == now - grid, "live {live}, API {now}");
        assert_eq!(live % grid, 0);
        assert_eq!(query_time_in_address(&c).await, None, "live has no queryTime");

        // The control: a slider over the last hours on the cache's grid, a step, play.
        c.find(Locator::Css("[data-testid=replay] summary"))
            .await
            .expect("replay")
            .click()
            .await
            .expect("open");
        let slider = js(
            &c,
            "const i = document.querySelector('[data-testid=replay-time]');
             return {min: Number(i.min), max: Number(i.max), step: Number(i.step), value: Number(i.value),
                     stepSecs: Number(document.querySelector('[data-testid=replay-step]').value),
                     play: !!document.querySelector('[data-testid=replay-play]')};",
            vec![],
        )
        .await;
        assert!(slider["max"].as_i64().unwrap() >= live, "{slider}");
        assert!(
            slider["max"].as_i64().unwrap() - slider["min"].as_i64().unwrap() >= 3 * 3600,
            "{slider}"
        );
        assert_eq!(slider["step"], json!(grid), "{slider}");
        assert_eq!(slider["play"], json!(true));
        screenshot(&c, "replay-open-desktop").await;

        // A picked time: the frame is the API's graph at that time, in the address too.
        let t = live - 5 * grid;
        assert_eq!(pick_time(&c, t).await, json!(t));
        let drawn = frame_at(&c, t).await;
        frame_matches_api(&m, &drawn, query, t);
        assert_eq!(query_time_in_address(&c).await, Some(t.to_string()));
        let before = places(&c).await;

        // Play steps forward by the step; nodes drawn in both frames stay where they were.
        js(&c, "const s = document.querySelector('[data-testid=replay-step]'); s.value = arguments[0]; s.dispatchEvent(new Event('change'));", vec![json!(grid.to_string())]).await;
        c.find(Locator::Css("[data-testid=replay-play]"))
            .await
            .expect("play")
            .click()
            .await
            .expect("click");
        let drawn = frame_at(&c, t + grid).await;
        c.find(Locator::Css("[data-testid=replay-play]"))
            .await
            .expect("pause")
            .click()
            .await
            .expect("click");
        frame_matches_api(&m, &drawn, query, t + grid);
        assert_eq!(query_time_in_address(&c).await, Some((t + grid).to_string()));
        let after = places(&c).await;
        let common: Vec<_> = before.keys().filter(|k| after.contains_key(*k)).collect();
        assert!(!common.is_empty(), "the two frames share nodes");
        for id in common {
            let (a, b) = (before[id], after[id]);
            assert!(
                (a.0 - b.0).abs() < 0.5 && (a.1 - b.1).abs() < 0.5,
                "{id} moved from {a:?} to {b:?}"
            );
        }
        // Paused: no further frame comes.
        tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
        let still = js(
            &c,
            "return Number(document.querySelector('[data-testid=graph]').dataset.queryTime)",
            vec![],
        )
        .await;
        assert_eq!(still, json!(t + grid), "paused");

        // Replayed again within the TTL, the frame comes from the answer cache: every query
        // of the graph is a hit, none is a miss.
        let (hits, misses) = (
            counter(&m, "meshlens_backend_cache_hits_total"),
            counter(&m, "meshlens_backend_cache_misses_total"),
        );
        assert_eq!(pick_time(&c, t).await, json!(t));
        let again = frame_at(&c, t).await;
        frame_matches_api(&m, &again, query, t);
        let (hits2, misses2) = (
            counter(&m, "meshlens_backend_cache_hits_total"),
            counter(&m, "meshlens_backend_cache_misses_total"),
        );
        // frame_matches_api's own API call above is a repeat too: hits only.
        assert_eq!(misses2, misses, "a replayed frame sent no query past the cache");
        assert!(hits2 > hits, "hits {hits} -> {hits2}");

        // A queryTime in the address draws that very time (off the grid too).
        let off = t - 7;
        c.goto(&format!("{base}/console/graph?{query}&queryTime={off}")).await.expect("open");
        let drawn = frame_at(&c, off).await;
        frame_matches_api(&m, &drawn, query, off);
        let open =
            js(&c, "return document.querySelector('[data-testid=replay]').open", vec![]).await;
        assert_eq!(open, json!(true), "a replayed address opens the control");
        // Live again: the address loses queryTime.
        c.find(Locator::Css("[data-testid=replay-live]"))
            .await
            .expect("live")
            .click()
            .await
            .expect("click");
        wait_js(&c, &format!("const g = document.querySelector('[data-testid=graph]'); return !!g && g.dataset.state === 'drawn' && Number(g.dataset.queryTime) >= {live}"), "live again").await;
        assert_eq!(query_time_in_address(&c).await, None);
        c.set_window_size(390, 844).await.expect("phone");
        // The canvas follows the window once cytoscape's resize handler has run.
        wait_js(
            &c,
            "return document.documentElement.scrollWidth <= window.innerWidth",
            "no sideways scrolling on a phone",
        )
        .await;
        screenshot(&c, "replay-phone").await;
        let errors = console_errors(&c).await;
        assert!(errors.is_empty(), "browser errors: {errors:#?}");
    });
}

/// Every label of the drawn graph: its rendered font size (zoom x font-size), the smallest
/// size the renderer draws, its text and its rendered box.
const LABELS: &str = "
  const cy = window.meshlensGraph; const z = cy.zoom();
  return {w: cy.width(), h: cy.height(), zoom: z, labels: cy.nodes().not('.box').map((n) => {
    const b = n.renderedBoundingBox({includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false});
    return {id: n.id(), px: z * parseFloat(n.style('font-size')), min: parseFloat(n.style('min-zoomed-font-size')),
            text: n.style('label'), x1: b.x1, y1: b.y1, x2: b.x2, y2: b.y2};
  })};";

/// Checks that every node's name is drawn at 8 px or more, inside the view, and that few
/// labels overlap; returns (nodes, rendered px, overlapping labels).
async fn labels_readable(c: &Client, what: &str) -> (usize, f64, usize) {
    let v = js(c, LABELS, vec![]).await;
    let labels = v["labels"].as_array().expect("labels");
    let (w, h) = (v["w"].as_f64().unwrap(), v["h"].as_f64().unwrap());
    let mut smallest = f64::INFINITY;
    for l in labels {
        let px = l["px"].as_f64().unwrap();
        smallest = smallest.min(px);
        assert!(px >= 8.0, "{what}: {} drawn at {px:.1} px", l["id"]);
        assert!(px >= l["min"].as_f64().unwrap(), "{what}: {} under min-zoomed-font-size", l["id"]);
        assert!(
            !l["text"].as_str().unwrap_or_default().is_empty(),
            "{what}: {} has no label",
            l["id"]
        );
        let (x1, y1, x2, y2) = (
            l["x1"].as_f64().unwrap(),
            l["y1"].as_f64().unwrap(),
            l["x2"].as_f64().unwrap(),
            l["y2"].as_f64().unwrap(),
        );
        assert!(
            x1 >= -1.0 && y1 >= -1.0 && x2 <= w + 1.0 && y2 <= h + 1.0,
            "{what}: {} label out of view: {l}",
            l["id"]
        );
    }
    let boxes: Vec<[f64; 4]> =
        labels.iter().map(|l| ["x1", "y1", "x2", "y2"].map(|k| l[k].as_f64().unwrap())).collect();
    let overlapping = (0..boxes.len())
        .filter(|&i| {
            (0..boxes.len()).any(|j| {
                let (a, b) = (boxes[i], boxes[j]);
                i != j
                    && a[0] < b[2] - 1.0
                    && b[0] < a[2] - 1.0
                    && a[1] < b[3] - 1.0
                    && b[1] < a[3] - 1.0
            })
        })
        .count();
    assert!(
        overlapping * 10 <= labels.len(),
        "{what}: {overlapping} of {} labels overlap another",
        labels.len()
    );
    (labels.len(), smallest, overlapping)
}

#[test]
fn graphs_up_to_100_nodes_draw_every_name_at_8_px_or_more() {
    let m = demo("10s");
    let base = format!("http://{}", m.addr);
    with_browser(|c| async move {
        for (query, name) in [
            ("namespaces=travel&graphType=workload", "travel"),
            ("namespaces=travel&graphType=workload&injectServiceNodes=true", "travel-services"),
            (
                "namespaces=bookinfo&graphType=versionedApp&injectServiceNodes=true",
                "bookinfo-versioned",
            ),
            (
                "namespaces=bookinfo,travel&graphType=workload&injectServiceNodes=true",
                "bookinfo-travel",
            ),
            ("graphType=workload&injectServiceNodes=true", "demo-all-services"),
            (
                "graphType=versionedApp&injectServiceNodes=true&includeMesh=true",
                "demo-all-versioned",
            ),
        ] {
            c.goto(&format!("{base}/console/graph?{query}")).await.expect("open");
            let drawn = wait_graph(&c).await;
            let n: usize = drawn["nodes"].as_str().unwrap().parse().unwrap();
            if n > 100 {
                continue;
            }
            let (nodes, px, overlap) = labels_readable(&c, name).await;
            println!(
                "labels: {name}: {nodes} nodes, smallest label {px:.1} px, {overlap} overlapping"
            );
            screenshot(&c, &format!("labels-{name}-desktop")).await;
        }
        let errors = console_errors(&c).await;
        assert!(errors.is_empty(), "browser errors: {errors:#?}");
    });
    // The synthetic mesh: chains of 10 workloads, 31 to 91 nodes (and 81 with service nodes).
    let m = synthetic_mesh(9, "3");
    let base = format!("http://{}", m.addr);
    with_browser(|c| async move {
        for (n, services, want) in [(3, false, 31), (6, false, 61), (4, true, 81), (9, false, 91)] {
            let ns: Vec<String> = (0..n).map(|i| format!("ns-{i}")).collect();
            let q = format!(
                "namespaces={}&graphType=workload&duration=120s&queryTime=1700000000{}",
                ns.join(","),
                if services { "&injectServiceNodes=true" } else { "" }
            );
            c.goto(&format!("{base}/console/graph?{q}")).await.expect("open");
            let drawn = wait_graph(&c).await;
            assert_eq!(drawn["nodes"], json!(want.to_string()), "{q}");
            let name = format!("synthetic-{want}");
            let (nodes, px, overlap) = labels_readable(&c, &name).await;
            println!(
                "labels: {name}: {nodes} nodes, smallest label {px:.1} px, {overlap} overlapping"
            );
            screenshot(&c, &format!("labels-{name}-desktop")).await;
        }
        let errors = console_errors(&c).await;
        assert!(errors.is_empty(), "browser errors: {errors:#?}");
    });
}

/// WCAG relative luminance of the page background, of the main text and of the graph's
/// background (when there is one), and the text's contrast.
const COLOURS: &str = "
  const lum = (css) => {
    const [r, g, b] = css.match(/[\\d.]+/g).slice(0, 3).map(Number).map((v) => {
      const s = v / 255; return s <= 0.03928 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const bg = lum(getComputedStyle(document.body).backgroundColor);
  const fg = lum(getComputedStyle(document.querySelector('main h1') || document.body).color);
  const graph = document.querySelector('[data-testid=graph]');
  return { bg, fg, contrast: (Math.max(bg, fg) + 0.05) / (Math.min(bg, fg) + 0.05),
           graph: graph ? lum(getComputedStyle(graph).backgroundColor) : null,
           overflow: document.documentElement.scrollWidth - window.innerWidth };";

/// Every page of the console, at 1280x800 and 390x844, in the light and the dark theme: a
/// screenshot each (`target/console-screenshots/page-*.png`), no browser error, no sideways
/// scrolling on a phone, and under `prefers-color-scheme: dark` a dark background with light
/// text (luminance under 0.2 and over 0.4, contrast 4.5 or more).
#[test]
fn every_page_in_both_themes_and_sizes() {
    let m = demo("10s");
    let base = format!("http://{}", m.addr);
    let pages = [
        ("overview", "", "[data-testid=overview][data-state=drawn]"),
        (
            "graph",
            "graph?namespaces=bookinfo,travel&graphType=versionedApp",
            "[data-testid=graph][data-state=drawn]",
        ),
        ("apps", "apps?namespaces=bookinfo", "[data-testid=list][data-state=drawn]"),
        ("workloads", "workloads?namespaces=bookinfo", "[data-testid=list][data-state=drawn]"),
        ("services", "services?namespaces=bookinfo", "[data-testid=list][data-state=drawn]"),
        ("istio", "istio?namespaces=bookinfo", "[data-testid=list][data-state=drawn]"),
        ("app", "app?namespace=bookinfo&app=reviews", "[data-testid=dashboard][data-state=drawn]"),
        (
            "workload",
            "workload?namespace=bookinfo&workload=reviews-v2&direction=outbound",
            "[data-testid=dashboard][data-state=drawn]",
        ),
        (
            "service",
            "service?namespace=bookinfo&service=reviews",
            "[data-testid=dashboard][data-state=drawn]",
        ),
        ("mesh", "mesh?namespace=bookinfo", "[data-testid=mesh-objects]"),
        (
            "mesh-object",
            "mesh/object?namespace=bookinfo&objectType=virtualservices&object=reviews",
            "[data-testid=object-spec]",
        ),
    ];
    with_browser(|c| async move {
        c.goto(&format!("{base}/console/")).await.expect("open");
        js(&c, "localStorage.removeItem('meshlens.theme')", vec![]).await;
        for scheme in ["light", "dark"] {
            emulate_scheme(&c, scheme).await;
            for (w, h, size) in [(1280, 800, "desktop"), (390, 844, "phone")] {
                c.set_window_size(w, h).await.expect("window size");
                for (name, path, ready) in pages {
                    c.goto(&format!("{base}/console/{path}")).await.expect("open page");
                    wait_js(&c, &format!("return document.querySelector('{ready}')"), name).await;
                    let v = js(&c, COLOURS, vec![]).await;
                    let what = format!("{name} ({scheme}, {size})");
                    if size == "phone" {
                        assert!(
                            v["overflow"].as_f64().unwrap() <= 0.0,
                            "{what} scrolls sideways: {v}"
                        );
                    }
                    let (bg, fg, contrast) = (
                        v["bg"].as_f64().unwrap(),
                        v["fg"].as_f64().unwrap(),
                        v["contrast"].as_f64().unwrap(),
                    );
                    if scheme == "dark" {
                        assert!(bg < 0.2 && fg > 0.4 && contrast >= 4.5, "{what}: {v}");
                        if let Some(g) = v["graph"].as_f64() {
                            assert!(g < 0.2, "{what}: graph background {v}");
                        }
                    } else {
                        assert!(bg > 0.8 && contrast >= 4.5, "{what}: {v}");
                    }
                    screenshot(&c, &format!("page-{name}-{size}-{scheme}")).await;
                    let errors = console_errors(&c).await;
                    assert!(errors.is_empty(), "{what}: browser errors: {errors:#?}");
                }
            }
        }
        emulate_scheme(&c, "").await;
        c.set_window_size(1280, 800).await.expect("desktop");

        // Names link to their pages: the app page's health table names its workloads as
        // the health API does, and a graph node's panel heading links to the node's page.
        c.goto(&format!("{base}/console/app?namespace=bookinfo&app=reviews")).await.expect("app");
        let links = wait_js(
            &c,
            "const h = document.querySelector('[data-testid=health]');
             return h && [...h.querySelectorAll('a[href]')].map((a) => a.getAttribute('href'))",
            "the health section",
        )
        .await;
        let health = api(&m, "/api/namespaces/bookinfo/apps/reviews/health");
        let want: Vec<Value> = health["deploymentStatuses"]
            .as_array()
            .expect("deploymentStatuses")
            .iter()
            .map(|w| {
                json!(format!(
                    "workload?namespace=bookinfo&workload={}",
                    w["name"].as_str().unwrap()
                ))
            })
            .collect();
        assert!(!want.is_empty());
        assert_eq!(links, json!(want));
        let g =
            api(&m, "/api/namespaces/graph?namespaces=bookinfo&graphType=workload&duration=10m");
        let id = g["elements"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["data"]["workload"] == "ratings-v1")
            .map(|n| n["data"]["id"].as_str().unwrap().to_string())
            .expect("ratings-v1");
        let sel: String = url::form_urlencoded::byte_serialize(id.as_bytes()).collect();
        c.goto(&format!(
            "{base}/console/graph?namespaces=bookinfo&graphType=workload&select={sel}"
        ))
        .await
        .expect("graph");
        let href = wait_js(
            &c,
            "const a = document.querySelector('[data-testid=panel-name-link]'); return a && a.getAttribute('href')",
            "the panel's name link",
        )
        .await;
        assert_eq!(href, json!("workload?namespace=bookinfo&workload=ratings-v1"));
        // A VirtualService's page links the services its hosts name (the API's spec.hosts).
        c.goto(&format!(
            "{base}/console/mesh/object?namespace=bookinfo&objectType=virtualservices&object=reviews"
        ))
        .await
        .expect("mesh object");
        let hosts = wait_js(
            &c,
            "const p = document.querySelector('[data-testid=object-hosts]');
             return p && [...p.querySelectorAll('a[href]')].map((a) => a.getAttribute('href'))",
            "the object's hosts",
        )
        .await;
        let vs = api(&m, "/api/namespaces/bookinfo/mesh?objects=virtualservices");
        let spec = &vs["virtualServices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["metadata"]["name"] == "reviews")
            .expect("the reviews VirtualService")["spec"];
        let want: Vec<Value> = spec["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                let svc = h.as_str().unwrap().split('.').next().unwrap();
                json!(format!("service?namespace=bookinfo&service={svc}"))
            })
            .collect();
        assert_eq!(hosts, json!(want));
        let errors = console_errors(&c).await;
        assert!(errors.is_empty(), "browser errors: {errors:#?}");
    });
}
