//! [`Subject`] for an element's `data` object of the graph JSON, read as the console reads it
//! (`host/console/js/rates.js`): the reference the server's own elements are held equal to.

use serde_json::Value;

use crate::{EdgeNumber, Field, Flag, Subject};

/// One element's `data` (node or edge) of the graph JSON.
#[derive(Debug, Clone, Copy)]
pub struct JsonElement<'a>(pub &'a Value);

/// JavaScript truthiness of a JSON value (`undefined` for a missing key).
fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0 && !x.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// The console's `Number(v)` of a JSON value.
fn number(v: Option<&Value>) -> f64 {
    match v {
        None => f64::NAN,
        Some(Value::Null) => 0.0,
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => crate::eval::js_number(s),
        Some(_) => f64::NAN,
    }
}

/// The console's `num(v)`: missing, null or empty is 0, and so is NaN.
fn num(v: Option<&Value>) -> f64 {
    let x = match v {
        None | Some(Value::Null) => 0.0,
        Some(Value::String(s)) if s.is_empty() => 0.0,
        v => number(v),
    };
    if x.is_nan() { 0.0 } else { x }
}

/// `Number(v || 0)`.
fn number_or_zero(v: Option<&Value>) -> f64 {
    if truthy(v) { number(v) } else { 0.0 }
}

impl Subject for JsonElement<'_> {
    fn field(&self, f: Field) -> Option<&str> {
        let v = match f {
            Field::NodeType => self.0.get("nodeType"),
            Field::Namespace => self.0.get("namespace"),
            Field::App => self.0.get("app"),
            Field::Version => self.0.get("version"),
            Field::Workload => self.0.get("workload"),
            Field::Service => self.0.get("service"),
            Field::Protocol => self.0.get("traffic").and_then(|t| t.get("protocol")),
        };
        v.and_then(Value::as_str)
    }

    fn number(&self, n: EdgeNumber) -> f64 {
        let rates = self.0.get("traffic").and_then(|t| t.get("rates"));
        let rate = |k: &str| rates.and_then(|r| r.get(k));
        match n {
            EdgeNumber::Rps => num(rate("http")) + num(rate("grpc")),
            EdgeNumber::ErrorPct => match (rate("httpPercentErr"), rate("grpcPercentErr")) {
                (Some(h), _) => num(Some(h)),
                (None, Some(g)) => num(Some(g)),
                _ => 0.0,
            },
            EdgeNumber::Tcp => number_or_zero(rate("tcp")),
            EdgeNumber::Rt => number_or_zero(self.0.get("responseTime")),
        }
    }

    fn flag(&self, f: Flag) -> bool {
        let key = match f {
            Flag::HasCb => "hasCB",
            Flag::HasVs => "hasVS",
            Flag::HasMissingSc => "hasMissingSC",
            Flag::HasHttpRoute => "hasHTTPRoute",
            Flag::Ambient => "isAmbient",
            Flag::Waypoint => "isWaypoint",
            Flag::Dead => "isDead",
            Flag::Unused => "isUnused",
            Flag::Outside => "isOutside",
            Flag::Root => "isRoot",
            Flag::ServiceEntry => "isServiceEntry",
            Flag::Inaccessible => "isInaccessible",
            // A `groupBy` box (`isGroup`) or a `boxBy` one (`isBox`).
            Flag::Box => return truthy(self.0.get("isGroup")) || truthy(self.0.get("isBox")),
            Flag::Mtls => "isMTLS",
        };
        truthy(self.0.get(key))
    }
}
