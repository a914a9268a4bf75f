//! Error messages name the offending parameter but never reflect request text back.

use integration_tests::server::Meshlens;

const MARK: &str = "zqmarkqz";

#[test]
fn error_bodies_do_not_reflect_request_text() {
    let cfg = "[server]\nport = 0\n[auth]\nstrategy = \"anonymous\"\n[cluster]\nsource = \"snapshot\"\nsnapshot = [\"config/demo\"]\n";
    let m = Meshlens::start(cfg, &[], vec![]).expect("meshlens starts");
    let paths = [
        format!("/api/{MARK}"),
        format!("/api/namespaces/{MARK}/apps/{MARK}"),
        format!("/api/namespaces/bookinfo/apps/{MARK}"),
        format!("/namespaces/{MARK}/workloads"),
        format!("/namespaces/bookinfo/workloads/{MARK}"),
        format!("/namespaces/bookinfo/mesh?objects={MARK}"),
        format!("/namespaces/bookinfo/mesh/{MARK}/x/mesh_validations"),
        format!("/namespaces/bookinfo/mesh/virtualservices/{MARK}/mesh_validations"),
        format!("/namespaces/{MARK}/mesh_validations"),
        format!("/namespaces/bookinfo/services/{MARK}/mesh_validations"),
        format!("/api/namespaces/bookinfo/health?type={MARK}"),
        format!("/api/namespaces/bookinfo/health?rateInterval={MARK}"),
        format!("/api/namespaces/bookinfo/apps/{MARK}/health"),
        format!("/api/namespaces/graph?namespaces={MARK}"),
        format!("/api/namespaces/graph?namespaces=bookinfo&graphType={MARK}"),
        format!("/api/namespaces/graph?namespaces=bookinfo&duration={MARK}"),
        format!("/api/namespaces/graph?namespaces=bookinfo&appenders={MARK}"),
        format!("/api/namespaces/bookinfo/workloads/reviews-v1/graph?groupBy={MARK}"),
        format!("/api/namespaces/graph?namespaces=bookinfo&hide={MARK}"),
        format!("/api/namespaces/graph?namespaces=bookinfo&find={MARK}+%3D+1"),
        format!("/api/namespaces/graph?namespaces=bookinfo&find=app+%3D+{MARK}+and+rps+%3E+1"),
        format!("/api/namespaces/graph?namespaces=bookinfo&hops={MARK}"),
        format!("/api/namespaces/bookinfo/metrics?direction={MARK}"),
        format!("/api/namespaces/bookinfo/apps/reviews/dashboard?rateFunc={MARK}"),
        format!("/api/namespaces/bookinfo/apps/reviews/customdashboard/{MARK}"),
        format!(
            "/api/namespaces/bookinfo/apps/reviews/customdashboard/vertx-server?quantiles[]={MARK}"
        ),
    ];
    let mut reflected = Vec::new();
    for p in &paths {
        let r = m.get(p);
        assert!(r.status >= 400, "{p}: {}", r.status);
        let body = r.text();
        if body.contains(MARK) {
            reflected.push(format!("{p} -> {body}"));
        }
        let v = r.json();
        assert_eq!(v["code"], r.status, "{p}: {body}");
    }
    assert!(reflected.is_empty(), "request text reflected:\n{}", reflected.join("\n"));
}
