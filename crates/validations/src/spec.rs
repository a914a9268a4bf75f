//! Tolerant readers for object specs: a missing or mistyped field reads as absent, never
//! as a failure (a malformed object is what validations are for).

use std::collections::BTreeMap;

use serde_json::Value;

/// The array at `key`, or an empty slice.
pub(crate) fn arr<'v>(v: &'v Value, key: &str) -> &'v [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// The string at `key`.
pub(crate) fn str_at<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

/// A JSON object of labels as strings (non-string values in their JSON text).
pub(crate) fn labels(v: &Value) -> Option<BTreeMap<String, String>> {
    let map = v.as_object()?;
    Some(
        map.iter()
            .map(|(k, v)| {
                (k.clone(), v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
            })
            .collect(),
    )
}

/// The route protocols of a VirtualService.
pub(crate) const PROTOCOLS: [&str; 3] = ["http", "tcp", "tls"];

/// One entry of `spec.<proto>[r].route[d]`.
pub(crate) struct RouteDest<'v> {
    pub proto: &'static str,
    pub r: usize,
    pub d: usize,
    pub entry: &'v Value,
}

/// Every route destination entry of a VirtualService spec, in document order.
pub(crate) fn route_destinations(spec: &Value) -> impl Iterator<Item = RouteDest<'_>> {
    PROTOCOLS.into_iter().flat_map(move |proto| {
        arr(spec, proto).iter().enumerate().flat_map(move |(r, route)| {
            arr(route, "route").iter().enumerate().map(move |(d, entry)| RouteDest {
                proto,
                r,
                d,
                entry,
            })
        })
    })
}
