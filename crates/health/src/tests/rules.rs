//! The rules and their evaluation, against Kiali's documented examples
//! (kiali.io, "Traffic Health") and the cases of the issue.

use super::super::*;

/// Codes by protocol in one direction: `[(protocol, code, rate)]`.
fn dir(entries: &[(&str, &str, f64)]) -> ByCode {
    let mut m = ByCode::new();
    for (p, c, v) in entries {
        m.add(p, c, *v);
    }
    m
}

fn inbound(entries: &[(&str, &str, f64)]) -> RequestCodes {
    RequestCodes { inbound: dir(entries), outbound: ByCode::new() }
}

fn status(rules: &Rules, kind: &str, name: &str, rc: &RequestCodes) -> Status {
    rules.request_status("bookinfo", kind, name, rc)
}

fn rule(ns: &str, kind: &str, name: &str, t: Vec<ToleranceRule>) -> RateRule {
    RateRule {
        namespace: Some(ns.into()),
        kind: Some(kind.into()),
        name: Some(name.into()),
        tolerance: t,
    }
}

fn tolerance(code: &str, direction: &str, protocol: &str, d: f64, f: f64) -> ToleranceRule {
    ToleranceRule {
        code: Some(code.into()),
        direction: Some(direction.into()),
        protocol: Some(protocol.into()),
        degraded: d,
        failure: f,
    }
}

#[test]
fn kiali_defaults_judge_5xx_4xx_grpc_and_no_response() {
    let r = Rules::default();
    let s = |rc: RequestCodes| status(&r, "app", "x", &rc);
    // "if the rate of application errors is >= 0.1% Kiali will show Degraded".
    assert_eq!(s(inbound(&[("http", "200", 99.9), ("http", "500", 0.1)])), Status::Degraded);
    assert_eq!(s(inbound(&[("http", "200", 99.5), ("http", "503", 0.5)])), Status::Degraded);
    assert_eq!(s(inbound(&[("http", "200", 90.0), ("http", "500", 10.0)])), Status::Failure);
    assert_eq!(s(inbound(&[("http", "200", 85.0), ("http", "503", 15.0)])), Status::Failure);
    // 6 % 500 plus 6 % 503 is 12 % for 5xx.
    assert_eq!(
        s(inbound(&[("http", "200", 88.0), ("http", "500", 6.0), ("http", "503", 6.0)])),
        Status::Failure
    );
    // Client errors: degraded at 10 %, failure at 20 %.
    assert_eq!(s(inbound(&[("http", "200", 95.0), ("http", "404", 5.0)])), Status::Healthy);
    assert_eq!(s(inbound(&[("http", "200", 88.0), ("http", "404", 12.0)])), Status::Degraded);
    assert_eq!(s(inbound(&[("http", "200", 80.0), ("http", "404", 20.0)])), Status::Failure);
    // gRPC codes 1-16 are errors; 0 is success. 2 % of status 14 is degraded.
    assert_eq!(s(inbound(&[("grpc", "0", 98.0), ("grpc", "14", 2.0)])), Status::Degraded);
    assert_eq!(s(inbound(&[("grpc", "0", 100.0)])), Status::Healthy);
    assert_eq!(s(inbound(&[("grpc", "0", 89.0), ("grpc", "16", 11.0)])), Status::Failure);
    assert_eq!(s(inbound(&[("grpc", "0", 50.0), ("grpc", "17", 50.0)])), Status::Healthy);
    // No response at all (`-`): failure at 10 %.
    assert_eq!(s(inbound(&[("http", "200", 90.0), ("http", "-", 10.0)])), Status::Failure);
    // Nothing to judge.
    assert_eq!(s(RequestCodes::default()), Status::Na);
    assert_eq!(s(inbound(&[("http", "200", 0.0)])), Status::Na);
}

#[test]
fn directions_are_judged_apart() {
    let r = Rules::default();
    // 15 % inbound 500s with clean outbound calls: failure, not diluted by the outbound.
    let rc = RequestCodes {
        inbound: dir(&[("http", "200", 8.5), ("http", "500", 1.5)]),
        outbound: dir(&[("http", "200", 100.0)]),
    };
    assert_eq!(status(&r, "app", "x", &rc), Status::Failure);
    let only_out = RequestCodes { inbound: ByCode::new(), outbound: dir(&[("http", "200", 1.0)]) };
    assert_eq!(status(&r, "app", "x", &only_out), Status::Healthy);
    // An inbound-only tolerance does not judge outbound calls.
    let rules = Rules::compile(&[rule(
        ".*",
        ".*",
        ".*",
        vec![tolerance("5XX", "inbound", "http", 0.0, 10.0)],
    )])
    .unwrap();
    let rc = RequestCodes { inbound: ByCode::new(), outbound: dir(&[("http", "500", 1.0)]) };
    assert_eq!(status(&rules, "app", "x", &rc), Status::Na, "no tolerance looked at it");
}

#[test]
fn a_rule_tolerating_404_applies_to_its_objects_only() {
    // Kiali's documented use: 404s are expected from reviews, so only its own rule counts.
    let rules = Rules::compile(&[rule(
        "bookinfo",
        "app",
        "reviews",
        vec![
            tolerance("404", ".*", "http", 30.0, 40.0),
            tolerance("5\\d\\d", ".*", "http", 0.0, 10.0),
        ],
    )])
    .unwrap();
    let twelve = inbound(&[("http", "200", 88.0), ("http", "404", 12.0)]);
    assert_eq!(status(&rules, "app", "reviews", &twelve), Status::Healthy);
    // Other objects fall through to the default rule: degraded at 10 % 4xx.
    assert_eq!(status(&rules, "app", "ratings", &twelve), Status::Degraded);
    assert_eq!(status(&rules, "service", "reviews", &twelve), Status::Degraded);
    assert_eq!(rules.request_status("other", "app", "reviews", &twelve), Status::Degraded);
    // A code none of the rule's tolerances matches is not an error: 50 % 403 is healthy.
    let forbidden = inbound(&[("http", "200", 50.0), ("http", "403", 50.0)]);
    assert_eq!(status(&rules, "app", "reviews", &forbidden), Status::Healthy);
    // Patterns match the whole value: `revi` is not `reviews`, `40` is not `404`.
    let partial = Rules::compile(&[rule(".*", ".*", "revi", vec![])]).unwrap();
    assert_eq!(
        status(&partial, "app", "reviews", &twelve),
        Status::Degraded,
        "the default rule applies"
    );
    let short =
        Rules::compile(&[rule(".*", ".*", ".*", vec![tolerance("40", ".*", ".*", 0.0, 1.0)])])
            .unwrap();
    assert_eq!(status(&short, "app", "x", &twelve), Status::Healthy);
}

#[test]
fn a_namespace_wide_5xx_rule_at_one_percent() {
    let rules = Rules::compile(&[rule(
        "bookinfo",
        ".*",
        ".*",
        vec![tolerance("^5\\d\\d$", ".*", "http", 1.0, 10.0)],
    )])
    .unwrap();
    let half = inbound(&[("http", "200", 99.5), ("http", "503", 0.5)]);
    assert_eq!(status(&rules, "service", "anything", &half), Status::Healthy);
    let two = inbound(&[("http", "200", 98.0), ("http", "503", 2.0)]);
    assert_eq!(status(&rules, "workload", "w", &two), Status::Degraded);
    // The first matching rule wins alone: 4xx no longer counts in bookinfo.
    let notfound = inbound(&[("http", "200", 50.0), ("http", "404", 50.0)]);
    assert_eq!(status(&rules, "app", "x", &notfound), Status::Healthy);
}

#[test]
fn a_matching_rule_without_tolerances_uses_kiali_simple_check() {
    let rules = Rules::compile(&[rule(".*", ".*", ".*", vec![])]).unwrap();
    // 4xx and 5xx of both directions together: degraded at 0.1 %, failure at 10 %.
    let rc = RequestCodes {
        inbound: dir(&[("http", "200", 95.0), ("http", "404", 4.0)]),
        outbound: dir(&[("http", "503", 1.0)]),
    };
    assert_eq!(status(&rules, "app", "x", &rc), Status::Degraded);
}

#[test]
fn thresholds_follow_kiali() {
    assert_eq!(thresholds(0.0, 0.0, 0.0), Status::Healthy);
    assert_eq!(thresholds(0.01, 0.0, 10.0), Status::Degraded);
    assert_eq!(thresholds(10.0, 0.0, 10.0), Status::Failure);
    assert_eq!(thresholds(5.0, 10.0, 20.0), Status::Healthy);
    assert_eq!(thresholds(0.5, 0.0, 0.0), Status::Failure, "failure 0: any error fails");
}

#[test]
fn workload_replicas() {
    assert_eq!(workload_status(2, 2), Status::Healthy);
    assert_eq!(workload_status(2, 1), Status::Degraded);
    assert_eq!(workload_status(2, 0), Status::Failure);
    assert_eq!(workload_status(0, 0), Status::Na, "scaled to zero: nothing to judge");
    assert_eq!(Status::Healthy.worst(Status::Na), Status::Healthy);
    assert_eq!(Status::Degraded.worst(Status::Failure), Status::Failure);
}

#[test]
fn grpc_errors_are_read_from_grpc_status_and_no_response_is_a_dash() {
    use plugin_api::{QueryResult, Sample, Series};
    let series = |labels: &[(&str, &str)], v: f64| Series {
        labels: labels.iter().copied().collect(),
        samples: vec![Sample { t: 0.0, v }].into(),
    };
    let results = vec![
        QueryResult {
            series: vec![
                series(
                    &[
                        ("request_protocol", "grpc"),
                        ("response_code", "200"),
                        ("grpc_response_status", "14"),
                    ],
                    2.0,
                ),
                series(&[("request_protocol", "http"), ("response_code", "0")], 1.0),
            ]
            .into(),
        },
        QueryResult::default(),
        QueryResult {
            series: vec![series(&[("request_protocol", "http"), ("response_code", "200")], 3.0)]
                .into(),
        },
    ];
    let rc = target_codes(&results, &crate::Ambient::default());
    assert_eq!(rc.inbound.rate("grpc", "14"), Some(2.0));
    assert_eq!(rc.inbound.rate("http", "-"), Some(1.0));
    assert_eq!(rc.outbound.rate("http", "200"), Some(3.0));
    // Read by protocol, then code, as Kiali's maps are.
    let read: Vec<(&str, &str)> = rc.inbound.iter().map(|(p, c, _)| (p, c)).collect();
    assert_eq!(read, [("grpc", "14"), ("http", "-")]);
}

#[test]
fn bad_rules_are_refused_naming_each_key() {
    let mut bad = rule("(", ".*", ".*", vec![tolerance("5XX", ".*", "http", 0.0, 10.0)]);
    bad.tolerance.push(tolerance("[", ".*", "http", 20.0, 10.0));
    let problems = Rules::compile(&[rule(".*", ".*", ".*", vec![]), bad]).unwrap_err();
    let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "health.rate[1].namespace",
            "health.rate[1].tolerance[1].code",
            "health.rate[1].tolerance[1].degraded"
        ]
    );
    assert!(problems[0].reason.starts_with("invalid regular expression"), "{:?}", problems[0]);
    assert!(problems[2].reason.contains("above failure"), "{:?}", problems[2]);
    assert!(problems.iter().all(|p| !p.reason.contains('\n')));
}

#[test]
fn the_effective_rules_end_with_the_default() {
    let rules = Rules::compile(&[rule(
        "bookinfo",
        "app",
        "reviews",
        vec![tolerance("404", "", "http", 30.0, 40.0)],
    )])
    .unwrap();
    let eff = rules.effective();
    assert_eq!(eff.len(), 2);
    assert_eq!(eff[0].name.as_deref(), Some("reviews"));
    assert_eq!(eff[0].tolerance[0].direction.as_deref(), Some(".*"));
    assert_eq!(eff[1].namespace.as_deref(), Some(".*"));
    let codes: Vec<&str> = eff[1].tolerance.iter().filter_map(|t| t.code.as_deref()).collect();
    assert_eq!(codes, ["5XX", "4XX", "^[1-9]$|^1[0-6]$", "^-$"]);
    assert_eq!(Rules::default().effective(), vec![eff[1].clone()]);
}

#[test]
fn codes_add_up_per_protocol_and_code_and_read_sorted() {
    let mut m = ByCode::new();
    for (p, c, v) in
        [("http", "500", 1.0), ("grpc", "0", 2.0), ("http", "200", 3.0), ("http", "500", 0.5)]
    {
        m.add(p, c, v);
    }
    let all: Vec<(&str, &str, f64)> = m.iter().collect();
    assert_eq!(all, [("grpc", "0", 2.0), ("http", "200", 3.0), ("http", "500", 1.5)]);
    let protocols: Vec<(&str, usize)> = m.by_protocol().map(|(p, run)| (p, run.len())).collect();
    assert_eq!(protocols, [("grpc", 1), ("http", 2)]);
    assert_eq!(m.rate("http", "404"), None);
    assert!(!m.is_empty() && ByCode::new().is_empty());
}
