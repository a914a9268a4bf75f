//! [`Labels`]: the small string maps of the cached objects (labels, annotations, selectors).
//! A `BTreeMap` allocates an 11-entry node (over 500 bytes) for even one label, and a
//! cached pod, service or workload carries two or three such maps; a sorted boxed slice
//! is the size of its entries.

use std::{collections::BTreeMap, fmt};

use serde::{
    Deserialize, Deserializer,
    de::{IgnoredAny, MapAccess, Visitor},
};

use crate::trim::LAST_APPLIED;

/// A small map of strings, sorted by key; read-only once built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels(Box<[(Box<str>, Box<str>)]>);

impl Labels {
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.binary_search_by(|(k, _)| (**k).cmp(key)).ok().map(|i| &*self.0[i].1)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Entries by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The entries as an owned map (for payloads).
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn from_pairs(mut v: Vec<(Box<str>, Box<str>)>) -> Labels {
        // A stable sort keeps equal keys in input order; the last one wins, as in a map.
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                std::mem::swap(later, earlier);
            }
            same
        });
        Labels(v.into_boxed_slice())
    }
}

impl<K: Into<Box<str>>, V: Into<Box<str>>> FromIterator<(K, V)> for Labels {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(it: I) -> Labels {
        Labels::from_pairs(it.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }
}

/// Reads a JSON object of strings (`null` or absent: empty), skipping one key unread.
struct LabelsVisitor {
    skip: Option<&'static str>,
}

impl<'de> Visitor<'de> for LabelsVisitor {
    type Value = Labels;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of strings")
    }
    fn visit_unit<E>(self) -> Result<Labels, E> {
        Ok(Labels::default())
    }
    fn visit_none<E>(self) -> Result<Labels, E> {
        Ok(Labels::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Labels, D::Error> {
        d.deserialize_map(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Labels, A::Error> {
        let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0));
        while let Some(k) = m.next_key::<String>()? {
            if self.skip == Some(k.as_str()) {
                m.next_value::<IgnoredAny>()?;
            } else {
                out.push((k.into_boxed_str(), m.next_value::<String>()?.into_boxed_str()));
            }
        }
        Ok(Labels::from_pairs(out))
    }
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Labels, D::Error> {
        d.deserialize_option(LabelsVisitor { skip: None })
    }
}

/// Annotations without the `kubectl apply` copy, whose text is skipped, not read.
pub(crate) fn annotations<'de, D: Deserializer<'de>>(d: D) -> Result<Labels, D::Error> {
    d.deserialize_option(LabelsVisitor { skip: Some(LAST_APPLIED) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorted_lookups_and_the_last_duplicate_wins() {
        let l: Labels = [("version", "v1"), ("app", "a"), ("version", "v2")].into_iter().collect();
        assert_eq!(l.iter().collect::<Vec<_>>(), [("app", "a"), ("version", "v2")]);
        assert_eq!((l.get("app"), l.get("nope")), (Some("a"), None));
        assert!(l.contains_key("version") && l.len() == 2);
        assert_eq!(l.to_map().get("version").map(String::as_str), Some("v2"));
    }

    #[test]
    fn read_from_json_null_is_empty_and_annotations_skip_the_apply_copy() {
        let l: Labels = serde_json::from_value(json!({"b": "2", "a": "1"})).unwrap();
        assert_eq!(l.iter().collect::<Vec<_>>(), [("a", "1"), ("b", "2")]);
        assert!(serde_json::from_value::<Labels>(json!(null)).unwrap().is_empty());
        assert!(serde_json::from_value::<Labels>(json!({"a": 1})).is_err());
        let a = annotations(json!({LAST_APPLIED: "{}", "x": "y"})).unwrap();
        assert_eq!(a.iter().collect::<Vec<_>>(), [("x", "y")]);
    }
}
