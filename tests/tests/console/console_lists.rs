//! The console's list pages (apps, workloads, services, istio), the service page, the
//! workload page's charts and the overview's links, in headless Chromium against the demo.
//! The API is the oracle: row sets, health and validation states are compared with the
//! API's answers for the same namespaces.

use std::collections::BTreeSet;

use fantoccini::Locator;
use integration_tests::browser::{console_errors, js, screenshot, wait_js, with_browser};
use serde_json::{Value, json};

use crate::common::{api, demo, emulate_scheme, rows};

fn names(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .map(|r| format!("{}/{}", r["namespace"].as_str().unwrap(), r["name"].as_str().unwrap()))
        .collect()
}

/// The list health the console documents: worse of inbound and outbound error ratio
/// (>= 20 % failure, > 0.1 % degraded) and the replicas (none available: failure, fewer
/// than wanted: degraded); the health answer's `status` wins when it has one.
fn expected_health(h: &Value) -> &'static str {
    if let Some(s) = h["status"].as_str() {
        return match s {
            "healthy" => "healthy",
            "degraded" => "degraded",
            "failing" | "failure" => "failure",
            _ => "na",
        };
    }
    let rank =
        |s: &str| ["na", "healthy", "degraded", "failure"].iter().position(|x| *x == s).unwrap();
    let mut worst = "na";
    let mut take = |s: &'static str| {
        if rank(s) > rank(worst) {
            worst = s;
        }
    };
    for key in ["inboundErrorRatio", "outboundErrorRatio"] {
        if let Some(r) = h["requests"][key].as_f64().filter(|r| *r >= 0.0) {
            take(if r * 100.0 >= 20.0 {
                "failure"
            } else if r * 100.0 > 0.1 {
                "degraded"
            } else {
                "healthy"
            });
        }
    }
    let statuses: Vec<&Value> = match (&h["workloadStatuses"], &h["workloadStatus"]) {
        (Value::Array(a), _) => a.iter().collect(),
        (_, w @ Value::Object(_)) => vec![w],
        _ => vec![],
    };
    for w in statuses {
        let (want, have) = (w["replicas"].as_i64().unwrap(), w["available"].as_i64().unwrap());
        take(if want > 0 && have == 0 {
            "failure"
        } else if have < want {
            "degraded"
        } else {
            "healthy"
        });
    }
    worst
}

#[test]
fn list_pages_match_the_api_and_filter_and_sort_in_the_address() {
    let m = demo();
    let base = format!("http://{}", m.addr);
    let namespaces = ["bookinfo", "istio-system"];
    with_browser(|c| async move {
        for (page, list_key, health_type) in [
            ("apps", "applications", "app"),
            ("workloads", "workloads", "workload"),
            ("services", "services", "service"),
        ] {
            // The demo's traffic is live: the health the page drew was the server's at some
            // moment between these two reads (answers change at most every cache TTL).
            let health_of =
                |ns: &str| api(&m, &format!("/api/namespaces/{ns}/health?type={health_type}"));
            let before: Vec<Value> = namespaces.iter().map(|ns| health_of(ns)).collect();
            c.goto(&format!("{base}/console/{page}?namespaces={}", namespaces.join(",")))
                .await
                .expect("open list");
            let drawn = rows(&c).await;
            let mut want = BTreeSet::new();
            for (i, ns) in namespaces.into_iter().enumerate() {
                let list = api(&m, &format!("/api/namespaces/{ns}/{page}"));
                let health = health_of(ns);
                for item in list[list_key].as_array().unwrap() {
                    let name = item["name"].as_str().unwrap();
                    want.insert(format!("{ns}/{name}"));
                    let row = drawn
                        .iter()
                        .find(|r| r["namespace"] == ns && r["name"] == name)
                        .unwrap_or_else(|| panic!("{page}: no row {ns}/{name}"));
                    let (then, now) = (
                        json!(expected_health(&before[i][name])),
                        json!(expected_health(&health[name])),
                    );
                    assert!(
                        row["health"] == then || row["health"] == now,
                        "{page} {ns}/{name}: drawn {}, the server's {then} before and {now} after: health {}",
                        row["health"],
                        health[name]
                    );
                    let detail = match page {
                        "apps" => format!("app?namespace={ns}&app={name}"),
                        "workloads" => format!("workload?namespace={ns}&workload={name}"),
                        _ => format!("service?namespace={ns}&service={name}"),
                    };
                    assert_eq!(row["href"], json!(detail), "{page}: row link");
                }
            }
            let got: BTreeSet<String> = names(&drawn).into_iter().collect();
            assert_eq!(got, want, "{page}: rows differ from the API's lists");
            assert!(
                drawn.iter().any(|r| r["health"] != "na"),
                "{page}: the demo has traffic, some row must have a health"
            );
            screenshot(&c, &format!("list-{page}-desktop")).await;
        }

        // Filter: case-insensitive substring of the name, kept in the address.
        c.goto(&format!("{base}/console/workloads?namespaces=bookinfo")).await.expect("open");
        rows(&c).await;
        let input = c.find(Locator::Css("[data-testid=list-filter]")).await.expect("filter");
        input.send_keys("REVIEWS").await.expect("type");
        let filtered = names(&rows(&c).await);
        assert_eq!(filtered, ["bookinfo/reviews-v1", "bookinfo/reviews-v2", "bookinfo/reviews-v3"]);
        let url = c.current_url().await.expect("url");
        assert!(url.query().unwrap_or_default().contains("filter=REVIEWS"), "{url}");
        // Sorting by name: ascending, a second click reverses; both kept in the address.
        let header = c.find(Locator::Css("[data-sort=name]")).await.expect("name header");
        header.click().await.expect("click");
        let desc = names(&rows(&c).await);
        assert_eq!(desc, ["bookinfo/reviews-v3", "bookinfo/reviews-v2", "bookinfo/reviews-v1"]);
        let url = c.current_url().await.expect("url");
        assert!(url.query().unwrap_or_default().contains("desc=true"), "{url}");
        // Reloading the address keeps filter and order.
        c.goto(url.as_str()).await.expect("reload");
        assert_eq!(names(&rows(&c).await), desc);
        c.find(Locator::Css("[data-sort=name]"))
            .await
            .expect("header")
            .click()
            .await
            .expect("click");
        let asc = names(&rows(&c).await);
        assert_eq!(asc, ["bookinfo/reviews-v1", "bookinfo/reviews-v2", "bookinfo/reviews-v3"]);

        // Istio config: every object of every kind, with its kind and validation state.
        c.goto(&format!("{base}/console/istio?namespaces=bookinfo")).await.expect("open istio");
        let drawn = rows(&c).await;
        let list = api(&m, "/api/namespaces/bookinfo/mesh");
        let validations = api(&m, "/api/namespaces/bookinfo/mesh_validations");
        let mut want = BTreeSet::new();
        for (key, kind, vkey) in [
            ("virtualServices", "virtualservices", "virtualservice"),
            ("destinationRules", "destinationrules", "destinationrule"),
            ("gateways", "gateways", "gateway"),
            ("serviceEntries", "serviceentries", "serviceentry"),
            ("authorizationPolicies", "authorizationpolicies", "authorizationpolicy"),
            ("peerAuthentications", "peerauthentications", "peerauthentication"),
            ("sidecars", "sidecars", "sidecar"),
        ] {
            for o in list[key].as_array().unwrap() {
                let name = o["metadata"]["name"].as_str().unwrap();
                want.insert(format!("{kind}/{name}"));
                let v = &validations["bookinfo"][vkey][name];
                let sev: Vec<&str> = v["checks"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|c| c["severity"].as_str()).collect())
                    .unwrap_or_default();
                let valid = if sev.contains(&"error") || v["valid"] == false {
                    "error"
                } else if sev.contains(&"warning") {
                    "warning"
                } else {
                    "valid"
                };
                let row = drawn
                    .iter()
                    .find(|r| r["kind"] == kind && r["name"] == name)
                    .unwrap_or_else(|| panic!("no istio row {kind}/{name}"));
                assert_eq!(row["valid"], valid, "{kind}/{name}");
            }
        }
        let got: BTreeSet<String> = drawn
            .iter()
            .map(|r| format!("{}/{}", r["kind"].as_str().unwrap(), r["name"].as_str().unwrap()))
            .collect();
        assert!(want.is_subset(&got), "istio rows {got:?} lack some of {want:?}");
        assert_eq!(got.len(), drawn.len());
        assert!(!drawn.is_empty(), "the demo has mesh config");
        screenshot(&c, "list-istio-desktop").await;
        c.set_window_size(390, 844).await.expect("phone");
        rows(&c).await;
        screenshot(&c, "list-istio-phone").await;
        c.goto(&format!("{base}/console/apps?namespaces=bookinfo")).await.expect("open");
        rows(&c).await;
        let overflow =
            js(&c, "return document.documentElement.scrollWidth - window.innerWidth", vec![]).await;
        assert!(
            overflow.as_f64().unwrap() <= 0.0,
            "the apps list scrolls sideways on a phone by {overflow} px"
        );
        screenshot(&c, "list-apps-phone").await;
        let errors = console_errors(&c).await;
        assert!(errors.is_empty(), "browser errors: {errors:#?}");
    });
}

/// Ambient workloads and waypoints (the demo's `travel` namespace) get an `ambient` or
/// `waypoint` badge in the apps, workloads and services lists, never "missing sidecar",
/// which stays on uncaptured workloads without a sidecar. The API's flags are the oracle.
#[test]
fn list_pages_badge_ambient_workloads_and_waypoints() {
    let m = demo();
    let base = format!("http://{}", m.addr);
    with_browser(|c| async move {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        for (page, list_key) in
            [("apps", "applications"), ("workloads", "workloads"), ("services", "services")]
        {
            c.goto(&format!("{base}/console/{page}?namespaces=travel,bookinfo"))
                .await
                .expect("open list");
            rows(&c).await;
            let drawn = js(
                &c,
                "return [...document.querySelectorAll('[data-testid=row]')].map((r) => ({
                   key: r.dataset.namespace + '/' + r.dataset.name,
                   badges: [...r.querySelectorAll('[data-badge]')].map((b) => b.dataset.badge)
                     .filter((b) => b !== 'virtual service'),
                 }))",
                vec![],
            )
            .await;
            let drawn = drawn.as_array().expect("rows");
            for ns in ["travel", "bookinfo"] {
                let list = api(&m, &format!("/api/namespaces/{ns}/{page}"));
                for item in list[list_key].as_array().unwrap() {
                    let key = format!("{ns}/{}", item["name"].as_str().unwrap());
                    let want: Vec<&str> = if item["isWaypoint"] == true {
                        vec!["waypoint"]
                    } else if item["isAmbient"] == true {
                        vec!["ambient"]
                    } else if item["meshSidecar"] == false {
                        vec!["missing sidecar"]
                    } else {
                        vec![]
                    };
                    let row = drawn
                        .iter()
                        .find(|r| r["key"] == key.as_str())
                        .unwrap_or_else(|| panic!("{page}: no row {key}"));
                    assert_eq!(row["badges"], json!(want), "{page} {key}: {item}");
                    if ns == "travel" {
                        assert!(!want.contains(&"missing sidecar"), "{page} {key}: {item}");
                    }
                    seen.extend(want.iter().map(|b| format!("{page}:{b}")));
                }
            }
        }
        for b in ["apps:ambient", "workloads:ambient", "workloads:waypoint", "services:ambient"] {
            assert!(seen.contains(b), "no {b} badge drawn: {seen:?}");
        }
        screenshot(&c, "list-workloads-ambient").await;
        let errors = console_errors(&c).await;
        assert!(errors.is_empty(), "browser errors: {errors:#?}");
    });
}

#[test]
fn service_page_workload_charts_and_overview_links() {
    let m = demo();
    let base = format!("http://{}", m.addr);
    with_browser(|c| async move {
        c.goto(&format!("{base}/console/service?namespace=bookinfo&service=reviews"))
            .await
            .expect("open service");
        let dash = wait_js(
            &c,
            "const d = document.querySelector('[data-testid=dashboard]');
             return d && d.dataset.state !== 'loading' && {state: d.dataset.state, api: d.dataset.api,
               charts: [...d.querySelectorAll('[data-testid=chart]')].map((x) => [x.dataset.chart, Number(x.dataset.series)])}",
            "the service dashboard",
        )
        .await;
        assert_eq!(dash["state"], "drawn", "{dash}");
        let path = dash["api"].as_str().unwrap();
        assert!(path.starts_with("namespaces/bookinfo/services/reviews/dashboard?"), "{path}");
        let answer = api(&m, &format!("/api/{path}"));
        let volume = answer["charts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "Request volume")
            .expect("volume chart");
        let series = volume["metric"]["matrix"].as_array().unwrap().len();
        assert!(series > 0, "reviews receives traffic in the demo");
        assert!(
            dash["charts"].as_array().unwrap().contains(&json!(["Request volume", series])),
            "{dash}"
        );
        // Health as the app page shows it.
        let status = js(
            &c,
            "return document.querySelector('[data-testid=health-status]').textContent",
            vec![],
        )
        .await;
        assert!(
            ["healthy", "degraded", "failing", "na"].contains(&status.as_str().unwrap()),
            "{status}"
        );
        // The workloads behind the service, as links.
        let wl = js(
            &c,
            "return [...document.querySelectorAll('[data-testid=workload-link]')].map((a) => a.getAttribute('href'))",
            vec![],
        )
        .await;
        let list = api(&m, "/api/namespaces/bookinfo/services");
        let reviews =
            list["services"].as_array().unwrap().iter().find(|s| s["name"] == "reviews").unwrap();
        let want: Vec<Value> = reviews["workloads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| json!(format!("workload?namespace=bookinfo&workload={}", w.as_str().unwrap())))
            .collect();
        assert_eq!(wl, json!(want));
        // VirtualServices and DestinationRules naming it, with their validation.
        let objs = js(
            &c,
            "return [...document.querySelectorAll('[data-testid=routing-object]')].map((a) => ({...a.dataset, href: a.getAttribute('href')}))",
            vec![],
        )
        .await;
        let objs = objs.as_array().unwrap();
        let mesh =
            api(&m, "/api/namespaces/bookinfo/mesh?objects=virtualservices,destinationrules");
        for (key, kind) in
            [("virtualServices", "virtualservices"), ("destinationRules", "destinationrules")]
        {
            for o in mesh[key].as_array().unwrap() {
                let spec = &o["spec"];
                let hosts: Vec<&str> = spec["hosts"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_else(|| spec["host"].as_str().into_iter().collect());
                let names_it =
                    hosts.iter().any(|h| *h == "reviews" || h.starts_with("reviews.bookinfo"));
                let name = o["metadata"]["name"].as_str().unwrap();
                let shown = objs.iter().find(|x| x["kind"] == kind && x["name"] == name);
                assert_eq!(shown.is_some(), names_it, "{kind}/{name} hosts {hosts:?}");
                if let Some(x) = shown {
                    assert!(["valid", "warning", "error"].contains(&x["valid"].as_str().unwrap()));
                    assert_eq!(
                        x["href"],
                        json!(format!(
                            "mesh/object?namespace=bookinfo&objectType={kind}&object={name}"
                        ))
                    );
                }
            }
        }
        assert!(!objs.is_empty(), "the demo routes reviews with a VirtualService");
        screenshot(&c, "service-desktop").await;
        c.set_window_size(390, 844).await.expect("phone");
        let overflow =
            js(&c, "return document.documentElement.scrollWidth - window.innerWidth", vec![]).await;
        assert!(
            overflow.as_f64().unwrap() <= 0.0,
            "the service page scrolls sideways on a phone by {overflow} px"
        );
        screenshot(&c, "service-phone").await;
        c.set_window_size(1280, 800).await.expect("desktop");

        // The workload page charts inbound and outbound, the direction in the address.
        c.goto(&format!(
            "{base}/console/workload?namespace=bookinfo&workload=reviews-v2&direction=outbound"
        ))
        .await
        .expect("open workload");
        let dash = wait_js(
            &c,
            "const d = document.querySelector('[data-testid=dashboard]');
             return d && d.dataset.state === 'drawn' && {api: d.dataset.api,
               n: d.querySelectorAll('[data-testid=chart]').length}",
            "the workload dashboard",
        )
        .await;
        let path = dash["api"].as_str().unwrap();
        assert!(
            path.starts_with(
                "namespaces/bookinfo/workloads/reviews-v2/dashboard?direction=outbound"
            ),
            "{path}"
        );
        assert_eq!(dash["n"], 6);
        screenshot(&c, "workload-desktop").await;

        // The graph's side panel of a service node links the service page.
        let g = api(
            &m,
            "/api/namespaces/graph?namespaces=bookinfo&graphType=workload&injectServiceNodes=true",
        );
        let id = g["elements"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["data"]["nodeType"] == "service" && n["data"]["service"] == "reviews")
            .map(|n| n["data"]["id"].as_str().unwrap().to_string())
            .expect("a reviews service node");
        c.goto(&format!(
            "{base}/console/graph?namespaces=bookinfo&graphType=workload&injectServiceNodes=true&select={}",
            id.replace('%', "%25").replace('&', "%26").replace('#', "%23")
        ))
        .await
        .expect("open graph");
        let href = wait_js(
            &c,
            "const a = document.querySelector('[data-testid=panel-link-details]'); return a && a.getAttribute('href')",
            "the service node's panel link",
        )
        .await;
        assert_eq!(href, json!("service?namespace=bookinfo&service=reviews"));

        // Overview cards: real links to the graph, the apps list and the mesh config.
        c.goto(&format!("{base}/console/")).await.expect("overview");
        let links = wait_js(
            &c,
            "const card = document.querySelector('[data-testid=ns-card][data-namespace=bookinfo]');
             return card && [...card.querySelectorAll('a[href]')].map((a) => a.getAttribute('href'))",
            "the bookinfo card",
        )
        .await;
        for want in
            ["graph?namespaces=bookinfo", "apps?namespaces=bookinfo", "mesh?namespace=bookinfo"]
        {
            assert!(links.as_array().unwrap().contains(&json!(want)), "{links}");
        }
        // The header links to every list page.
        let nav = js(&c, "return [...document.querySelectorAll('header nav a')].map((a) => a.getAttribute('href'))", vec![]).await;
        for want in ["apps", "workloads", "services", "istio"] {
            assert!(nav.as_array().unwrap().contains(&json!(want)), "{nav}");
        }
        // Following the apps link opens the list.
        c.find(Locator::Css("[data-testid=ns-card][data-namespace=bookinfo] a[href^=apps]"))
            .await
            .expect("apps link")
            .click()
            .await
            .expect("click");
        let drawn = rows(&c).await;
        assert!(drawn.iter().all(|r| r["namespace"] == "bookinfo") && !drawn.is_empty());
        let errors = console_errors(&c).await;
        assert!(errors.is_empty(), "browser errors: {errors:#?}");
    });
}

/// Relative luminance (WCAG) of the page background and of the text of `selector`, and
/// their contrast ratio.
const COLOURS: &str = "
  const lum = (css) => {
    const [r, g, b] = css.match(/[\\d.]+/g).slice(0, 3).map(Number).map((v) => {
      const s = v / 255; return s <= 0.03928 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const bg = lum(getComputedStyle(document.body).backgroundColor);
  const el = document.querySelector(arguments[0]) || document.body;
  const fg = lum(getComputedStyle(el).color);
  const graph = document.querySelector('[data-testid=graph]');
  return { bg, fg, contrast: (Math.max(bg, fg) + 0.05) / (Math.min(bg, fg) + 0.05),
           graph: graph ? lum(getComputedStyle(graph).backgroundColor) : null,
           theme: document.documentElement.dataset.theme || null };";

#[test]
fn dark_mode_follows_the_system_and_the_toggle_is_remembered() {
    let m = demo();
    let base = format!("http://{}", m.addr);
    with_browser(|c| async move {
        emulate_scheme(&c, "dark").await;
        c.goto(&format!("{base}/console/")).await.expect("open");
        js(&c, "localStorage.removeItem('meshlens.theme')", vec![]).await;
        for (page, ready, text) in [
            ("", "[data-testid=overview][data-state=drawn]", "h1"),
            ("apps?namespaces=bookinfo", "[data-testid=list][data-state=drawn]", "td"),
            (
                "service?namespace=bookinfo&service=reviews",
                "[data-testid=dashboard][data-state=drawn]",
                "td",
            ),
            (
                "graph?namespaces=bookinfo",
                "[data-testid=graph][data-state=drawn]",
                "h1, label, body",
            ),
        ] {
            c.goto(&format!("{base}/console/{page}")).await.expect("open page");
            wait_js(&c, &format!("return document.querySelector('{ready}')"), page).await;
            let v = js(&c, COLOURS, vec![json!(text)]).await;
            let (bg, fg, contrast) = (
                v["bg"].as_f64().unwrap(),
                v["fg"].as_f64().unwrap(),
                v["contrast"].as_f64().unwrap(),
            );
            assert!(bg < 0.2, "{page}: background luminance {bg}");
            assert!(fg > 0.4, "{page}: text luminance {fg}");
            assert!(contrast >= 4.5, "{page}: contrast {contrast}");
            if let Some(g) = v["graph"].as_f64() {
                assert!(g < 0.2, "{page}: graph background luminance {g}");
            }
            let name = if page.is_empty() { "overview" } else { page.split('?').next().unwrap() };
            screenshot(&c, &format!("dark-{name}-desktop")).await;
        }
        c.set_window_size(390, 844).await.expect("phone");
        screenshot(&c, "dark-graph-phone").await;
        c.set_window_size(1280, 800).await.expect("desktop");

        // The toggle picks light over the system's dark, and the choice survives a reload.
        c.find(Locator::Css("[data-testid=theme-toggle]"))
            .await
            .expect("toggle")
            .click()
            .await
            .expect("click");
        let v = js(&c, COLOURS, vec![json!("body")]).await;
        assert_eq!(v["theme"], "light");
        assert!(v["bg"].as_f64().unwrap() > 0.8, "{v}");
        c.refresh().await.expect("reload");
        wait_js(
            &c,
            "return document.querySelector('[data-testid=graph][data-state=drawn]')",
            "graph",
        )
        .await;
        let v = js(&c, COLOURS, vec![json!("body")]).await;
        assert_eq!(v["theme"], "light", "remembered");
        assert!(v["bg"].as_f64().unwrap() > 0.8, "{v}");
        // Toggling again under a light system gives dark.
        emulate_scheme(&c, "light").await;
        c.find(Locator::Css("[data-testid=theme-toggle]"))
            .await
            .expect("toggle")
            .click()
            .await
            .expect("click");
        let v = js(&c, COLOURS, vec![json!("body")]).await;
        assert_eq!(v["theme"], "dark");
        assert!(v["bg"].as_f64().unwrap() < 0.2, "{v}");

        let errors = console_errors(&c).await;
        // Leave the shared browser as found.
        js(&c, "localStorage.removeItem('meshlens.theme')", vec![]).await;
        emulate_scheme(&c, "").await;
        assert!(errors.is_empty(), "browser errors: {errors:#?}");
    });
}

/// Benchmark (ignored by default; prints figures, asserts only that the rows are all there):
/// `cargo test -p integration-tests --test console -- --ignored --nocapture list_benchmark`
///
/// Time from navigation start to the first row (rows are drawn at once) of each list page
/// over the 200-namespace synthetic mesh (10 workloads, services and apps per namespace), on
/// a real Prometheus.
#[test]
#[ignore]
fn list_benchmark() {
    let mesh = integration_tests::mesh::TestMesh::new(200, 10);
    let m = mesh.meshlens("");
    let base = format!("http://{}", m.addr);
    let all = integration_tests::mesh::all_namespaces(200);
    with_browser(|c| async move {
        for page in ["apps", "workloads", "services", "istio"] {
            for run in 1..=2 {
                c.goto(&format!("{base}/console/{page}?namespaces={all}")).await.expect("open");
                let drawn = rows(&c).await;
                let t = js(
                    &c,
                    "const e = performance.getEntriesByName('meshlens-list-drawn').pop(); return e && e.startTime",
                    vec![],
                )
                .await;
                if page != "istio" {
                    assert_eq!(drawn.len(), 2000, "{page}");
                }
                println!(
                    "console list bench: {page}, 200 namespaces, run {run}: {} rows, first row {:.0} ms after navigation start",
                    drawn.len(),
                    t.as_f64().unwrap_or(f64::NAN)
                );
            }
        }
    });
}
