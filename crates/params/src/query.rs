//! Typed query strings. Each operation declares the parameters it accepts as one
//! `Deserialize` struct and reads it with [`parse_query`]; a wrong value is a [`QueryError`]
//! naming the parameter. Unknown parameters are ignored: third-party clients send extra ones.
//!
//! Scalar fields are read through [`first`]: the first value of a repeated key counts, as it
//! always did. Repeated fields (`quantiles[]=a&quantiles[]=b`) are `Vec`s, in request order,
//! read through [`each`] when their values are typed. Value types implement `FromStr`; their
//! error says what the parameter accepts and never repeats the value sent.

use std::{fmt::Display, str::FromStr};

use serde::{
    Deserialize, Deserializer,
    de::{DeserializeOwned, Error as _},
};
use serde_path_to_error::Segment;

/// A query parameter with a value its operation does not accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value for query parameter '{param}': {reason}")]
pub struct QueryError {
    /// The parameter as the client spells it (`rateInterval`, `byLabels[]`).
    pub param: String,
    /// What the parameter accepts.
    pub reason: String,
}

/// Reads an operation's parameter struct from the raw query string (without `?`).
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, QueryError> {
    let de = serde_html_form::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|e| match e.path().iter().next() {
        Some(Segment::Map { key }) => {
            QueryError { param: key.clone(), reason: e.into_inner().to_string() }
        }
        // Not a parameter's value: serde's own text could quote the request, so it is dropped.
        _ => QueryError { param: String::new(), reason: "the query string cannot be read".into() },
    })
}

/// The first value of a parameter, parsed (for `#[serde(default, deserialize_with = "first")]`).
pub fn first<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: Display,
{
    let values = Vec::<String>::deserialize(d)?;
    values.into_iter().next().map(|v| v.parse().map_err(D::Error::custom)).transpose()
}

/// Every value of a repeated parameter, each parsed, in request order.
pub fn each<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: Display,
{
    let values = Vec::<String>::deserialize(d)?;
    values.iter().map(|v| v.parse().map_err(D::Error::custom)).collect()
}

/// Encodes name/value pairs as a query string (tests and benchmarks build requests with it).
pub fn query_string(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seconds, at least one.
    #[derive(Debug, PartialEq)]
    struct Secs(u64);

    impl FromStr for Secs {
        type Err = &'static str;
        fn from_str(s: &str) -> Result<Self, Self::Err> {
            s.parse().ok().filter(|n| *n > 0).map(Secs).ok_or("expected seconds")
        }
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(default)]
    struct Query {
        #[serde(deserialize_with = "first")]
        step: Option<Secs>,
        #[serde(deserialize_with = "first")]
        name: Option<String>,
        #[serde(rename = "tags[]")]
        tags: Vec<String>,
        #[serde(rename = "windows[]", deserialize_with = "each")]
        windows: Vec<Secs>,
    }

    #[test]
    fn values_are_typed_repeats_kept_and_unknown_keys_ignored() {
        let q: Query = parse_query(
            "step=5&step=x&name=a%20b&tags[]=x&tags[]=&tags%5B%5D=z&windows[]=1&other=1",
        )
        .unwrap();
        assert_eq!(q.step, Some(Secs(5)), "the first value counts; later ones are not read");
        assert_eq!(q.name.as_deref(), Some("a b"));
        assert_eq!(q.tags, ["x", "", "z"]);
        assert_eq!(q.windows, [Secs(1)]);
        assert_eq!(parse_query::<Query>("").unwrap(), Query::default());
        assert_eq!(parse_query::<Query>("name=").unwrap().name.as_deref(), Some(""));
    }

    #[test]
    fn a_wrong_value_names_its_parameter_and_not_the_value() {
        for (query, param) in
            [("step=0", "step"), ("windows[]=1&windows[]=zqz", "windows[]"), ("step=zqz", "step")]
        {
            let e = parse_query::<Query>(query).unwrap_err();
            assert_eq!((e.param.as_str(), e.reason.as_str()), (param, "expected seconds"));
            assert_eq!(
                e.to_string(),
                format!("invalid value for query parameter '{param}': expected seconds")
            );
            assert!(!e.to_string().contains("zqz"));
        }
    }

    #[test]
    fn pairs_encode_as_a_query_string() {
        assert_eq!(query_string(&[("a b", "c&d"), ("e[]", "1")]), "a+b=c%26d&e%5B%5D=1");
        let q: Query = parse_query(&query_string(&[("tags[]", "a,b"), ("name", "x=y")])).unwrap();
        assert_eq!((q.tags, q.name.as_deref()), (vec!["a,b".to_string()], Some("x=y")));
    }
}
