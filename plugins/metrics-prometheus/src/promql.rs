//! Rendering a structured [`MetricQuery`] to PromQL text.
//!
//! The shapes follow `plugin_api::metrics`: `sum by (g) (func(m{..}[w]))`, the histogram
//! average as a ratio of two such sums, and `histogram_quantile(q, sum by (le, g) (...))`.
//! Label values are escaped; label and metric names are checked against Prometheus's
//! grammar so that no text can escape its position in the query.

use plugin_api::{HistogramStat, MatchOp, Matcher, MetricQuery, PluginError, RangeFunc};

/// Escapes a label value for a double-quoted PromQL string.
pub fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    for ch in value.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn check_label_name(name: &str) -> Result<(), PluginError> {
    if is_label_name(name) {
        Ok(())
    } else {
        Err(PluginError::invalid(format!("invalid label name {name:?}")))
    }
}

/// `name{l1="v1",...}` (or `{...}` alone when the matchers select the name).
pub fn selector(metric: &str, matchers: &[Matcher]) -> Result<String, PluginError> {
    if !metric.is_empty() && !is_metric_name(metric) {
        return Err(PluginError::invalid(format!("invalid metric name {metric:?}")));
    }
    if metric.is_empty() && matchers.is_empty() {
        return Err(PluginError::invalid("a query needs a metric name or at least one matcher"));
    }
    let mut out = String::from(metric);
    if matchers.is_empty() {
        return Ok(out);
    }
    out.push('{');
    for (i, m) in matchers.iter().enumerate() {
        check_label_name(m.name.as_str())?;
        if i > 0 {
            out.push(',');
        }
        let op = match m.op {
            MatchOp::Eq => "=",
            MatchOp::Ne => "!=",
            MatchOp::Re => "=~",
            MatchOp::Nre => "!~",
        };
        out.push_str(m.name.as_str());
        out.push_str(op);
        out.push('"');
        out.push_str(&escape_value(m.value.as_str()));
        out.push('"');
    }
    out.push('}');
    Ok(out)
}

/// `func(selector[Ns])`, or the bare selector for [`RangeFunc::None`].
fn ranged(q: &MetricQuery, metric: &str) -> Result<String, PluginError> {
    let sel = selector(metric, &q.matchers)?;
    let func = match q.func {
        RangeFunc::None => return Ok(sel),
        RangeFunc::Rate => "rate",
        RangeFunc::Irate => "irate",
        RangeFunc::Increase => "increase",
    };
    if q.window_secs == 0 {
        return Err(PluginError::invalid("a range function needs a window of at least 1 s"));
    }
    Ok(format!("{func}({sel}[{}s])", q.window_secs))
}

/// `sum by (extra.., group..) (inner)`; `inner` itself when there is no grouping.
fn aggregate(q: &MetricQuery, inner: String, extra: &[&str]) -> Result<String, PluginError> {
    let Some(group) = q.group_by.as_ref().into_option() else {
        return Ok(inner);
    };
    let mut labels: Vec<&str> = extra.to_vec();
    for g in group.iter() {
        check_label_name(g.as_str())?;
        if !labels.contains(&g.as_str()) {
            labels.push(g.as_str());
        }
    }
    Ok(format!("sum by ({}) ({inner})", labels.join(", ")))
}

fn histogram_name(q: &MetricQuery, suffix: &str) -> Result<String, PluginError> {
    if q.metric.is_empty() {
        return Err(PluginError::invalid("a histogram query needs the metric's base name"));
    }
    Ok(format!("{}{suffix}", q.metric))
}

/// Renders the whole query.
pub fn render(q: &MetricQuery) -> Result<String, PluginError> {
    match q.histogram {
        HistogramStat::None => aggregate(q, ranged(q, q.metric.as_str())?, &[]),
        HistogramStat::Avg => {
            let sum = aggregate(q, ranged(q, &histogram_name(q, "_sum")?)?, &[])?;
            let count = aggregate(q, ranged(q, &histogram_name(q, "_count")?)?, &[])?;
            Ok(format!("{sum} / {count}"))
        }
        HistogramStat::Quantile(p) => {
            if !(0.0..=1.0).contains(&p) {
                return Err(PluginError::invalid(format!("quantile {p} is not between 0 and 1")));
            }
            let buckets = aggregate(q, ranged(q, &histogram_name(q, "_bucket")?)?, &["le"])?;
            Ok(format!("histogram_quantile({p}, {buckets})"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plugin_api::QueryTime;
    use plugin_api::abi_stable::std_types::{RNone, RSome, RVec};

    fn query(metric: &str, matchers: Vec<Matcher>) -> MetricQuery {
        MetricQuery {
            metric: metric.into(),
            matchers: matchers.into(),
            func: RangeFunc::Rate,
            window_secs: 60,
            group_by: RNone,
            histogram: HistogramStat::None,
            time: QueryTime::Instant(1_700_000_000),
        }
    }

    #[test]
    fn label_values_are_escaped() {
        let q = query("istio_requests_total", vec![Matcher::eq("app", "a\"b\\c\nd")]);
        assert_eq!(render(&q).unwrap(), r#"rate(istio_requests_total{app="a\"b\\c\nd"}[60s])"#);
        assert_eq!(escape_value(r#"\""#), r#"\\\""#);
    }

    #[test]
    fn an_injected_quote_stays_inside_the_string() {
        let q = query("m", vec![Matcher::eq("ns", "x\"} or vector(1) or m{a=\"")]);
        let text = render(&q).unwrap();
        assert_eq!(text, r#"rate(m{ns="x\"} or vector(1) or m{a=\""}[60s])"#);
    }

    #[test]
    fn every_operator_renders() {
        let q = query(
            "m",
            vec![
                Matcher::eq("a", "1"),
                Matcher::ne("b", "2"),
                Matcher::re("c", "x|y"),
                Matcher::nre("d", "z.*"),
            ],
        );
        assert_eq!(render(&q).unwrap(), r#"rate(m{a="1",b!="2",c=~"x|y",d!~"z.*"}[60s])"#);
    }

    #[test]
    fn grouping_and_histograms() {
        let mut q =
            query("istio_request_duration_milliseconds", vec![Matcher::eq("reporter", "source")]);
        q.group_by = RSome(RVec::from(vec!["source_app".into(), "le".into()]));
        q.histogram = HistogramStat::Quantile(0.95);
        assert_eq!(
            render(&q).unwrap(),
            r#"histogram_quantile(0.95, sum by (le, source_app) (rate(istio_request_duration_milliseconds_bucket{reporter="source"}[60s])))"#
        );
        q.histogram = HistogramStat::Avg;
        q.func = RangeFunc::Irate;
        assert_eq!(
            render(&q).unwrap(),
            "sum by (source_app, le) (irate(istio_request_duration_milliseconds_sum{reporter=\"source\"}[60s])) / \
             sum by (source_app, le) (irate(istio_request_duration_milliseconds_count{reporter=\"source\"}[60s]))"
        );
        q.histogram = HistogramStat::None;
        q.func = RangeFunc::None;
        q.group_by = RSome(RVec::new());
        assert_eq!(
            render(&q).unwrap(),
            r#"sum by () (istio_request_duration_milliseconds{reporter="source"})"#
        );
    }

    #[test]
    fn names_that_could_break_out_are_refused() {
        let q = query("m", vec![Matcher::eq("a\"", "1")]);
        assert_eq!(render(&q).unwrap_err().kind, plugin_api::ErrorKind::InvalidInput);
        let q = query("m{x=\"1\"}", vec![]);
        assert_eq!(render(&q).unwrap_err().kind, plugin_api::ErrorKind::InvalidInput);
        let mut q = query("m", vec![]);
        q.group_by = RSome(RVec::from(vec!["a) or (b".into()]));
        assert_eq!(render(&q).unwrap_err().kind, plugin_api::ErrorKind::InvalidInput);
        let mut q = query("m", vec![]);
        q.histogram = HistogramStat::Quantile(1.5);
        assert_eq!(render(&q).unwrap_err().kind, plugin_api::ErrorKind::InvalidInput);
    }

    #[test]
    fn a_name_matcher_may_replace_the_metric() {
        let q = query("", vec![Matcher::re("__name__", "istio_.*_total")]);
        assert_eq!(render(&q).unwrap(), r#"rate({__name__=~"istio_.*_total"}[60s])"#);
    }
}
