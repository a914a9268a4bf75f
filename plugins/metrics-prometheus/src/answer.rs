//! Prometheus's query answer (`/api/v1/query`, `/api/v1/query_range`) decoded in one pass
//! straight into plugin-api types.
//!
//! The client crate's decoder goes through serde's buffered `Content` tree twice (the
//! `status` tag, then the flattened `resultType` tag) and a `HashMap` per series, which
//! the plugin then sorted into a `BTreeMap`: the dominant cost of a graph's 200-namespace
//! answers. This decoder reads the body once, borrows strings where they have no escapes,
//! and accepts the fields in any order. Its answers equal the client's, converted as the
//! plugin did before (the tests below compare the two on every shape and edge case).

use std::{fmt, str::FromStr};

use plugin_api::{LabelSet, QueryResult, Sample, Series};
use prometheus_http_query::error::PrometheusError;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What a well-formed body holds.
#[derive(Debug)]
pub enum Answer {
    /// `"status": "success"`: the result.
    Data(QueryResult),
    /// `"status": "error"`: the store's own error.
    Error(PrometheusError),
}

/// Decodes a query answer's body.
pub fn decode(body: &[u8]) -> Result<Answer, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let answer = de.deserialize_map(EnvelopeVisitor)?;
    de.end()?;
    Ok(answer)
}

#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum EnvelopeKey {
    Status,
    Data,
    ErrorType,
    Error,
    #[serde(other)]
    Other,
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Answer;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Prometheus API answer")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Answer, A::Error> {
        let (mut status, mut data, mut error_type, mut error) = (None, None, None, None);
        while let Some(key) = map.next_key::<EnvelopeKey>()? {
            match key {
                EnvelopeKey::Status => status = Some(map.next_value::<Text>()?.0),
                EnvelopeKey::Data => data = Some(map.next_value_seed(DataSeed)?),
                EnvelopeKey::ErrorType => error_type = Some(map.next_value::<Text>()?.0),
                EnvelopeKey::Error => error = Some(map.next_value::<Text>()?.0),
                EnvelopeKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match status.as_deref() {
            Some("success") => {
                data.map(Answer::Data).ok_or_else(|| de::Error::missing_field("data"))
            }
            Some("error") => {
                // The client's own error type, so its kinds (bad_data, timeout...) map as before.
                let fields = serde_json::json!({ "errorType": error_type, "error": error });
                serde_json::from_value(fields).map(Answer::Error).map_err(de::Error::custom)
            }
            Some(other) => Err(de::Error::unknown_variant(other, &["success", "error"])),
            None => Err(de::Error::missing_field("status")),
        }
    }
}

/// A JSON string, borrowed from the body when it has no escapes.
struct Text(String);

impl<'de> serde::Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor(|s: &str| Text(s.to_string())))
    }
}

/// Calls a function on a string, owned or borrowed, without copying it first.
struct StrVisitor<F>(F);

impl<'de, T, F: FnOnce(&str) -> T> Visitor<'de> for StrVisitor<F> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
        Ok((self.0)(s))
    }
}

/// `data`: `{"resultType": ..., "result": ...}`; the type `string` is refused, as the
/// client refused it.
struct DataSeed;

impl<'de> DeserializeSeed<'de> for DataSeed {
    type Value = QueryResult;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum DataKey {
    ResultType,
    Result,
    #[serde(other)]
    Other,
}

impl<'de> Visitor<'de> for DataSeed {
    type Value = QueryResult;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a query result")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut kind, mut result) = (None, None);
        while let Some(key) = map.next_key::<DataKey>()? {
            match key {
                DataKey::ResultType => kind = Some(map.next_value::<Text>()?.0),
                DataKey::Result => result = Some(map.next_value::<Parsed>()?),
                DataKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let kind = kind.ok_or_else(|| de::Error::missing_field("resultType"))?;
        let result = result.ok_or_else(|| de::Error::missing_field("result"))?;
        // The result was read before its type was necessarily known: check they agree.
        let series = match (kind.as_str(), result) {
            ("vector", Parsed::Series { series, instant: true }) => series,
            ("matrix", Parsed::Series { series, instant: false }) => series,
            ("vector" | "matrix", Parsed::Series { series, .. }) if series.is_empty() => series,
            ("scalar", Parsed::Scalar(sample)) => {
                vec![Series { labels: LabelSet::new(), samples: vec![sample].into() }]
            }
            ("vector" | "matrix" | "scalar", _) => {
                return Err(de::Error::custom(format!("a result that is not a {kind}")));
            }
            (other, _) => {
                return Err(de::Error::unknown_variant(other, &["vector", "matrix", "scalar"]));
            }
        };
        Ok(QueryResult { series: series.into() })
    }
}

/// `result`: a list of series (vector, matrix) or one `[time, "value"]` pair (scalar,
/// string; the latter fails in [`DataSeed`]).
enum Parsed {
    /// `instant`: every series had `value` (a vector); else every one had `values`.
    Series {
        series: Vec<Series>,
        instant: bool,
    },
    Scalar(Sample),
}

impl<'de> serde::Deserialize<'de> for Parsed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(ParsedVisitor)
    }
}

struct ParsedVisitor;

/// One element of `result`: a series object, or one half of a scalar pair.
enum Element {
    Series(Series, bool),
    Time(f64),
    Text(Option<f64>),
}

impl<'de> serde::Deserialize<'de> for Element {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ElementVisitor)
    }
}

struct ElementVisitor;

impl<'de> Visitor<'de> for ElementVisitor {
    type Value = Element;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a series or a sample")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Element, E> {
        Ok(Element::Time(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Element, E> {
        Ok(Element::Time(v as f64))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Element, E> {
        Ok(Element::Time(v as f64))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Element, E> {
        Ok(Element::Text(f64::from_str(v).ok()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Element, A::Error> {
        let (series, instant) = SeriesVisitor.visit_map(map)?;
        Ok(Element::Series(series, instant))
    }
}

impl<'de> Visitor<'de> for ParsedVisitor {
    type Value = Parsed;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of series or a [time, value] pair")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Parsed, A::Error> {
        let mut series = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let mut instant = None;
        let mut scalar = (None, None);
        let mut n = 0usize;
        while let Some(e) = seq.next_element::<Element>()? {
            match e {
                Element::Series(s, i) => {
                    if *instant.get_or_insert(i) != i {
                        return Err(de::Error::custom("a result mixing value and values"));
                    }
                    series.push(s);
                }
                Element::Time(t) if n == 0 => scalar.0 = Some(t),
                Element::Text(v) if n == 1 => {
                    scalar.1 = Some(v.ok_or_else(|| {
                        de::Error::custom("a float value inside a quoted JSON string")
                    })?)
                }
                _ => return Err(de::Error::custom("a result that is neither series nor a pair")),
            }
            n += 1;
        }
        match (scalar, series.is_empty()) {
            ((None, None), _) => Ok(Parsed::Series { series, instant: instant.unwrap_or(true) }),
            ((Some(t), Some(v)), true) if n == 2 => Ok(Parsed::Scalar(Sample { t, v })),
            _ => Err(de::Error::custom("a result that is neither series nor a pair")),
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum SeriesKey {
    Metric,
    // The client's field names, which it also accepts.
    #[serde(alias = "sample")]
    Value,
    #[serde(alias = "samples")]
    Values,
    #[serde(other)]
    Other,
}

/// One series: `metric` and either `value` (vector) or `values` (matrix).
struct SeriesVisitor;

impl<'de> Visitor<'de> for SeriesVisitor {
    type Value = (Series, bool);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a series")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut labels, mut samples, mut instant) = (None, None, None);
        while let Some(key) = map.next_key::<SeriesKey>()? {
            match key {
                SeriesKey::Metric if labels.is_none() => {
                    labels = Some(map.next_value::<Labels>()?.0)
                }
                SeriesKey::Metric => return Err(de::Error::duplicate_field("metric")),
                SeriesKey::Value if instant.is_none() => {
                    samples = Some(vec![map.next_value::<OneSample>()?.0]);
                    instant = Some(true);
                }
                SeriesKey::Values if instant.is_none() => {
                    samples = Some(map.next_value::<Samples>()?.0);
                    instant = Some(false);
                }
                SeriesKey::Value | SeriesKey::Values => {
                    return Err(de::Error::custom("a series with value and values, or one twice"));
                }
                SeriesKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let labels = labels.ok_or_else(|| de::Error::missing_field("metric"))?;
        let samples = samples.ok_or_else(|| de::Error::missing_field("value"))?;
        Ok((Series { labels, samples: samples.into() }, instant == Some(true)))
    }
}

/// A series' labels, sorted by name (the client's map kept the last of a repeated name).
struct Labels(LabelSet);

impl<'de> serde::Deserialize<'de> for Labels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(LabelsVisitor)
    }
}

struct LabelsVisitor;

impl<'de> Visitor<'de> for LabelsVisitor {
    type Value = Labels;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of label names to values")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Labels, A::Error> {
        // Read into a reused buffer, then copied at its exact size: the JSON reader gives no
        // size hint, and buffers grown while reading would hold room to spare.
        SCRATCH.with_borrow_mut(|scratch| {
            let Scratch { text, ends, order } = scratch;
            text.clear();
            ends.clear();
            while map.next_key_seed(AppendTo(text))?.is_some() {
                let name = text.len();
                map.next_value_seed(AppendTo(text))?;
                ends.push((name, text.len()));
            }
            let label = |i: usize| {
                let start = if i == 0 { 0 } else { ends[i - 1].1 };
                let (name, value) = ends[i];
                (&text[start..name], &text[name..value])
            };
            order.clear();
            order.extend(0..ends.len());
            // Prometheus sends them sorted; anything else is sorted here.
            if !(1..ends.len()).all(|i| label(i - 1).0 < label(i).0) {
                order.sort_by(|&a, &b| label(a).0.cmp(label(b).0));
                // Of a repeated name, the last value wins (a stable sort keeps their order):
                // each later one takes the kept one's place.
                order.dedup_by(|later, kept| {
                    let same = label(*later).0 == label(*kept).0;
                    if same {
                        *kept = *later;
                    }
                    same
                });
            }
            let size = order.iter().map(|&i| label(i).0.len() + label(i).1.len()).sum();
            let mut set = LabelSet::with_capacity(order.len(), size);
            for &i in order.iter() {
                let (name, value) = label(i);
                set.push(name, value);
            }
            Ok(Labels(set))
        })
    }
}

/// Appends a JSON string (a label's name or value) to a buffer.
struct AppendTo<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for AppendTo<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(StrVisitor(|s: &str| self.0.push_str(s)))
    }
}

/// One series' labels as they are read (see [`LabelsVisitor`]): the text of every name and
/// value, where each label's name and value end in it, and the order they are kept in.
#[derive(Default)]
struct Scratch {
    text: String,
    ends: Vec<(usize, usize)>,
    order: Vec<usize>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// `[time, "value"]`.
struct OneSample(Sample);

impl<'de> serde::Deserialize<'de> for OneSample {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(SampleVisitor)
    }
}

struct SampleVisitor;

impl<'de> Visitor<'de> for SampleVisitor {
    type Value = OneSample;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a [time, \"value\"] pair")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OneSample, A::Error> {
        let t: f64 = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let v = seq.next_element::<Value>()?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(3, &self));
        }
        Ok(OneSample(Sample { t, v: v.0 }))
    }
}

/// A sample value: a float in a JSON string (`"1.5"`, `"NaN"`, `"+Inf"`).
struct Value(f64);

impl<'de> serde::Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor(|s: &str| f64::from_str(s).map(Value)))?
            .map_err(|_| de::Error::custom("a float value inside a quoted JSON string"))
    }
}

/// `[[time, "value"], ...]`.
struct Samples(Vec<Sample>);

impl<'de> serde::Deserialize<'de> for Samples {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(SamplesVisitor)
    }
}

struct SamplesVisitor;

impl<'de> Visitor<'de> for SamplesVisitor {
    type Value = Samples;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of samples")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Samples, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(s) = seq.next_element::<OneSample>()? {
            out.push(s.0);
        }
        Ok(Samples(out))
    }
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "answer_properties.rs"]
mod properties;
