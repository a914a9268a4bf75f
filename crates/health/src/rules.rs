//! Health rules (`[[health.rate]]`), compatible with Kiali's `health_config.rate`, and their
//! evaluation.
//!
//! Follows Kiali's server-side evaluation: the rule matcher in business/health_config.go,
//! the calculator in business/health_calculator.go, the default rule in config/config.go
//! (`AddHealthDefault`), and the code aggregation in models/health.go. Where meshlens differs
//! on purpose, the code says so.

use regex::Regex;

use crate::pattern::Pattern;
use serde::{Deserialize, Serialize};

use crate::status::{ByCode, RequestCodes, Status};

/// One `[[health.rate]]` entry: which objects it applies to, and their tolerances.
/// Unset patterns match anything (Kiali's empty pattern is `.*`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RateRule {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub tolerance: Vec<ToleranceRule>,
}

/// One `[[health.rate.tolerance]]`: the share of requests with a matching code that makes
/// an object degraded or failed, in percent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToleranceRule {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    pub degraded: f64,
    pub failure: f64,
}

fn tol(code: &str, protocol: &str, degraded: f64, failure: f64) -> ToleranceRule {
    ToleranceRule {
        code: Some(code.into()),
        direction: Some(".*".into()),
        protocol: Some(protocol.into()),
        degraded,
        failure,
    }
}

/// Kiali's default rule (config/config.go, `AddHealthDefault`), appended after the
/// configured ones: http 5xx degraded above 0 and failure at 10 %, http 4xx degraded at
/// 10 % and failure at 20 %, grpc 1–16 degraded above 0 and failure at 10 %, and no
/// response at all (`-`) failure at 10 %.
pub fn default_rule() -> RateRule {
    RateRule {
        namespace: None,
        kind: None,
        name: None,
        tolerance: vec![
            tol("5XX", "http", 0.0, 10.0),
            tol("4XX", "http", 10.0, 20.0),
            tol("^[1-9]$|^1[0-6]$", "grpc", 0.0, 10.0),
            tol("^-$", "http|grpc", 0.0, 10.0),
        ],
    }
}

/// A pattern matched against the whole value. Kiali (health_config.go, `compilePattern`)
/// adds `^` and `$` where missing, which leaves `a|b` matching any value that starts with
/// `a`; meshlens wraps the whole pattern instead, so every regex matches the whole value as
/// the issue asks. Patterns Kiali anchors itself (such as its default grpc code) match the
/// same values either way.
fn whole(pattern: Option<&str>, code: bool) -> Result<Pattern, regex::Error> {
    let p = pattern.filter(|p| !p.is_empty()).unwrap_or(".*");
    // Kiali's `compileCodePattern`: `X` or `x` stands for a digit (`5XX`).
    let text = if code { p.replace(['X', 'x'], "\\d") } else { p.to_string() };
    Ok(Pattern::new(p, code, Regex::new(&format!("^(?:{text})$"))?))
}

#[derive(Clone, Debug)]
struct Tolerance {
    code: Pattern,
    direction: Pattern,
    protocol: Pattern,
    degraded: f64,
    failure: f64,
}

#[derive(Clone, Debug)]
struct Rate {
    namespace: Pattern,
    kind: Pattern,
    name: Pattern,
    tolerance: Vec<Tolerance>,
}

/// One problem of the configured rules, naming its key (`health.rate[0].tolerance[1].code`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleProblem {
    pub key: String,
    pub reason: String,
}

/// The compiled rules: the configured ones in order, then Kiali's default.
#[derive(Clone, Debug)]
pub struct Rules {
    configured: Vec<RateRule>,
    compiled: Vec<Rate>,
}

impl Default for Rules {
    /// The default rule alone.
    fn default() -> Self {
        Rules::compile(&[]).unwrap_or_else(|_| unreachable!("the default rule compiles"))
    }
}

/// Compiles one pattern, or records why it does not compile under `key`.
fn pattern(
    p: &Option<String>,
    code: bool,
    key: String,
    problems: &mut Vec<RuleProblem>,
) -> Option<Pattern> {
    whole(p.as_deref(), code)
        .map_err(|e| {
            // regex's message spans lines (pattern, caret, reason); the reason is the last.
            let text = e.to_string();
            let reason =
                text.lines().last().unwrap_or_default().trim().trim_start_matches("error: ");
            problems
                .push(RuleProblem { key, reason: format!("invalid regular expression: {reason}") });
        })
        .ok()
}

fn compile_rate(i: usize, r: &RateRule, problems: &mut Vec<RuleProblem>) -> Option<Rate> {
    let before = problems.len();
    let prefix = format!("health.rate[{i}]");
    let namespace = pattern(&r.namespace, false, format!("{prefix}.namespace"), problems);
    let kind = pattern(&r.kind, false, format!("{prefix}.kind"), problems);
    let name = pattern(&r.name, false, format!("{prefix}.name"), problems);
    let mut tolerance = Vec::with_capacity(r.tolerance.len());
    for (j, t) in r.tolerance.iter().enumerate() {
        let key = |f: &str| format!("{prefix}.tolerance[{j}].{f}");
        let code = pattern(&t.code, true, key("code"), problems);
        let direction = pattern(&t.direction, false, key("direction"), problems);
        let protocol = pattern(&t.protocol, false, key("protocol"), problems);
        for (f, v) in [("degraded", t.degraded), ("failure", t.failure)] {
            if !v.is_finite() || v < 0.0 {
                problems.push(RuleProblem { key: key(f), reason: "must be 0 or more".into() });
            }
        }
        if t.degraded > t.failure {
            problems.push(RuleProblem {
                key: key("degraded"),
                reason: format!("must not be above failure ({} > {})", t.degraded, t.failure),
            });
        }
        if let (Some(code), Some(direction), Some(protocol)) = (code, direction, protocol) {
            tolerance.push(Tolerance {
                code,
                direction,
                protocol,
                degraded: t.degraded,
                failure: t.failure,
            });
        }
    }
    match (namespace, kind, name) {
        (Some(namespace), Some(kind), Some(name)) if problems.len() == before => {
            Some(Rate { namespace, kind, name, tolerance })
        }
        _ => None,
    }
}

impl Rules {
    /// Compiles the configured rules and appends the default; every problem is reported.
    pub fn compile(configured: &[RateRule]) -> Result<Rules, Vec<RuleProblem>> {
        let mut problems = Vec::new();
        let mut compiled = Vec::with_capacity(configured.len() + 1);
        for (i, r) in configured.iter().enumerate() {
            if let Some(c) = compile_rate(i, r, &mut problems) {
                compiled.push(c);
            }
        }
        let mut none = Vec::new();
        compiled.extend(compile_rate(0, &default_rule(), &mut none));
        if problems.is_empty() {
            Ok(Rules { configured: configured.to_vec(), compiled })
        } else {
            Err(problems)
        }
    }

    /// The effective rules as `/api/config` shows them: the configured entries in order,
    /// then the default, every unset pattern written out as `.*`.
    pub fn effective(&self) -> Vec<RateRule> {
        let all = |p: &Option<String>| {
            Some(p.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| ".*".into()))
        };
        self.configured
            .iter()
            .cloned()
            .chain([default_rule()])
            .map(|r| RateRule {
                namespace: all(&r.namespace),
                kind: all(&r.kind),
                name: all(&r.name),
                tolerance: r
                    .tolerance
                    .iter()
                    .map(|t| ToleranceRule {
                        code: all(&t.code),
                        direction: all(&t.direction),
                        protocol: all(&t.protocol),
                        degraded: t.degraded,
                        failure: t.failure,
                    })
                    .collect(),
            })
            .collect()
    }

    /// The first rule whose namespace, kind and name all match (health_config.go,
    /// `getCompiledTolerancesForEntity`); the default matches everything.
    fn tolerances(&self, namespace: &str, kind: &str, name: &str) -> &[Tolerance] {
        self.compiled
            .iter()
            .find(|r| {
                r.namespace.is_match(namespace) && r.name.is_match(name) && r.kind.is_match(kind)
            })
            .or(self.compiled.last())
            .map_or(&[], |r| &r.tolerance)
    }

    /// The request status of an object (`kind` is `app`, `service` or `workload`), Kiali's
    /// `calculateRequestStatus`: each direction on its own, each tolerance matching the
    /// direction and protocol judged on its codes' share of that protocol's requests, the
    /// worst wins; traffic no tolerance marks is healthy, no traffic is `na`.
    pub fn request_status(
        &self,
        namespace: &str,
        kind: &str,
        name: &str,
        rc: &RequestCodes,
    ) -> Status {
        let tolerances = self.tolerances(namespace, kind, name);
        if tolerances.is_empty() {
            return simple_status(rc);
        }
        let (in_status, in_traffic) = direction_status(&rc.inbound, tolerances, "inbound");
        let (out_status, out_traffic) = direction_status(&rc.outbound, tolerances, "outbound");
        let worst = in_status.worst(out_status);
        if worst == Status::Na && (in_traffic || out_traffic) { Status::Healthy } else { worst }
    }
}

/// Kiali's `processDirectionalTraffic`: the worst status of the tolerances that match this
/// direction and a protocol with requests, and whether any did.
fn direction_status(by_code: &ByCode, tolerances: &[Tolerance], direction: &str) -> (Status, bool) {
    let mut worst = Status::Na;
    let mut traffic = false;
    for (protocol, codes) in by_code.by_protocol() {
        for t in tolerances {
            if !t.direction.is_match(direction) || !t.protocol.is_match(protocol) {
                continue;
            }
            // Kiali's `aggregateMatchingCodes`: the matching codes added together, over all
            // requests of the protocol in this direction.
            let (mut errors, mut total) = (0.0, 0.0);
            for (_, code, v) in codes {
                total += v;
                if t.code.is_match(code) {
                    errors += v;
                }
            }
            if total <= 0.0 {
                continue;
            }
            traffic = true;
            worst = worst.worst(thresholds(100.0 * errors / total, t.degraded, t.failure));
        }
    }
    (worst, traffic)
}

/// Kiali's `applyThresholds`: 0 % is healthy; at or above `failure` is failure, at or above
/// `degraded` is degraded.
pub fn thresholds(percent: f64, degraded: f64, failure: f64) -> Status {
    if percent <= 0.0 {
        Status::Healthy
    } else if percent >= failure {
        Status::Failure
    } else if percent >= degraded {
        Status::Degraded
    } else {
        Status::Healthy
    }
}

/// Kiali's `calculateSimpleRequestStatus`, for a matching rule without tolerances: 4xx and
/// 5xx of both directions together, failure at 10 %, degraded at 0.1 %.
fn simple_status(rc: &RequestCodes) -> Status {
    let (mut errors, mut total) = (0.0, 0.0);
    for (_, code, v) in rc.inbound.iter().chain(rc.outbound.iter()) {
        total += v;
        if code.starts_with(['4', '5']) {
            errors += v;
        }
    }
    if total <= 0.0 {
        return Status::Na;
    }
    let percent = 100.0 * errors / total;
    if percent >= 10.0 {
        Status::Failure
    } else if percent >= 0.1 {
        Status::Degraded
    } else {
        Status::Healthy
    }
}
