//! The definitions: every answer's schema.

use super::{J, arr, b, i, mp, n, nullable, o, obj, obj_v, obj_with, r#ref, s};

fn string_described(description: &str) -> J {
    o([("type", "string".into()), ("description", description.into())])
}

fn proxy() -> J {
    obj([("healthy", i()), ("total", i())])
}

fn deployment_status() -> J {
    obj([("name", s()), ("replicas", i()), ("available", i())])
}

fn requests() -> J {
    obj([("requestCount", n()), ("requestErrorCount", n())])
}

/// A sample is [unix seconds (number), value (string)], as in Prometheus's answers.
fn sample() -> J {
    o([
        ("type", "array".into()),
        ("minItems", J::I(2)),
        ("maxItems", J::I(2)),
        (
            "items",
            o([("description", "unix seconds (a number), then the value (a string)".into())]),
        ),
    ])
}

fn series() -> J {
    obj([("matrix", arr(obj([("metric", mp(s())), ("values", arr(sample()))])))])
}

fn validation() -> J {
    let severity = o([
        ("type", "string".into()),
        ("enum", vec![J::from("error"), "warning".into(), "info".into()].into()),
    ]);
    let check = obj_with(
        [
            ("message", s()),
            ("severity", severity),
            ("path", s()),
            (
                "code",
                string_described(
                    "Kiali's KIA code; only on the checks of AuthorizationPolicy, PeerAuthentication, \
                     RequestAuthentication, Sidecar and the Gateway API kinds.",
                ),
            ),
        ],
        &["code"],
        None,
    );
    obj([("name", s()), ("objectType", s()), ("valid", b()), ("checks", arr(check))])
}

fn traffic() -> J {
    obj([("protocol", s()), ("rates", nullable(mp(s())))])
}

/// Appenders outside the bundle may add their own fields to nodes and edges.
fn appender_field() -> J {
    o([("description", "An appender's own field: a boolean, number, string or null.".into())])
}

fn status_info_props() -> Vec<(String, J)> {
    let services = obj_with([("name", s()), ("url", s()), ("version", s())], &["url"], None);
    vec![
        ("status".into(), mp(s())),
        ("externalServices".into(), arr(services)),
        ("warningMessages".into(), arr(s())),
    ]
}

fn health_status() -> J {
    o([
        ("type", "string".into()),
        (
            "enum",
            vec![J::from("healthy"), "degraded".into(), "failure".into(), "na".into()].into(),
        ),
        (
            "description",
            "Computed health: the worst of the request status (under the configured [[health.rate]] \
             rules, Kiali's health_config) and the workload status (none available: failure, fewer \
             than desired: degraded). na: nothing to judge (a service without traffic, a workload \
             scaled to zero)."
                .into(),
        ),
    ])
}

fn tolerance() -> J {
    obj([
        (
            "code",
            string_described(
                "Regex on the response code (gRPC: grpc_response_status; no response: -); X stands for a digit.",
            ),
        ),
        ("direction", string_described("Regex on inbound or outbound.")),
        ("protocol", string_described("Regex on the request protocol (http, grpc).")),
        (
            "degraded",
            n().with(
                "description",
                "Percent of the protocol's requests in that direction at or above which the object is degraded.",
            ),
        ),
        ("failure", n().with("description", "Percent at or above which the object has failed.")),
    ])
}

fn health_config() -> J {
    let rate =
        obj([("namespace", s()), ("kind", s()), ("name", s()), ("tolerance", arr(tolerance()))]);
    obj([("rate", arr(rate))]).with(
        "description",
        "The effective health rules: the configured [[health.rate]] entries in order, then Kiali's \
         default entry. The first entry whose namespace, kind and name match an object applies to it.",
    )
}

fn node_data() -> J {
    let health = r#ref("HealthStatus").with(
        "description",
        "Set by the health appender: the node's status over the graph's own window (app, service and workload nodes).",
    );
    obj_with(
        [
            ("id", s()),
            ("parent", s()),
            ("nodeType", s().with("description", "app, service, workload, unknown; box for a boxBy box")),
            ("cluster", s().with("description", "The node's cluster (source_cluster / destination_cluster; unknown when the telemetry names none); a box's cluster.")),
            ("namespace", s()),
            ("workload", s()),
            ("app", s()),
            ("version", s()),
            ("service", s()),
            ("destServices", mp(b())),
            ("traffic", arr(traffic())),
            ("hasCB", b()),
            ("hasMissingSC", b()),
            ("hasVS", b()),
            ("hasHTTPRoute", b()),
            ("isBox", s().with("description", "A boxBy box: cluster, namespace or app.")),
            ("isDead", b()),
            ("isFind", b()),
            ("isGroup", s()),
            ("isInaccessible", b()),
            ("isMisconfigured", s()),
            ("isOutside", b()),
            ("isRoot", b()),
            ("isServiceEntry", s()),
            ("isUnused", b()),
            ("isAmbient", b()),
            ("isWaypoint", b()),
            ("healthStatus", health),
        ],
        &[
            "parent",
            "workload",
            "app",
            "version",
            "service",
            "destServices",
            "traffic",
            "hasCB",
            "hasMissingSC",
            "hasVS",
            "hasHTTPRoute",
            "isBox",
            "isDead",
            "isFind",
            "isGroup",
            "isInaccessible",
            "isMisconfigured",
            "isOutside",
            "isRoot",
            "isServiceEntry",
            "isUnused",
            "isAmbient",
            "isWaypoint",
            "healthStatus",
        ],
        Some(appender_field()),
    )
}

fn edge_data() -> J {
    obj_with(
        [
            ("id", s()),
            ("source", s()),
            ("target", s()),
            ("traffic", traffic()),
            ("responseTime", s()),
            ("isFind", b()),
            ("isMTLS", b()),
            ("isUnused", b()),
        ],
        &["responseTime", "isFind", "isMTLS", "isUnused"],
        Some(appender_field()),
    )
}

/// The cluster an entry is in: `[cluster] name`, or a `[[cluster.remotes]]` name.
fn cluster() -> J {
    s().with("description", "The cluster it is in ([cluster] name, or a [[cluster.remotes]] name).")
}

fn named() -> J {
    obj([("name", s())])
}

fn workload() -> J {
    let pod = obj([
        ("name", s()),
        ("labels", mp(s())),
        ("createdAt", s()),
        ("meshSidecar", b()),
        ("phase", s()),
    ]);
    let port = obj([("name", s()), ("protocol", s()), ("port", i())]);
    let service = obj([
        ("name", s()),
        ("labels", mp(s())),
        ("createdAt", s()),
        ("resourceVersion", s()),
        ("type", s()),
        ("ip", s()),
        ("ports", arr(port)),
    ]);
    obj([
        ("name", s()),
        ("type", s()),
        ("createdAt", s()),
        ("resourceVersion", s()),
        ("labels", mp(s())),
        ("templateAnnotations", mp(s())),
        ("replicas", i()),
        ("availableReplicas", i()),
        ("unavailableReplicas", i()),
        ("autoscaler", r#ref("Autoscaler")),
        ("pods", arr(pod)),
        ("services", arr(service)),
        ("isAmbient", b()),
        ("isWaypoint", b()),
    ])
}

fn mesh_config_list() -> J {
    let mut props = vec![("namespace".to_string(), named())];
    for k in [
        "destinationRules",
        "gateways",
        "quotaSpecBindings",
        "quotaSpecs",
        "rules",
        "serviceEntries",
        "virtualServices",
        "authorizationPolicies",
        "peerAuthentications",
        "requestAuthentications",
        "sidecars",
        "k8sGateways",
        "k8sHTTPRoutes",
        "k8sGRPCRoutes",
        "k8sReferenceGrants",
    ] {
        props.push((k.to_string(), arr(o([("type", "object".into())]))));
    }
    obj_v(props, &[], None)
}

pub fn defs() -> J {
    let mut config_info = status_info_props();
    config_info.push(("healthConfig".into(), r#ref("HealthConfig")));
    config_info.push((
        "metricsCacheTtl".into(),
        i().with(
            "description",
            "[metrics] cache_ttl in whole seconds (0: the answer cache is off). \
             Answers at a queryTime on its grid (a multiple of it) are cached at their first request.",
        ),
    ));
    config_info.push((
        "graphAppenders".into(),
        arr(s()).with(
            "description",
            "The appenders a graph runs when 'appenders' is absent, in run order: the bundled \
             ones that are loaded (in Kiali's order), then plugins.appenders, then any other \
             loaded one by name.",
        ),
    ));
    let proxy_pair =
        || obj([("inbound", r#ref("ProxyHealth")), ("outbound", r#ref("ProxyHealth"))]);
    let app_proxy = obj([
        ("service", s()),
        ("inbound", r#ref("ProxyHealth")),
        ("outbound", r#ref("ProxyHealth")),
    ]);
    o([
        (
            "ResponseError",
            obj([
                ("code", o([("type", "integer".into()), ("format", "int32".into())])),
                ("message", s()),
            ]),
        ),
        ("StatusInfo", obj_v(status_info_props(), &[], None)),
        ("ConfigInfo", obj_v(config_info, &[], None)),
        ("HealthStatus", health_status()),
        ("HealthConfig", health_config()),
        ("TokenGenerated", obj([("token", s()), ("expired_at", s())])),
        (
            "DashboardToolInfo",
            obj([
                ("url", s()),
                ("serviceDashboardPath", s()),
                ("workloadDashboardPath", s()),
                ("varNamespace", s()),
                ("varService", s()),
                ("varWorkload", s()),
            ]),
        ),
        ("TracingToolInfo", obj([("url", s())])),
        (
            "Namespace",
            obj([
                ("name", s()),
                ("creationTimestamp", s()),
                ("isAmbient", b()),
                (
                    "cluster",
                    s().with(
                        "description",
                        "The cluster the namespace is in ([cluster] name, or a remote's name).",
                    ),
                ),
            ]),
        ),
        ("DeploymentStatus", deployment_status()),
        ("ProxyHealth", proxy()),
        (
            "AppHealth",
            obj([
                ("deploymentStatuses", arr(r#ref("DeploymentStatus"))),
                ("proxy", arr(app_proxy)),
                ("requests", requests()),
                ("status", r#ref("HealthStatus")),
            ]),
        ),
        (
            "ServiceHealth",
            obj([
                ("proxy", proxy_pair()),
                ("requests", requests()),
                ("status", r#ref("HealthStatus")),
            ]),
        ),
        (
            "WorkloadHealth",
            obj([
                ("deploymentStatus", r#ref("DeploymentStatus")),
                ("requests", requests()),
                ("status", r#ref("HealthStatus")),
            ]),
        ),
        // type=app: workloadStatuses; type=workload: workloadStatus; type=service: requests only.
        (
            "NamespaceAppHealth",
            mp(obj_with(
                [
                    (
                        "requests",
                        obj([
                            ("errorRatio", n()),
                            ("inboundErrorRatio", n()),
                            ("outboundErrorRatio", n()),
                        ]),
                    ),
                    ("workloadStatuses", arr(r#ref("DeploymentStatus"))),
                    ("workloadStatus", r#ref("DeploymentStatus")),
                    ("status", r#ref("HealthStatus")),
                ],
                &["workloadStatuses", "workloadStatus"],
                None,
            )),
        ),
        ("NodeData", node_data()),
        ("EdgeData", edge_data()),
        (
            "GraphConfig",
            obj([
                ("timestamp", i()),
                ("duration", i()),
                ("graphType", s()),
                (
                    "elements",
                    obj([
                        ("nodes", arr(obj([("data", r#ref("NodeData"))]))),
                        ("edges", arr(obj([("data", r#ref("EdgeData"))]))),
                    ]),
                ),
            ]),
        ),
        ("MetricSeries", series()),
        (
            "MetricsResponse",
            obj([
                ("metrics", mp(r#ref("MetricSeries"))),
                ("histograms", mp(mp(r#ref("MetricSeries")))),
            ]),
        ),
        (
            "Chart",
            // One of metric and histogram.
            obj_with(
                [
                    ("name", s()),
                    ("unit", s()),
                    ("spans", i()),
                    ("metric", r#ref("MetricSeries")),
                    ("histogram", mp(r#ref("MetricSeries"))),
                ],
                &["metric", "histogram"],
                None,
            ),
        ),
        (
            "Dashboard",
            obj([
                ("title", s()),
                ("aggregations", arr(obj([("displayName", s()), ("label", s())]))),
                ("charts", arr(r#ref("Chart"))),
            ]),
        ),
        (
            "AppList",
            obj([
                ("namespace", named()),
                (
                    "applications",
                    arr(obj([
                        ("name", s()),
                        ("meshSidecar", b()),
                        ("isAmbient", b()),
                        ("cluster", cluster()),
                    ])),
                ),
            ]),
        ),
        (
            "App",
            obj([
                ("name", s()),
                ("namespace", named()),
                (
                    "runtimes",
                    arr(obj([
                        ("name", s()),
                        ("dashboardRefs", arr(obj([("template", s()), ("title", s())]))),
                    ])),
                ),
                ("serviceNames", arr(s())),
                ("workloads", arr(obj([("workloadName", s()), ("meshSidecar", b())]))),
            ]),
        ),
        (
            "WorkloadList",
            obj([
                ("namespace", named()),
                (
                    "workloads",
                    arr(obj([
                        ("name", s()),
                        ("type", s()),
                        ("appLabel", b()),
                        ("versionLabel", b()),
                        ("meshSidecar", b()),
                        ("isAmbient", b()),
                        ("isWaypoint", b()),
                        ("cluster", cluster()),
                    ])),
                ),
            ]),
        ),
        (
            "ServiceList",
            obj([
                ("namespace", named()),
                (
                    "services",
                    arr(obj([
                        ("name", s()),
                        ("meshSidecar", b()),
                        ("isAmbient", b()),
                        ("appLabel", b()),
                        ("workloads", arr(s())),
                        ("cluster", cluster()),
                    ])),
                ),
            ]),
        ),
        (
            "Autoscaler",
            obj([
                ("name", s()),
                ("createdAt", s()),
                ("labels", mp(s())),
                ("lastScaleTime", s()),
                ("observedGeneration", i()),
                ("minReplicas", i()),
                ("maxReplicas", i()),
                ("currentReplicas", i()),
                ("desiredReplicas", i()),
                ("currentCPUUtilizationPercentage", i()),
                ("targetCPUUtilizationPercentage", i()),
            ]),
        ),
        ("Workload", workload()),
        ("MeshConfigList", mesh_config_list()),
        ("MeshValidation", validation()),
        ("TypedMeshValidations", mp(mp(r#ref("MeshValidation")))),
        ("NamespaceValidations", mp(r#ref("TypedMeshValidations"))),
    ])
}
