//! The one-pass decoder against the reference: the client crate's own decoding, converted
//! as the plugin did before (sorted labels), on fixed edge cases and generated answers.

use std::collections::BTreeMap;

use plugin_api::{LabelSet, QueryResult, Sample, Series};
use prometheus_http_query::{
    error::PrometheusError,
    response::{Data, PromqlResult},
};

use super::{Answer, decode};

/// The client's envelope (its own is private), as `Client::query(..).get()` decodes it.
#[derive(serde::Deserialize)]
#[serde(tag = "status")]
enum Reference {
    #[serde(alias = "success")]
    Success { data: PromqlResult },
    #[serde(alias = "error")]
    Error(PrometheusError),
}

fn labels(metric: std::collections::HashMap<String, String>) -> LabelSet {
    let sorted: BTreeMap<String, String> = metric.into_iter().collect();
    sorted.into_iter().collect()
}

/// The plugin's conversion before the one-pass decoder.
fn convert(data: Data) -> QueryResult {
    let series = match data {
        Data::Vector(v) => v
            .into_iter()
            .map(|iv| {
                let (metric, s) = iv.into_inner();
                Series {
                    labels: labels(metric),
                    samples: vec![Sample { t: s.timestamp(), v: s.value() }].into(),
                }
            })
            .collect(),
        Data::Matrix(m) => m
            .into_iter()
            .map(|rv| {
                let (metric, samples) = rv.into_inner();
                Series {
                    labels: labels(metric),
                    samples: samples
                        .iter()
                        .map(|s| Sample { t: s.timestamp(), v: s.value() })
                        .collect(),
                }
            })
            .collect(),
        Data::Scalar(s) => vec![Series {
            labels: LabelSet::new(),
            samples: vec![Sample { t: s.timestamp(), v: s.value() }].into(),
        }],
    };
    QueryResult { series: series.into() }
}

/// One series as compared: labels, and samples as bits (NaN equals NaN when its bits do).
type SeenSeries = (Vec<(String, String)>, Vec<(u64, u64)>);

#[derive(Debug, PartialEq)]
enum Seen {
    Data(Vec<SeenSeries>),
    Error(PrometheusError),
    Invalid,
}

fn seen_result(r: QueryResult) -> Seen {
    Seen::Data(
        r.series
            .iter()
            .map(|s| {
                (
                    s.labels.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
                    s.samples.iter().map(|x| (x.t.to_bits(), x.v.to_bits())).collect(),
                )
            })
            .collect(),
    )
}

fn reference(body: &str) -> Seen {
    match serde_json::from_str::<Reference>(body) {
        Ok(Reference::Success { data }) => seen_result(convert(data.into_inner().0)),
        Ok(Reference::Error(e)) => Seen::Error(e),
        Err(_) => Seen::Invalid,
    }
}

fn ours(body: &str) -> Seen {
    match decode(body.as_bytes()) {
        Ok(Answer::Data(r)) => {
            // Each series' labels are held at their exact size (the answer cache's size
            // estimate and the memory a large answer takes both depend on it).
            for s in r.series.iter() {
                assert_eq!(
                    s.labels.spare_bytes(),
                    0,
                    "{:?} in body: {body}",
                    s.labels.heap_bytes()
                );
            }
            seen_result(r)
        }
        Ok(Answer::Error(e)) => Seen::Error(e),
        Err(_) => Seen::Invalid,
    }
}

fn same(body: &str) -> Seen {
    let (want, got) = (reference(body), ours(body));
    assert_eq!(got, want, "body: {body}");
    got
}

#[test]
fn answers_equal_the_clients_on_every_shape() {
    let bodies = [
        // Vector: labels sorted, unsorted, a repeated name (the last wins), escapes, unicode.
        r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"up","job":"a"},"value":[1700000000,"1"]},
            {"metric":{"z":"1","a":"2","m":"3"},"value":[1700000000.125,"2.5"]},
            {"metric":{"b":"x","a":"y","b":"z"},"value":[1.5,"-3e-7"]},
            {"metric":{"q":"a\"b\\c\nd\u00e9\ud83d\ude00","é":"ü"},"value":[2,"NaN"]},
            {"metric":{},"value":[3,"+Inf"]},
            {"metric":{"x":""},"value":[4,"-Inf"]}]}}"#,
        // Empty vector and matrix; warnings and infos alongside.
        r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#,
        r#"{"status":"success","data":{"resultType":"matrix","result":[]},"warnings":["w"],"infos":["i"]}"#,
        // Matrix with several samples per series, one with none.
        r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"b":"1","a":"2"},"values":[[1,"1"],[2.5,"2"],[4,"0.000001"]]},
            {"metric":{"a":"3"},"values":[]}]}}"#,
        // Scalar.
        r#"{"status":"success","data":{"resultType":"scalar","result":[1700000000.5,"42"]}}"#,
        // Fields in any order, unknown ones in a series.
        r#"{"data":{"result":[{"value":[1,"7"],"histogram":null,"metric":{"k":"v"}}],"resultType":"vector"},"status":"success"}"#,
        r#"{"data":{"result":[{"values":[[1,"7"]],"metric":{"k":"v"}}],"resultType":"matrix"},"status":"success"}"#,
        r#"{"data":{"result":[5,"6"],"resultType":"scalar"},"status":"success"}"#,
        // The store's own errors, every type.
        r#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#,
        r#"{"status":"error","errorType":"timeout","error":"query timed out"}"#,
        r#"{"status":"error","errorType":"canceled","error":"canceled"}"#,
        r#"{"status":"error","errorType":"execution","error":"many-to-many matching"}"#,
        r#"{"status":"error","errorType":"unavailable","error":"x"}"#,
        r#"{"status":"error","errorType":"internal","error":"x"}"#,
        r#"{"status":"error","errorType":"not_found","error":"x"}"#,
        r#"{"error":"late status","errorType":"bad_data","status":"error"}"#,
    ];
    for body in bodies {
        assert!(!matches!(same(body), Seen::Invalid), "refused: {body}");
    }
}

#[test]
fn what_the_client_refuses_is_refused() {
    let bodies = [
        r#"{"status":"success","data":{"resultType":"string","result":[1,"text"]}}"#,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"]}]}}"#,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}}"#,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,1]}]}}"#,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"one"]}]}}"#,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":["1","1"]}]}}"#,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"values":[[1,"1"]]}]}}"#,
        r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"value":[1,"1"]}]}}"#,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"1"]}]}}"#,
        r#"{"status":"success","data":{"resultType":"scalar","result":[]}}"#,
        r#"{"status":"success","data":{"resultType":"scalar","result":[1]}}"#,
        r#"{"status":"success","data":{"resultType":"vector","result":[1,"2"]}}"#,
        r#"{"status":"success","data":{"resultType":"vector"}}"#,
        r#"{"status":"success","data":{"result":[]}}"#,
        r#"{"status":"success"}"#,
        r#"{"status":"maybe","data":{"resultType":"vector","result":[]}}"#,
        r#"{"data":{"resultType":"vector","result":[]}}"#,
        r#"{"status":"error","error":"no type"}"#,
        r#"{"status":"error","errorType":"bad_data"}"#,
        r#"{"status":"error","errorType":"mystery","error":"x"}"#,
        r#"{"status":"success","data":{"resultType":"vector","result":[]}} trailing"#,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"val"#,
        r#"[]"#,
        "",
    ];
    for body in bodies {
        assert_eq!(same(body), Seen::Invalid, "accepted: {body}");
    }
}

/// A small deterministic generator (no dependency for a test).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
    fn text(&mut self) -> String {
        const PIECES: &[&str] =
            &["a", "b", "z", "_", "x1", "ns-7", "é", "\\\"", "\\\\", "\\n", "\\u00e9", "\\/", " "];
        (0..self.next(5)).map(|_| PIECES[self.next(PIECES.len() as u64) as usize]).collect()
    }
    fn value(&mut self) -> String {
        const SPECIAL: &[&str] = &["NaN", "+Inf", "-Inf", "0", "-0", "1e308", "5e-324"];
        match self.next(4) {
            0 => SPECIAL[self.next(SPECIAL.len() as u64) as usize].to_string(),
            1 => self.next(1_000_000).to_string(),
            _ => format!("{}", self.next(1 << 40) as f64 / 7919.0),
        }
    }
    fn time(&mut self) -> String {
        match self.next(3) {
            0 => (1_700_000_000 + self.next(1000)).to_string(),
            _ => format!("{:.3}", 1_700_000_000.0 + self.next(100_000) as f64 / 1000.0),
        }
    }
    fn metric(&mut self) -> String {
        let pairs: Vec<String> =
            (0..self.next(7)).map(|_| format!("\"{}\":\"{}\"", self.text(), self.text())).collect();
        format!("{{{}}}", pairs.join(","))
    }
    fn sample(&mut self) -> String {
        format!("[{},\"{}\"]", self.time(), self.value())
    }
}

#[test]
fn generated_answers_equal_the_clients() {
    let mut g = Lcg(0x5eed);
    let mut data_bodies = 0;
    for _ in 0..600 {
        let (kind, result) = match g.next(3) {
            0 => {
                let series: Vec<String> = (0..g.next(6))
                    .map(|_| {
                        let (m, s) = (g.metric(), g.sample());
                        if g.next(2) == 0 {
                            format!("{{\"metric\":{m},\"value\":{s}}}")
                        } else {
                            format!("{{\"value\":{s},\"metric\":{m}}}")
                        }
                    })
                    .collect();
                ("vector", format!("[{}]", series.join(",")))
            }
            1 => {
                let series: Vec<String> = (0..g.next(6))
                    .map(|_| {
                        let samples: Vec<String> = (0..g.next(5)).map(|_| g.sample()).collect();
                        format!("{{\"metric\":{},\"values\":[{}]}}", g.metric(), samples.join(","))
                    })
                    .collect();
                ("matrix", format!("[{}]", series.join(",")))
            }
            _ => ("scalar", g.sample()),
        };
        let data = if g.next(2) == 0 {
            format!("{{\"resultType\":\"{kind}\",\"result\":{result}}}")
        } else {
            format!("{{\"result\":{result},\"resultType\":\"{kind}\"}}")
        };
        let body = if g.next(2) == 0 {
            format!("{{\"status\":\"success\",\"data\":{data}}}")
        } else {
            format!("{{\"data\":{data},\"status\":\"success\"}}")
        };
        if let Seen::Data(_) = same(&body) {
            data_bodies += 1;
        }
    }
    assert_eq!(data_bodies, 600, "every generated answer is well formed");
}
