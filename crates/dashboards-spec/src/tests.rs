use super::*;

const YAML: &str = r#"
name: vertx-server
title: Vert.x Server Metrics
runtime: Vert.x
discoverOn: vertx_http_server_requests_total
charts:
  - name: Server response time
    unit: s
    spans: 12
    metricName: vertx_http_server_responseTime_seconds
    dataType: histogram
    aggregations:
      - label: path
        displayName: Path
"#;

#[test]
fn the_three_formats_give_the_same_template() {
    let toml = r#"
name = "vertx-server"
title = "Vert.x Server Metrics"
runtime = "Vert.x"
discoverOn = "vertx_http_server_requests_total"
[[charts]]
name = "Server response time"
unit = "s"
spans = 12
metricName = "vertx_http_server_responseTime_seconds"
dataType = "histogram"
aggregations = [{ label = "path", displayName = "Path" }]
"#;
    let json = r#"{"name":"vertx-server","title":"Vert.x Server Metrics","runtime":"Vert.x",
      "discoverOn":"vertx_http_server_requests_total","charts":[{"name":"Server response time","unit":"s",
      "spans":12,"metricName":"vertx_http_server_responseTime_seconds","dataType":"histogram",
      "aggregations":[{"label":"path","displayName":"Path"}]}]}"#;
    let y = templates_from_text(YAML, Format::Yaml).unwrap();
    let t = templates_from_text(toml, Format::Toml).unwrap();
    let j = templates_from_text(json, Format::Json).unwrap();
    assert_eq!(y, t);
    assert_eq!(y, j);
    assert_eq!(y.len(), 1);
    let c = &y[0].charts[0];
    assert_eq!(c.data_type, DataType::Histogram);
    assert_eq!(c.spans, 12);
    assert_eq!(c.aggregations[0].display_name.as_str(), "Path");
    assert_eq!(y[0].discover_on.as_str(), "vertx_http_server_requests_total");
}

#[test]
fn a_monitoring_dashboard_resource_takes_its_name_and_runtime_label() {
    let doc = r#"
apiVersion: monitoring.kiali.io/v1alpha1
kind: MonitoringDashboard
metadata:
  name: my-go
  labels: {runtime: Go}
spec:
  title: My Go
  charts:
    - {name: Goroutines, unit: "", metricName: go_goroutines, dataType: raw}
"#;
    let t = templates_from_text(doc, Format::Yaml).unwrap();
    assert_eq!(t[0].name.as_str(), "my-go");
    assert_eq!(t[0].runtime.as_str(), "Go");
    assert_eq!(t[0].charts[0].spans, 6, "spans default to 6");
}

#[test]
fn runtime_defaults_to_the_title() {
    let t = templates_from_text(r#"{"name":"a","title":"T","charts":[]}"#, Format::Json).unwrap();
    assert_eq!(t[0].runtime.as_str(), "T");
}

#[test]
fn a_list_of_dashboards_names_the_bad_entry() {
    let doc = r#"
[[dashboards]]
name = "ok"
title = "Ok"
charts = []
[[dashboards]]
name = "bad"
title = "Bad"
charts = [{ name = "x", metricName = "m", dataType = "gauge" }]
"#;
    let e = templates_from_text(doc, Format::Toml).unwrap_err().to_string();
    assert!(e.contains("dashboards[1]") && e.contains("gauge"), "{e}");
}

#[test]
fn bad_documents_say_what_is_wrong() {
    let cases = [
        (r#"{"title":"T","charts":[]}"#, "no `name`"),
        (r#"{"name":"a/b","title":"T","charts":[]}"#, "contains `/`"),
        (r#"{"name":"a","charts":[]}"#, "`title` is missing"),
        (r#"{"name":"a","title":"T"}"#, "`charts`"),
        (
            r#"{"name":"a","title":"T","charts":[{"name":"c","dataType":"raw"}]}"#,
            "`metricName` is missing",
        ),
        (
            r#"{"name":"a","title":"T","charts":[{"name":"c","metricName":"m{x}","dataType":"raw"}]}"#,
            "not a metric name",
        ),
        (
            r#"{"name":"a","title":"T","charts":[{"name":"c","metricName":"m","dataType":"raw","spans":13}]}"#,
            "`spans`",
        ),
        (
            r#"{"name":"a","title":"T","charts":[{"name":"c","metricName":"m","dataType":"raw","aggregations":[{}]}]}"#,
            "`label` is missing",
        ),
        (r#"{"kind":"Pod","spec":{}}"#, "not a MonitoringDashboard"),
        (r#"[1]"#, "not a table"),
    ];
    for (doc, want) in cases {
        let e = templates_from_text(doc, Format::Json).unwrap_err().to_string();
        assert!(e.contains(want), "{doc}: {e}");
    }
    assert!(matches!(
        parse_text("a = ", Format::Toml),
        Err(SpecError::Syntax { format: "TOML", .. })
    ));
    assert!(matches!(
        parse_text("a: [", Format::Yaml),
        Err(SpecError::Syntax { format: "YAML", .. })
    ));
}

#[test]
fn warnings_are_nameless() {
    let w = warning("x.toml: broken");
    assert!(is_warning(&w));
    assert_eq!(w.title.as_str(), "x.toml: broken");
    let t = templates_from_text(YAML, Format::Yaml).unwrap();
    assert!(!is_warning(&t[0]));
}

#[test]
fn yaml_1_1_booleans_stay_strings() {
    let t = templates_from_text("name: y\ntitle: on\ncharts: []\n", Format::Yaml).unwrap();
    assert_eq!(t[0].name.as_str(), "y");
    assert_eq!(t[0].title.as_str(), "on");
}
