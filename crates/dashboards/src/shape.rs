//! Query results to the Dashboard JSON: MetricSeries is Prometheus's matrix JSON,
//! `{"matrix": [{"metric": {labels}, "values": [[t, "v"], ...]}]}`.

use plugin_api::{QueryResult, Sample};
use serde_json::{Map, Value, json};

/// A sample value as Prometheus writes it: shortest round-trip text, `NaN`, `+Inf`, `-Inf`.
pub fn value_text(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else {
        format!("{v}")
    }
}

/// A timestamp as Prometheus writes it: seconds, with at most millisecond precision.
pub fn time_json(t: f64) -> Value {
    let ms = (t * 1000.0).round();
    if ms % 1000.0 == 0.0 && ms.abs() < 9.0e15 {
        json!((ms / 1000.0) as i64)
    } else {
        json!(ms / 1000.0)
    }
}

fn sample_json(s: &Sample, divisor: f64) -> Value {
    json!([time_json(s.t), value_text(s.v / divisor)])
}

/// One MetricSeries; series sorted by their labels so that equal data gives equal JSON.
pub fn metric_series(result: &QueryResult) -> Value {
    metric_series_divided(result, 1.0)
}

/// One MetricSeries with every value divided by `divisor` (1000 turns milliseconds into
/// seconds; dividing rather than multiplying by 0.001 keeps `25 ms` exactly `0.025`).
pub fn metric_series_divided(result: &QueryResult, divisor: f64) -> Value {
    let mut series: Vec<_> = result.series.iter().collect();
    series.sort_by(|a, b| a.labels.cmp(&b.labels));
    let matrix: Vec<Value> = series
        .into_iter()
        .map(|s| {
            let mut labels: Vec<_> = s.labels.iter().collect();
            labels.sort();
            let metric: Map<String, Value> =
                labels.into_iter().map(|(n, v)| (n.to_string(), Value::String(v.to_string()))).collect();
            json!({"metric": metric, "values": s.samples.iter().map(|x| sample_json(x, divisor)).collect::<Vec<_>>()})
        })
        .collect();
    json!({ "matrix": matrix })
}

#[cfg(test)]
mod tests {
    use plugin_api::Series;

    use super::*;

    #[test]
    fn values_and_times_look_like_prometheus() {
        assert_eq!(value_text(2.0), "2");
        assert_eq!(value_text(0.125), "0.125");
        assert_eq!(value_text(f64::NAN), "NaN");
        assert_eq!(value_text(f64::INFINITY), "+Inf");
        assert_eq!(value_text(f64::NEG_INFINITY), "-Inf");
        assert_eq!(time_json(1700000000.0), json!(1700000000));
        assert_eq!(time_json(1435781451.781), json!(1435781451.781));
    }

    #[test]
    fn a_matrix_is_sorted_by_labels() {
        let s = |v: &str, x: f64| Series {
            labels: [("version", v)].into_iter().collect(),
            samples: vec![Sample { t: 10.0, v: x }].into(),
        };
        let r = QueryResult { series: vec![s("v2", 1.5), s("v1", 3.0)].into() };
        assert_eq!(
            metric_series(&r),
            json!({"matrix": [
                {"metric": {"version": "v1"}, "values": [[10, "3"]]},
                {"metric": {"version": "v2"}, "values": [[10, "1.5"]]}
            ]})
        );
        assert_eq!(metric_series(&QueryResult::default()), json!({"matrix": []}));
    }
}
