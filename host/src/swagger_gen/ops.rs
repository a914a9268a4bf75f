//! The operations: paths, answers and error codes (their parameters are in `params`).

use super::{
    J, arr, o, obj,
    params::{
        app, base_metrics, direction, graph_params, inject, ns, path_param, q,
        rate_interval_health, service_direction, svc, wl,
    },
    r#ref, s,
};

fn error_description(code: u16) -> &'static str {
    match code {
        400 => "BadRequestError: the client request is incorrect",
        401 => "Unauthorized: missing or invalid credentials",
        403 => {
            "Forbidden: strategies token and header: the caller may not see the namespace (or one of them); \
             the same answer whether it exists or not. With clusterName, that cluster's API server decides \
             (and a cluster whose API server does not accept the caller's token is a 403 too)"
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
            "Readiness: listening, the home cluster's cache synced (remote clusters are not waited for), not shutting down.",
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
            "Namespaces of every cluster the service reads (home first, then the remotes; a remote that cannot be \
             read now is left out), only those the caller may see there; each entry names its cluster.",
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
                    (
                        "description",
                        "Comma-separated list of namespaces, each covering that namespace in every cluster. \
                         Each must be visible to the caller in at least one cluster (else 403); nodes of a \
                         namespace the caller may not see in the node's own cluster keep only their names \
                         (isInaccessible)."
                            .into(),
                    ),
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
