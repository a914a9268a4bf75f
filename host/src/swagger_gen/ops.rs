//! The operations: paths, parameters, answers and error codes.

use super::{J, arr, o, obj, r#ref, s};

pub fn path_param(name: &str, desc: &str) -> J {
    o([
        ("name", name.into()),
        ("in", "path".into()),
        ("required", true.into()),
        ("type", "string".into()),
        ("description", desc.into()),
    ])
}

/// A query parameter (Python's `q(name, desc, default, enum, typ, array, pattern)`);
/// the key order is fixed when it becomes JSON, whatever order the setters ran in.
pub struct Q {
    name: &'static str,
    desc: &'static str,
    default: Option<&'static str>,
    en: Vec<&'static str>,
    typ: &'static str,
    array: bool,
    pattern: Option<&'static str>,
}

pub fn q(name: &'static str, desc: &'static str) -> Q {
    Q { name, desc, default: None, en: Vec::new(), typ: "string", array: false, pattern: None }
}

impl Q {
    pub fn default(mut self, v: &'static str) -> Q {
        self.default = Some(v);
        self
    }
    pub fn en(mut self, values: &[&'static str]) -> Q {
        self.en = values.to_vec();
        self
    }
    pub fn typ(mut self, t: &'static str) -> Q {
        self.typ = t;
        self
    }
    pub fn array(mut self) -> Q {
        self.array = true;
        self
    }
    pub fn pattern(mut self, p: &'static str) -> Q {
        self.pattern = Some(p);
        self
    }
}

impl From<Q> for J {
    fn from(p: Q) -> J {
        let mut out = o([
            ("name", p.name.into()),
            ("in", "query".into()),
            ("required", false.into()),
            ("description", p.desc.into()),
        ]);
        if p.array {
            out = out
                .with("type", "array")
                .with("items", o([("type", p.typ.into())]))
                .with("collectionFormat", "multi");
        } else {
            out = out.with("type", p.typ);
        }
        if let Some(d) = p.default {
            out = out.with("default", d);
        }
        if !p.en.is_empty() {
            out = out.with("enum", p.en.into_iter().map(J::from).collect::<Vec<_>>());
        }
        if let Some(pat) = p.pattern {
            out = out.with("pattern", pat);
        }
        out
    }
}

fn ns() -> J {
    path_param("namespace", "The namespace name.")
}
fn app() -> J {
    path_param("app", "The app name (value of the app label).")
}
fn svc() -> J {
    path_param("service", "The service name.")
}
fn wl() -> J {
    path_param("workload", "The workload name.")
}

fn error_description(code: u16) -> &'static str {
    match code {
        400 => "BadRequestError: the client request is incorrect",
        401 => "Unauthorized: missing or invalid credentials",
        403 => {
            "Forbidden: strategies token and header: the caller may not see the namespace (or one of them); \
             the same answer whether it exists or not"
        }
        404 => "NotFoundError: the server could not find what was requested",
        406 => "NotAcceptable: the request cannot be accepted",
        429 => {
            "TooManyRequests: too many failed logins from this client or in total, too many password checks at once, \
             or too many unseen tokens to review; see Retry-After"
        }
        500 => "Internal: something has gone wrong on the server",
        _ => "Unavailable: a service this operation needs is unavailable",
    }
}

pub fn responses(ok_schema: J, codes: &[u16], extra: Option<J>, op_id: &str) -> J {
    let mut r = o([("200", o([("description", "OK".into()), ("schema", ok_schema)]))]);
    for &c in codes {
        let mut desc = error_description(c);
        if op_id == "GetToken" && c == 400 {
            desc = "BadRequest: strategy anonymous issues no tokens";
        }
        r = r.with(
            &c.to_string(),
            o([("description", desc.into()), ("schema", r#ref("ResponseError"))]),
        );
    }
    r = r.with(
        "default",
        o([("description", "GenericError".into()), ("schema", r#ref("ResponseError"))]),
    );
    match extra {
        Some(extra) => r.merge(extra),
        None => r,
    }
}

fn rate_interval_health() -> J {
    q("rateInterval", "Rate interval (a Prometheus duration) for the request rates.")
        .default("10m")
        .into()
}

fn graph_params() -> Vec<J> {
    vec![
        q("appenders", "Comma-separated list of appenders to run; absent runs all, present and empty runs none.")
            .into(),
        q("duration", "Query time-range duration (number plus unit, e.g. 10m).").default("10m").into(),
        q("graphType", "Graph type.")
            .default("workload")
            .en(&["app", "service", "versionedApp", "workload"])
            .into(),
        q("groupBy", "Grouping of app boxes.").default("none").en(&["app", "none", "version"]).into(),
        q("includeMesh", "Include the mesh's infrastructure namespace services.")
            .default("false")
            .typ("boolean")
            .into(),
        q("queryTime", "Unix time in seconds; the range is [queryTime - duration .. queryTime]. Default now.")
            .typ("integer")
            .into(),
        q("responseTimeQuantile", "Quantile of the edge response time.").default("0.95").typ("number").into(),
        q("format", "Output format.").default("json").en(&["json", "dot"]).into(),
        q(
            "ambientTraffic",
            "Ambient telemetry to read: waypoint requests plus ztunnel TCP (total), ztunnel TCP only, \
             waypoint requests only, or neither. Sidecar telemetry is read whatever the value.",
        )
        .default("total")
        .en(&["total", "ztunnel", "waypoint", "none"])
        .into(),
        q("waypoints", "Show waypoint proxies as nodes, with the TCP hops through them.")
            .default("false")
            .typ("boolean")
            .into(),
        // Scoping (issue #34): applied after the appenders, in the order hide, focus, find.
        q(
            "hide",
            "A find/hide expression (README, Find and hide): matching nodes are removed with their edges \
             (a matching box with its members), matching edges are removed. Applied first. Empty: no filter.",
        )
        .into(),
        q(
            "focus",
            "A node or box id of the graph left by hide: only the nodes within hops edges of it, in either \
             direction, are kept, with the edges between them and their boxes.",
        )
        .into(),
        q("hops", "How many edges from focus are kept (0-10).").default("1").typ("integer").into(),
        q(
            "find",
            "A find/hide expression: matching nodes or edges among those kept carry isFind true. Applied last. \
             Empty: no filter.",
        )
        .into(),
    ]
}

fn inject() -> J {
    q("injectServiceNodes", "Inject service nodes between source and destination nodes.")
        .default("false")
        .typ("boolean")
        .into()
}

fn base_metrics() -> Vec<J> {
    vec![
        q("rateInterval", "Interval for rate and histogram calculation.").default("1m").into(),
        q("rateFunc", "Rate function.").default("rate").en(&["rate", "irate"]).into(),
        q("queryTime", "Unix time in seconds of the end of the range. Default now.")
            .typ("integer")
            .into(),
        q("duration", "Query period in seconds.").default("1800").typ("integer").into(),
        q("step", "Step between datapoints in seconds.").default("15").typ("integer").into(),
        q("quantiles[]", "Quantiles to fetch (fractions between 0 and 1); none when empty.")
            .typ("string")
            .array()
            .into(),
        q("avg", "Fetch the histogram average.").default("true").typ("boolean").into(),
        q("byLabels[]", "Labels for grouping metrics.").typ("string").array().into(),
    ]
}

fn direction() -> Vec<J> {
    vec![
        q("direction", "Traffic direction.")
            .default("outbound")
            .en(&["inbound", "outbound"])
            .into(),
        q("requestProtocol", "Request protocol filter (e.g. http, grpc); default all.").into(),
        q("reporter", "Telemetry reporter.")
            .default("source")
            .en(&["source", "destination"])
            .into(),
    ]
}

fn service_direction() -> Vec<J> {
    let mut v: Vec<J> = vec![
        q("direction", "Traffic direction: a service's dashboard is inbound only.")
            .default("inbound")
            .en(&["inbound"])
            .into(),
    ];
    v.extend(direction().into_iter().skip(1));
    v
}

/// One GET operation (Python's OPS tuple).
pub struct Op {
    pub path: &'static str,
    pub id: &'static str,
    pub tag: &'static str,
    pub summary: String,
    pub params: Vec<J>,
    pub schema: J,
    pub codes: Vec<u16>,
    pub extra: Option<J>,
}

#[allow(clippy::too_many_arguments)]
fn op(
    path: &'static str,
    id: &'static str,
    tag: &'static str,
    summary: &str,
    params: Vec<J>,
    schema: J,
    codes: &[u16],
    extra: Option<J>,
) -> Op {
    Op { path, id, tag, summary: summary.into(), params, schema, codes: codes.to_vec(), extra }
}

/// Concatenates parameter lists (Python's `[NS, APP] + GRAPH_PARAMS + [INJECT]`).
fn cat(parts: Vec<Vec<J>>) -> Vec<J> {
    parts.into_iter().flatten().collect()
}

pub fn ops() -> Vec<Op> {
    let status_obj = || obj([("status", s())]);
    let graph = || r#ref("GraphConfig");
    vec![
        op("/", "Root", "status", "Service status.", vec![], r#ref("StatusInfo"), &[404, 500], None),
        op("/status", "getStatus", "status", "Service status.", vec![], r#ref("StatusInfo"), &[404, 500], None),
        op(
            "/healthz",
            "healthz",
            "status",
            "Liveness: the process answers (touches neither backend nor cluster).",
            vec![],
            status_obj(),
            &[],
            None,
        ),
        op(
            "/ready",
            "ready",
            "status",
            "Readiness: cluster cache synced, metrics backend answered recently, not shutting down.",
            vec![],
            status_obj(),
            &[503],
            None,
        ),
        op(
            "/token",
            "GetToken",
            "auth",
            "Issue a session token. Strategy login: HTTP Basic user and password. Strategy token: the caller's \
             Kubernetes token as 'Authorization: Bearer <token>' (checked by a TokenReview); the session token stands \
             for that Kubernetes token (reviewed again after auth.review_cache_ttl, never valid past its expiry), and \
             namespaces follow that user's RBAC. Strategy header: the Kubernetes token in the configured \
             auth.header_name, set by the authenticating proxy. Strategy anonymous issues no tokens (400). Answers \
             carry 'Cache-Control: no-store'.",
            vec![],
            r#ref("TokenGenerated"),
            &[401, 404, 429, 500, 503],
            Some(o([(
                "400",
                o([
                    ("description", "BadRequest: strategy anonymous issues no tokens".into()),
                    ("schema", r#ref("ResponseError")),
                ]),
            )])),
        ),
        op(
            "/config",
            "getConfig",
            "status",
            "Configuration of the service: StatusInfo plus the effective health rules (healthConfig) and the graph's appenders (graphAppenders).",
            vec![],
            r#ref("ConfigInfo"),
            &[401, 500],
            None,
        ),
        op(
            "/grafana",
            "dashboardInfo",
            "external",
            "URL and descriptors of the external dashboard tool.",
            vec![],
            r#ref("DashboardToolInfo"),
            &[401, 500, 503],
            Some(o([("204", o([("description", "Display link disabled (empty body)".into())]))])),
        ),
        op(
            "/jaeger",
            "tracingInfo",
            "external",
            "URL of the external tracing tool.",
            vec![],
            r#ref("TracingToolInfo"),
            &[401, 404, 406],
            None,
        ),
        op(
            "/swagger.json",
            "swagger",
            "status",
            "This document.",
            vec![],
            o([("type", "object".into())]),
            &[],
            None,
        ),
        op(
            "/namespaces",
            "namespaceList",
            "namespaces",
            "Namespaces visible to the service.",
            vec![],
            arr(r#ref("Namespace")),
            &[401, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/apps",
            "appList",
            "apps",
            "Apps of a namespace.",
            vec![ns()],
            r#ref("AppList"),
            &[401, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/apps/{app}",
            "appDetails",
            "apps",
            "Details of an app.",
            vec![ns(), app()],
            r#ref("App"),
            &[401, 404, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/workloads",
            "workloadList",
            "workloads",
            "Workloads of a namespace.",
            vec![ns()],
            r#ref("WorkloadList"),
            &[401, 404, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/services",
            "serviceList",
            "services",
            "Services of a namespace.",
            vec![ns()],
            r#ref("ServiceList"),
            &[401, 404, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/workloads/{workload}",
            "workloadDetails",
            "workloads",
            "Workload details.",
            vec![ns(), wl()],
            r#ref("Workload"),
            &[401, 404, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/mesh",
            "meshConfigList",
            "config",
            "Mesh configuration lists of a namespace.",
            vec![
                ns(),
                q(
                    "objects",
                    "Comma-separated plural kind names to fill (default all): destinationrules, gateways, \
                     quotaspecbindings, quotaspecs, rules, serviceentries, virtualservices, authorizationpolicies, \
                     peerauthentications, requestauthentications, sidecars, k8sgateways, k8shttproutes, k8sgrpcroutes, \
                     k8sreferencegrants.",
                )
                .into(),
            ],
            r#ref("MeshConfigList"),
            &[400, 401, 404, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/mesh/{object_type}/{object}/mesh_validations",
            "objectValidations",
            "validations",
            "Validations of one mesh object.",
            vec![
                ns(),
                path_param("object_type", "Type of the mesh object (plural, as in meshConfigList)."),
                path_param("object", "Name of the mesh object."),
            ],
            r#ref("TypedMeshValidations"),
            &[400, 401, 404, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/mesh_validations",
            "namespaceValidations",
            "validations",
            "Validations of a namespace.",
            vec![ns()],
            r#ref("NamespaceValidations"),
            &[401, 404, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/services/{service}/mesh_validations",
            "serviceValidations",
            "validations",
            "Validations of the mesh objects that refer to a service.",
            vec![ns(), svc()],
            r#ref("TypedMeshValidations"),
            &[401, 404, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/apps/{app}/health",
            "appHealth",
            "health",
            "Health of one app.",
            vec![ns(), app(), rate_interval_health()],
            r#ref("AppHealth"),
            &[400, 401, 404, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/services/{service}/health",
            "serviceHealth",
            "health",
            "Health of one service.",
            vec![ns(), svc(), rate_interval_health()],
            r#ref("ServiceHealth"),
            &[400, 401, 404, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/workloads/{workload}/health",
            "workloadHealth",
            "health",
            "Health of one workload.",
            vec![ns(), wl(), rate_interval_health()],
            r#ref("WorkloadHealth"),
            &[400, 401, 404, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/health",
            "namespaceHealth",
            "health",
            "Health of all objects of a namespace.",
            vec![
                ns(),
                rate_interval_health(),
                q("type", "Type of the objects.")
                    .default("app")
                    .en(&["app", "service", "workload"])
                    .pattern("^(app|service|workload)$")
                    .into(),
            ],
            r#ref("NamespaceAppHealth"),
            &[400, 401, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/metrics",
            "namespaceMetrics",
            "metrics",
            "Metrics of a namespace.",
            cat(vec![
                vec![
                    ns(),
                    q("filters[]", "Metric names to fetch; empty fetches all.").typ("string").array().into(),
                ],
                direction(),
                base_metrics(),
            ]),
            r#ref("MetricsResponse"),
            &[400, 401, 500, 503],
            None,
        ),
        op(
            "/namespaces/graph",
            "graphNamespaces",
            "graph",
            "Traffic graph of one or more namespaces.",
            cat(vec![
                vec![o([
                    ("name", "namespaces".into()),
                    ("in", "query".into()),
                    ("required", true.into()),
                    ("type", "string".into()),
                    ("description", "Comma-separated list of namespaces.".into()),
                ])],
                graph_params(),
                vec![inject()],
            ]),
            graph(),
            &[400, 401, 500],
            None,
        ),
        op(
            "/namespaces/{namespace}/applications/{app}/graph",
            "graphApp",
            "graph",
            "Detail graph of an app.",
            cat(vec![vec![ns(), app()], graph_params(), vec![inject()]]),
            graph(),
            &[400, 401, 500],
            None,
        ),
        op(
            "/namespaces/{namespace}/applications/{app}/versions/{version}/graph",
            "graphAppVersion",
            "graph",
            "Detail graph of a versioned app.",
            cat(vec![
                vec![ns(), app(), path_param("version", "The app version label value.")],
                graph_params(),
                vec![inject()],
            ]),
            graph(),
            &[400, 401, 500],
            None,
        ),
        op(
            "/namespaces/{namespace}/services/{service}/graph",
            "graphService",
            "graph",
            "Detail graph of a service.",
            cat(vec![vec![ns(), svc()], graph_params()]),
            graph(),
            &[400, 401, 500],
            None,
        ),
        op(
            "/namespaces/{namespace}/workloads/{workload}/graph",
            "graphWorkload",
            "graph",
            "Detail graph of a workload.",
            cat(vec![vec![ns(), wl()], graph_params(), vec![inject()]]),
            graph(),
            &[400, 401, 500],
            None,
        ),
        op(
            "/namespaces/{namespace}/apps/{app}/customdashboard/{template}",
            "customDashboard",
            "dashboards",
            "Dashboard built from a named template.",
            cat(vec![
                vec![ns(), app(), path_param("template", "The dashboard template name.")],
                base_metrics(),
                vec![q("version", "Filter metrics by version.").into()],
            ]),
            r#ref("Dashboard"),
            &[400, 401, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/apps/{app}/dashboard",
            "appDashboard",
            "dashboards",
            "Dashboard of a single app.",
            cat(vec![vec![ns(), app()], direction(), base_metrics()]),
            r#ref("Dashboard"),
            &[400, 401, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/workloads/{workload}/dashboard",
            "workloadDashboard",
            "dashboards",
            "Dashboard of a single workload (appDashboard's charts, selected by {side}_workload).",
            cat(vec![vec![ns(), wl()], direction(), base_metrics()]),
            r#ref("Dashboard"),
            &[400, 401, 500, 503],
            None,
        ),
        op(
            "/namespaces/{namespace}/services/{service}/dashboard",
            "serviceDashboard",
            "dashboards",
            "Inbound dashboard of a single service (selected by destination_service_name and _namespace); \
             direction=outbound is a 400.",
            cat(vec![vec![ns(), svc()], service_direction(), base_metrics()]),
            r#ref("Dashboard"),
            &[400, 401, 500, 503],
            None,
        ),
    ]
}
