use super::*;

fn q(pairs: &[(&str, &str)]) -> String {
    meshlens_params::query::query_string(pairs)
}

#[test]
fn defaults_follow_the_spec() {
    let p = CustomParams::parse(&q(&[])).unwrap();
    assert!(p.base.avg);
    assert!(p.base.by_labels.is_empty() && p.base.quantiles.is_empty());
    assert_eq!((p.base.duration, p.base.step, p.base.rate_interval), (1800, 15, 60));
    assert_eq!(p.base.rate_func, RangeFunc::Rate);
    assert_eq!(p.version, None);
    let a = AppParams::parse(&q(&[])).unwrap();
    assert_eq!(
        (a.direction, a.reporter, a.request_protocol),
        (Direction::Outbound, Reporter::Source, None)
    );
}

#[test]
fn every_parameter_is_read() {
    let p = CustomParams::parse(&q(&[
        ("avg", "false"),
        ("byLabels[]", "path"),
        ("byLabels[]", "method"),
        ("duration", "600"),
        ("quantiles[]", "0.5"),
        ("quantiles[]", "0.99"),
        ("rateFunc", "irate"),
        ("rateInterval", "5m"),
        ("step", "30"),
        ("version", "v2"),
        ("queryTime", "1523364061"),
    ]))
    .unwrap();
    assert!(!p.base.avg);
    assert_eq!(p.base.by_labels, ["path", "method"]);
    assert_eq!(p.base.quantiles, ["0.5", "0.99"]);
    assert_eq!(p.base.rate_func, RangeFunc::Irate);
    assert_eq!((p.base.duration, p.base.step, p.base.rate_interval), (600, 30, 300));
    assert_eq!(p.version.as_deref(), Some("v2"));
    let a = AppParams::parse(&q(&[
        ("direction", "inbound"),
        ("reporter", "destination"),
        ("requestProtocol", "grpc"),
    ]))
    .unwrap();
    assert_eq!(
        (a.direction, a.reporter, a.request_protocol.as_deref()),
        (Direction::Inbound, Reporter::Destination, Some("grpc"))
    );
}

#[test]
fn the_range_is_floored_to_the_step() {
    // Kiali's own example: queryTime 1523364061, duration 1000, step 10.
    let p =
        BaseParams::parse(&q(&[("queryTime", "1523364061"), ("duration", "1000"), ("step", "10")]))
            .unwrap();
    assert_eq!(p.range(0), QueryTime::Range { start: 1523363060, end: 1523364061, step: 10 });
    let p = BaseParams::parse(&q(&[("duration", "60"), ("step", "15")])).unwrap();
    assert_eq!(p.range(1000), QueryTime::Range { start: 930, end: 1000, step: 15 });
}

#[test]
fn bad_values_are_400s_naming_the_parameter() {
    let cases: &[(&str, &str)] = &[
        ("avg", "yes"),
        ("byLabels[]", "a-b"),
        ("byLabels[]", "x\"}"),
        ("duration", "-5"),
        ("duration", "abc"),
        ("duration", "0"),
        ("quantiles[]", "1.5"),
        ("quantiles[]", "x"),
        ("rateFunc", "increase"),
        ("rateInterval", "5 minutes"),
        ("rateInterval", "0s"),
        ("step", "0"),
        ("step", "1.5"),
        ("version", ""),
        ("queryTime", "now"),
    ];
    for (name, value) in cases {
        let e = CustomParams::parse(&q(&[(name, value)])).unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(e.to_string().contains(&format!("'{name}'")), "{name}={value}: {e}");
    }
    for (name, value) in [("direction", "sideways"), ("reporter", "me"), ("requestProtocol", "h t")]
    {
        let e = AppParams::parse(&q(&[(name, value)])).unwrap_err();
        assert!(e.to_string().contains(&format!("'{name}'")), "{e}");
    }
    let e = CustomParams::parse(&q(&[("duration", "1000000"), ("step", "1")])).unwrap_err();
    assert!(e.to_string().contains("'duration'") && e.to_string().contains("'step'"), "{e}");
}

#[test]
fn durations_parse_like_prometheus() {
    assert_eq!(parse_duration_secs("90"), Some(90));
    assert_eq!(parse_duration_secs("1m"), Some(60));
    assert_eq!(parse_duration_secs("1h30m"), Some(5400));
    assert_eq!(parse_duration_secs("2000ms"), Some(2));
    assert_eq!(parse_duration_secs("1500ms"), None);
    assert_eq!(parse_duration_secs("1x"), None);
    assert_eq!(parse_duration_secs("m"), None);
    assert_eq!(parse_duration_secs(""), None);
}

#[test]
fn requests_over_a_limit_name_the_parameter_and_the_limit() {
    let limits = ParamLimits {
        max_quantiles: 2,
        max_by_labels: 1,
        max_window_secs: 3600,
        max_future_secs: 60,
        max_points: 100,
        now: 1_000,
    };
    // (query, the parameter named, the limit's key)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: &[Case] = &[
        (
            &[("quantiles[]", "0.5"), ("quantiles[]", "0.9"), ("quantiles[]", "0.99")],
            "'quantiles[]'",
            "limits.max_quantiles",
        ),
        (&[("byLabels[]", "a,b")], "'byLabels[]'", "limits.max_by_labels"),
        (&[("rateInterval", "2h")], "'rateInterval'", "limits.max_window"),
        (&[("duration", "3601"), ("step", "3600")], "'duration'", "limits.max_window"),
        (&[("duration", "3600"), ("step", "10")], "'step'", "limits.max_points"),
        (&[("queryTime", "1061"), ("duration", "60")], "'queryTime'", "limits.max_query_time_skew"),
    ];
    for (query, name, key) in cases {
        let e = CustomParams::parse_with(&q(query), &limits).unwrap_err();
        assert_eq!(e.status(), 400);
        let text = e.to_string();
        assert!(text.contains(name) && text.contains(key), "{query:?}: {text}");
    }
    // At the limits, accepted; repeated labels count once.
    let ok: &[(&str, &str)] = &[
        ("quantiles[]", "0.5"),
        ("quantiles[]", "0.9"),
        ("byLabels[]", "a,a"),
        ("rateInterval", "1h"),
        ("duration", "3600"),
        ("step", "36"),
        ("queryTime", "1060"),
    ];
    AppParams::parse_with(&q(ok), &limits).unwrap();
    // The contract's defaults: 11 quantiles are too many, 10 are not.
    let eleven: Vec<(&str, &str)> = std::iter::repeat_n(("quantiles[]", "0.5"), 11).collect();
    assert!(CustomParams::parse(&q(&eleven)).is_err());
    assert!(CustomParams::parse(&q(&eleven[..10])).is_ok());
}

#[test]
fn a_wrong_typed_value_is_a_400_naming_the_parameter_as_sent() {
    let e = AppParams::parse("byLabels=ok&byLabels=zq-z").unwrap_err();
    assert_eq!(
        e.to_string(),
        "Bad request, cannot parse query parameter 'byLabels': expected label names (letters, digits, underscores)"
    );
    // The first value of a scalar counts; later ones are not read.
    let e = CustomParams::parse("step=15&step=x&rateInterval=zqz").unwrap_err();
    assert_eq!(
        e.to_string(),
        "Bad request, cannot parse query parameter 'rateInterval': expected a duration such as 1m or 30s"
    );
    // Unknown parameters, and another operation's, are ignored; both spellings repeat.
    let p = CustomParams::parse("quantiles[]=0.5&quantiles=0.9&direction=sideways&x=1").unwrap();
    assert_eq!(p.base.quantiles, ["0.5", "0.9"]);
    let e = AppParams::parse("direction=sideways").unwrap_err();
    assert_eq!(e.status(), 400);
    assert!(e.to_string().contains("'direction': expected inbound or outbound"), "{e}");
}
