//! Evaluating an expression on a node or an edge, with the console's value rules.

use crate::parse::{Ast, Expr, Kind};

/// A node's text fields as the graph JSON carries them (`None`: the key is absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `nodeType` (`app` for boxes).
    NodeType,
    /// `namespace`.
    Namespace,
    /// `app`.
    App,
    /// `version`.
    Version,
    /// `workload`.
    Workload,
    /// `service`.
    Service,
    /// An edge's `traffic.protocol`.
    Protocol,
}

/// An edge's numbers as the console reads them from the JSON's rate strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeNumber {
    /// `http + grpc` requests/s.
    Rps,
    /// `httpPercentErr`, else `grpcPercentErr`, else 0.
    ErrorPct,
    /// `tcp` bytes/s.
    Tcp,
    /// `responseTime` (ms), 0 when absent.
    Rt,
}

/// The flags; each belongs to nodes or to edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// `hasCB`.
    HasCb,
    /// `hasVS`.
    HasVs,
    /// `hasMissingSC`.
    HasMissingSc,
    /// `hasHTTPRoute` (set by the mesh appender).
    HasHttpRoute,
    /// `isAmbient`.
    Ambient,
    /// `isWaypoint`.
    Waypoint,
    /// `isDead`.
    Dead,
    /// `isUnused`.
    Unused,
    /// `isOutside`.
    Outside,
    /// `isRoot`.
    Root,
    /// `isServiceEntry` (non-empty).
    ServiceEntry,
    /// `isInaccessible`.
    Inaccessible,
    /// `isGroup` (a box).
    Box,
    /// An edge's `isMTLS`.
    Mtls,
}

impl Flag {
    pub(crate) const NODE_NAMES: &str = "hasCB, hasVS, hasHTTPRoute, hasMissingSC, ambient, waypoint, dead, unused, outside, root, se, inaccessible, box";
    pub(crate) const EDGE_NAMES: &str = "mtls";

    /// A flag by its lower-cased name (the console's names and their `is…` spellings).
    pub(crate) fn parse(name: &str) -> Option<Flag> {
        Some(match name {
            "hascb" => Flag::HasCb,
            "hasvs" => Flag::HasVs,
            "hasmissingsc" | "sc" => Flag::HasMissingSc,
            "hashttproute" => Flag::HasHttpRoute,
            "ambient" | "isambient" => Flag::Ambient,
            "waypoint" | "iswaypoint" => Flag::Waypoint,
            "dead" | "isdead" => Flag::Dead,
            "unused" | "isunused" => Flag::Unused,
            "outside" | "isoutside" => Flag::Outside,
            "root" | "isroot" => Flag::Root,
            "se" | "isserviceentry" => Flag::ServiceEntry,
            "inaccessible" | "isinaccessible" => Flag::Inaccessible,
            "box" | "isgroup" => Flag::Box,
            "mtls" => Flag::Mtls,
            _ => return None,
        })
    }
    pub(crate) fn kind(self) -> Kind {
        if self == Flag::Mtls { Kind::Edge } else { Kind::Node }
    }
}

/// A compared attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attr {
    Name,
    Ns,
    Node,
    Field(Field),
    Number(EdgeNumber),
}

impl Attr {
    pub(crate) const NODE_NAMES: &str = "name, ns, node, app, version, workload, service";
    pub(crate) const EDGE_NAMES: &str = "rps, %error, tcp, rt, protocol";

    pub(crate) fn parse(name: &str) -> Option<Attr> {
        Some(match name {
            "name" => Attr::Name,
            "ns" | "namespace" => Attr::Ns,
            "node" => Attr::Node,
            "app" => Attr::Field(Field::App),
            "version" => Attr::Field(Field::Version),
            "workload" => Attr::Field(Field::Workload),
            "service" => Attr::Field(Field::Service),
            "rps" => Attr::Number(EdgeNumber::Rps),
            "%error" => Attr::Number(EdgeNumber::ErrorPct),
            "tcp" => Attr::Number(EdgeNumber::Tcp),
            "rt" | "responsetime" => Attr::Number(EdgeNumber::Rt),
            "protocol" => Attr::Field(Field::Protocol),
            _ => return None,
        })
    }
    pub(crate) fn kind(self) -> Kind {
        match self {
            Attr::Number(_) | Attr::Field(Field::Protocol) => Kind::Edge,
            _ => Kind::Node,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl Op {
    pub(crate) fn parse(t: &str) -> Option<Op> {
        Some(match t {
            "=" => Op::Eq,
            "!=" => Op::Ne,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "<" => Op::Lt,
            "<=" => Op::Le,
            _ => return None,
        })
    }
}

/// A node or an edge as the expression sees it: what its graph JSON says.
pub trait Subject {
    /// A text field; `None` when the JSON has no such key.
    fn field(&self, f: Field) -> Option<&str>;
    /// An edge number (nodes answer 0).
    fn number(&self, n: EdgeNumber) -> f64;
    /// A flag.
    fn flag(&self, f: Flag) -> bool;
}

/// A value being compared: JavaScript's `undefined`, a string or a number.
enum Val<'a> {
    Missing,
    Text(&'a str),
    Num(f64),
}

/// The name a node is drawn with (the console's `nodeName`).
fn node_name(s: &impl Subject) -> &str {
    let f = |x| s.field(x).unwrap_or("");
    match s.field(Field::NodeType).unwrap_or("") {
        "service" => f(Field::Service),
        "workload" => f(Field::Workload),
        "app" => f(Field::App),
        t => [Field::Workload, Field::App, Field::Service]
            .into_iter()
            .map(f)
            .find(|v| !v.is_empty())
            .unwrap_or(t),
    }
}

fn value<'a>(s: &'a impl Subject, a: Attr) -> Val<'a> {
    match a {
        Attr::Name => Val::Text(node_name(s)),
        Attr::Ns => s.field(Field::Namespace).map_or(Val::Missing, Val::Text),
        Attr::Node if s.flag(Flag::Box) => Val::Text("box"),
        Attr::Node => s.field(Field::NodeType).map_or(Val::Missing, Val::Text),
        // The console falls back to '' for a missing protocol.
        Attr::Field(Field::Protocol) => Val::Text(s.field(Field::Protocol).unwrap_or("")),
        Attr::Field(f) => s.field(f).map_or(Val::Missing, Val::Text),
        Attr::Number(n) => Val::Num(s.number(n)),
    }
}

/// JavaScript's `Number(text)`: trimmed, empty is 0, decimal with exponent, `Infinity`,
/// `0x`/`0o`/`0b` integers; anything else is NaN.
pub fn js_number(text: &str) -> f64 {
    let t = text.trim();
    if t.is_empty() {
        return 0.0;
    }
    let (sign, body) = match t.as_bytes()[0] {
        b'-' => (-1.0, &t[1..]),
        b'+' => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    if body == "Infinity" {
        return sign * f64::INFINITY;
    }
    for (prefix, radix) in [("0x", 16), ("0X", 16), ("0o", 8), ("0O", 8), ("0b", 2), ("0B", 2)] {
        if let Some(digits) = t.strip_prefix(prefix) {
            // No sign before a radix prefix, and at least one digit.
            return u128::from_str_radix(digits, radix)
                .ok()
                .filter(|_| !digits.starts_with('+'))
                .map_or(f64::NAN, |v| v as f64);
        }
    }
    // Rust also reads `inf` and `nan`; JavaScript reads only digits, a point and an exponent.
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(k) => (&body[..k], Some(&body[k + 1..])),
        None => (body, None),
    };
    let digits_ok = {
        let mut parts = mantissa.splitn(2, '.');
        let int = parts.next().unwrap_or("");
        let frac = parts.next();
        int.bytes().all(|b| b.is_ascii_digit())
            && frac.is_none_or(|f| f.bytes().all(|b| b.is_ascii_digit()))
            && !(int.is_empty() && frac.is_none_or(str::is_empty))
    };
    let exp_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    });
    if !(digits_ok && exp_ok) {
        return f64::NAN;
    }
    body.parse::<f64>().map_or(f64::NAN, |v| sign * v)
}

/// JavaScript's `String(number)` where it matters here: the non-finite spellings.
fn js_string(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity".into() } else { "-Infinity".into() }
    } else {
        format!("{v}")
    }
}

fn compare(v: Val<'_>, op: Op, raw: &str, num: Option<f64>) -> bool {
    match op {
        Op::Eq | Op::Ne => {
            let eq = match (num, &v) {
                (Some(n), Val::Num(x)) => *x == n,
                (_, Val::Missing) => raw.is_empty(),
                (_, Val::Text(t)) => *t == raw,
                (_, Val::Num(x)) => js_string(*x) == raw,
            };
            eq == (op == Op::Eq)
        }
        _ => {
            let Some(n) = num else { return false };
            let x = match v {
                Val::Num(x) => x,
                Val::Text(t) => js_number(t),
                Val::Missing => f64::NAN,
            };
            match op {
                Op::Gt => x > n,
                Op::Ge => x >= n,
                Op::Lt => x < n,
                _ => x <= n,
            }
        }
    }
}

fn eval(a: &Ast, s: &impl Subject) -> bool {
    match a {
        Ast::Or(l, r) => eval(l, s) || eval(r, s),
        Ast::And(l, r) => eval(l, s) && eval(r, s),
        Ast::Not(e) => !eval(e, s),
        Ast::Flag(f) => s.flag(*f),
        Ast::Cmp { attr, op, raw, num } => compare(value(s, *attr), *op, raw, *num),
    }
}

impl Expr {
    /// Whether `s` (of the expression's kind) is selected.
    pub fn matches(&self, s: &impl Subject) -> bool {
        eval(&self.ast, s)
    }
}

#[cfg(test)]
mod tests {
    use super::js_number;

    #[test]
    fn numbers_read_as_javascript_reads_them() {
        for (t, v) in [("", 0.0), (" 12 ", 12.0), ("1e3", 1000.0), ("-2.5", -2.5), ("0x10", 16.0)] {
            assert_eq!(js_number(t), v, "{t:?}");
        }
        assert_eq!(js_number(".5"), 0.5);
        assert_eq!(js_number("5."), 5.0);
        for t in ["inf", "nan", "1e", "abc", "1.2.3", ".", "-0x10", "12abc"] {
            assert!(js_number(t).is_nan(), "{t:?}");
        }
        assert!(js_number("-Infinity").is_infinite());
    }
}
