//! A team's own appender: the example in plugins/examples/error-threshold is built in its
//! own cargo invocation before the tests (its own workspace, depending on plugin-api alone,
//! see `EXAMPLE_BUILD`; scripts/test.sh runs it), dropped into a
//! plugin folder next to the bundled plugins, configured from `[appenders.errorThreshold]`,
//! and its field is found in the graph JSON.

// In process (no binary spawned): the same client interface as `server::Meshlens`.
use integration_tests::inprocess::InProcess as Meshlens;
use std::path::PathBuf;

use integration_tests::prometheus::{PromServer, fixture};
use integration_tests::server::{BUNDLED, plugin_dir, workspace_root};
use meshlens_traffic::{BUNDLED_APPENDERS, md5_hex};
use serde_json::Value;

const ARGS: &[&str] = &["--end", "1700000000", "--minutes", "30"];

/// The command that builds the example (its own workspace and target folder);
/// `scripts/test.sh` runs it before the tests, which never run cargo themselves.
const EXAMPLE_BUILD: &str = "cargo build --offline --manifest-path plugins/examples/error-threshold/Cargo.toml \
     --target-dir target/tmp/example-error-threshold";

/// The example's library, built before the tests ([`EXAMPLE_BUILD`]).
fn example_library() -> PathBuf {
    let file = format!(
        "{}example_error_threshold{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let lib = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("example-error-threshold")
        .join("debug")
        .join(file);
    assert!(
        lib.is_file(),
        "{} is not built: run `{EXAMPLE_BUILD}` from the workspace root (scripts/test.sh does)",
        lib.display()
    );
    lib
}

fn start(
    prom: &PromServer,
    appender_table: &str,
) -> Result<Meshlens, integration_tests::server::StartFailure> {
    let dir = plugin_dir(BUNDLED);
    let lib = example_library();
    std::fs::copy(&lib, dir.path().join(lib.file_name().expect("file name")))
        .expect("copy the example");
    let demo = workspace_root().join("config").join("demo");
    let cfg = format!(
        "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[plugins]\ndirs = [{:?}]\nappenders = [\"errorThreshold\"]\n\
         [cluster]\nsource = \"snapshot\"\nsnapshot = [{demo:?}]\n\
         [metrics]\nbackend = \"prometheus\"\n[metrics.prometheus]\nurl = {:?}\n{appender_table}",
        dir.path(),
        prom.url()
    );
    Meshlens::start(&cfg, &[], vec![dir])
}

fn edge<'a>(v: &'a Value, src: &str, dst: &str) -> &'a Value {
    let (s, t) = (md5_hex(src), md5_hex(dst));
    v["elements"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| &e["data"])
        .find(|e| e["source"] == s.as_str() && e["target"] == t.as_str())
        .unwrap_or_else(|| panic!("no edge {src} -> {dst}"))
}

#[test]
fn the_example_appender_sets_its_field_from_its_config() {
    let f = fixture(ARGS);
    let prom = PromServer::start(&f);
    let m =
        start(&prom, "[appenders.errorThreshold]\nthreshold = 6.0\nfield = \"tooManyErrors\"\n")
            .unwrap_or_else(|e| panic!("meshlens did not start: {e:?}"));
    let url = |extra: &str| {
        format!("/api/namespaces/graph?namespaces=bookinfo&queryTime={}{extra}", f.end())
    };
    let r = m.get(&url(""));
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    // productpage → details: 1 of 10 req/s are 404s (10 %), above the 6 % threshold.
    let details = edge(&v, "wl_bookinfo_productpage-v1", "wl_bookinfo_details-v1");
    assert_eq!(details["tooManyErrors"], true, "{details}");
    assert_eq!(details["errorPercent"], 10.0);
    assert!(details.get("responseTime").is_some(), "the bundled appenders ran too");
    // The gateway → productpage edge has 5 % errors: below the threshold.
    let gw = edge(&v, "wl_istio-system_istio-ingressgateway", "wl_bookinfo_productpage-v1");
    assert!(gw.get("tooManyErrors").is_none(), "{gw}");
    let clean = edge(&v, "wl_bookinfo_productpage-v1", "wl_bookinfo_reviews-v1");
    assert!(clean.get("tooManyErrors").is_none());

    // getConfig lists it after the bundled ones: the list the console's checkboxes show.
    let cfg = m.get("/api/config").json();
    let mut want: Vec<&str> = BUNDLED_APPENDERS.to_vec();
    want.push("errorThreshold");
    assert_eq!(cfg["graphAppenders"], serde_json::json!(want), "{cfg}");

    // It answers to the appenders parameter like the bundled ones.
    let only = m.get(&url("&appenders=errorThreshold")).json();
    let d = edge(&only, "wl_bookinfo_productpage-v1", "wl_bookinfo_details-v1");
    assert_eq!((d["tooManyErrors"].as_bool(), d.get("responseTime")), (Some(true), None));
    let none = m.get(&url("&appenders=")).json();
    assert!(
        edge(&none, "wl_bookinfo_productpage-v1", "wl_bookinfo_details-v1")
            .get("tooManyErrors")
            .is_none()
    );
    let bad = m.get(&url("&appenders=nope"));
    assert_eq!(bad.status, 400);
    assert!(
        bad.json()["message"].as_str().unwrap_or_default().contains("errorThreshold"),
        "known names are listed"
    );
}

#[test]
fn a_bad_appender_table_stops_start_up_naming_it() {
    let f = fixture(ARGS);
    let prom = PromServer::start(&f);
    match start(&prom, "[appenders.errorThreshold]\nthreshold = \"high\"\n") {
        Ok(_) => panic!("meshlens started with a bad appender table"),
        Err(e) => assert!(e.stderr.contains("appenders.errorThreshold"), "{}", e.stderr),
    }
}
