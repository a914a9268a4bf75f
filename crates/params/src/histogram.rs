//! The request-duration histogram: the one type the configuration, the metrics engine, the
//! graph and the dashboards share.

use serde::{Deserializer, Serializer, de};

/// Which request-duration histogram a metrics store holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationHistogram {
    /// `istio_request_duration_milliseconds` (current Istio).
    Milliseconds,
    /// `istio_request_duration_seconds` (older Istio).
    Seconds,
}

impl DurationHistogram {
    /// The histogram's base name.
    pub fn metric(self) -> &'static str {
        match self {
            Self::Milliseconds => "istio_request_duration_milliseconds",
            Self::Seconds => "istio_request_duration_seconds",
        }
    }

    /// Factor from the histogram's unit to milliseconds.
    pub fn to_ms(self) -> f64 {
        match self {
            Self::Milliseconds => 1.0,
            Self::Seconds => 1000.0,
        }
    }
}

/// `metrics.duration_histogram` as serde reads and writes it: `"auto"` (`None`: the metrics
/// engine detects it from the store), `"milliseconds"` or `"seconds"`. Use with
/// `#[serde(with = "meshlens_params::duration_histogram_setting")]`.
pub mod duration_histogram_setting {
    use super::*;

    const VARIANTS: &[&str] = &["auto", "milliseconds", "seconds"];

    /// Writes the setting's text.
    pub fn serialize<S: Serializer>(
        v: &Option<DurationHistogram>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_str(match v {
            None => "auto",
            Some(DurationHistogram::Milliseconds) => "milliseconds",
            Some(DurationHistogram::Seconds) => "seconds",
        })
    }

    /// Reads the setting; any other text is serde's "unknown variant" error, as before.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<DurationHistogram>, D::Error> {
        struct Setting;
        impl de::Visitor<'_> for Setting {
            type Value = Option<DurationHistogram>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("enum DurationHistogram")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                match v {
                    "auto" => Ok(None),
                    "milliseconds" => Ok(Some(DurationHistogram::Milliseconds)),
                    "seconds" => Ok(Some(DurationHistogram::Seconds)),
                    _ => Err(E::unknown_variant(v, VARIANTS)),
                }
            }
        }
        d.deserialize_str(Setting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct M {
        #[serde(with = "duration_histogram_setting")]
        h: Option<DurationHistogram>,
    }

    #[test]
    fn setting_round_trips_and_names_the_choices() {
        for (text, v) in [
            ("auto", None),
            ("milliseconds", Some(DurationHistogram::Milliseconds)),
            ("seconds", Some(DurationHistogram::Seconds)),
        ] {
            let json = format!(r#"{{"h":"{text}"}}"#);
            assert_eq!(serde_json::from_str::<M>(&json).unwrap(), M { h: v });
            assert_eq!(serde_json::to_string(&M { h: v }).unwrap(), json);
        }
        let err = serde_json::from_str::<M>(r#"{"h":"minutes"}"#).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "unknown variant `minutes`, expected one of `auto`, `milliseconds`, `seconds`"
            ),
            "{err}"
        );
    }
}
