#!/usr/bin/env python3
"""Writes host/swagger.json: the Swagger 2.0 document of the whole meshlens API.

The document is kept in the repo and served at /api/swagger.json; a host test checks that
every routed operation is documented and every documented path is routed, and the
integration tests validate every JSON answer they receive against the schema of its
operation and status (tests/src/api_schema.rs). Schemas are closed (obj()), so a response
field added or removed on one side only fails the tests. Edit this file, then run it:
python3 scripts/gen_swagger.py
"""
import json
import os

def ref(name):
    return {"$ref": f"#/definitions/{name}"}

def arr(items):
    return {"type": "array", "items": items}

def mp(values):
    return {"type": "object", "additionalProperties": values}

S = {"type": "string"}
I = {"type": "integer", "format": "int64"}
N = {"type": "number", "format": "double"}
B = {"type": "boolean"}

def obj(props, optional=(), open_fields=None):
    """A closed object: every property not in `optional` is always present, and no other
    property may appear (the test suite validates every answer it gets against this
    document, so a field added on either side alone fails a test). `open_fields` is the
    schema of the extra properties an object admits (appenders' own graph fields)."""
    o = {"type": "object", "properties": props}
    required = [k for k in props if k not in optional]
    if required:
        o["required"] = required
    o["additionalProperties"] = open_fields if open_fields is not None else False
    return o

def nullable(schema):
    return {**schema, "x-nullable": True}

def path_param(name, desc):
    return {"name": name, "in": "path", "required": True, "type": "string", "description": desc}

def q(name, desc, default=None, enum=None, typ="string", array=False, pattern=None):
    p = {"name": name, "in": "query", "required": False, "description": desc}
    if array:
        p.update({"type": "array", "items": {"type": typ}, "collectionFormat": "multi"})
    else:
        p["type"] = typ
    if default is not None:
        p["default"] = default
    if enum:
        p["enum"] = enum
    if pattern:
        p["pattern"] = pattern
    return p

NS = path_param("namespace", "The namespace name.")
APP = path_param("app", "The app name (value of the app label).")
SVC = path_param("service", "The service name.")
WL = path_param("workload", "The workload name.")

ERRORS = {
    400: "BadRequestError: the client request is incorrect",
    401: "Unauthorized: missing or invalid credentials",
    403: "Forbidden: strategies token and header: the caller may not see the namespace (or one of them); "
         "the same answer whether it exists or not",
    404: "NotFoundError: the server could not find what was requested",
    406: "NotAcceptable: the request cannot be accepted",
    429: "TooManyRequests: too many failed logins from this client or in total, too many password checks at once, "
         "or too many unseen tokens to review; see Retry-After",
    500: "Internal: something has gone wrong on the server",
    503: "Unavailable: a service this operation needs is unavailable",
}

def responses(ok_schema, codes, ok_desc="OK", extra=None, op_id=None):
    r = {"200": {"description": ok_desc, "schema": ok_schema}}
    for c in codes:
        r[str(c)] = {"description": ERRORS[c], "schema": ref("ResponseError")}
        if op_id == "GetToken" and c == 400:
            r["400"]["description"] = "BadRequest: strategy anonymous issues no tokens"
    r["default"] = {"description": "GenericError", "schema": ref("ResponseError")}
    if extra:
        r.update(extra)
    return r

RATE_INTERVAL_HEALTH = q("rateInterval", "Rate interval (a Prometheus duration) for the request rates.", "10m")

GRAPH_PARAMS = [
    q("appenders", "Comma-separated list of appenders to run; absent runs all, present and empty runs none.",
      enum=None),
    q("duration", "Query time-range duration (number plus unit, e.g. 10m).", "10m"),
    q("graphType", "Graph type.", "workload", ["app", "service", "versionedApp", "workload"]),
    q("groupBy", "Grouping of app boxes.", "none", ["app", "none", "version"]),
    q("includeMesh", "Include the mesh's infrastructure namespace services.", "false", typ="boolean"),
    q("queryTime", "Unix time in seconds; the range is [queryTime - duration .. queryTime]. Default now.", typ="integer"),
    q("responseTimeQuantile", "Quantile of the edge response time.", "0.95", typ="number"),
    q("format", "Output format.", "json", ["json", "dot"]),
    q("ambientTraffic", "Ambient telemetry to read: waypoint requests plus ztunnel TCP (total), ztunnel TCP only, "
      "waypoint requests only, or neither. Sidecar telemetry is read whatever the value.", "total",
      ["total", "ztunnel", "waypoint", "none"]),
    q("waypoints", "Show waypoint proxies as nodes, with the TCP hops through them.", "false", typ="boolean"),
    # Scoping (issue #34): applied after the appenders, in the order hide, focus, find.
    q("hide", "A find/hide expression (README, Find and hide): matching nodes are removed with their edges "
      "(a matching box with its members), matching edges are removed. Applied first. Empty: no filter."),
    q("focus", "A node or box id of the graph left by hide: only the nodes within hops edges of it, in either "
      "direction, are kept, with the edges between them and their boxes."),
    q("hops", "How many edges from focus are kept (0-10).", "1", typ="integer"),
    q("find", "A find/hide expression: matching nodes or edges among those kept carry isFind true. Applied last. "
      "Empty: no filter."),
]
INJECT = q("injectServiceNodes", "Inject service nodes between source and destination nodes.", "false", typ="boolean")

BASE_METRICS = [
    q("rateInterval", "Interval for rate and histogram calculation.", "1m"),
    q("rateFunc", "Rate function.", "rate", ["rate", "irate"]),
    q("queryTime", "Unix time in seconds of the end of the range. Default now.", typ="integer"),
    q("duration", "Query period in seconds.", "1800", typ="integer"),
    q("step", "Step between datapoints in seconds.", "15", typ="integer"),
    q("quantiles[]", "Quantiles to fetch (fractions between 0 and 1); none when empty.", typ="string", array=True),
    q("avg", "Fetch the histogram average.", "true", typ="boolean"),
    q("byLabels[]", "Labels for grouping metrics.", typ="string", array=True),
]
DIRECTION = [
    q("direction", "Traffic direction.", "outbound", ["inbound", "outbound"]),
    q("requestProtocol", "Request protocol filter (e.g. http, grpc); default all."),
    q("reporter", "Telemetry reporter.", "source", ["source", "destination"]),
]
SERVICE_DIRECTION = [
    q("direction", "Traffic direction: a service's dashboard is inbound only.", "inbound", ["inbound"]),
] + DIRECTION[1:]

OPS = [
    # (path, operationId, tags, summary, params, 200 schema, error codes, extra responses)
    ("/", "Root", "status", "Service status.", [], ref("StatusInfo"), [404, 500]),
    ("/status", "getStatus", "status", "Service status.", [], ref("StatusInfo"), [404, 500]),
    ("/healthz", "healthz", "status", "Liveness: the process answers (touches neither backend nor cluster).", [],
     obj({"status": S}), []),
    ("/ready", "ready", "status", "Readiness: cluster cache synced, metrics backend answered recently, not shutting down.",
     [], obj({"status": S}), [503]),
    ("/token", "GetToken", "auth",
     "Issue a session token. Strategy login: HTTP Basic user and password. Strategy token: the caller's "
     "Kubernetes token as 'Authorization: Bearer <token>' (checked by a TokenReview); the session token stands "
     "for that Kubernetes token (reviewed again after auth.review_cache_ttl, never valid past its expiry), and "
     "namespaces follow that user's RBAC. Strategy header: the Kubernetes token in the configured "
     "auth.header_name, set by the authenticating proxy. Strategy anonymous issues no tokens (400). Answers "
     "carry 'Cache-Control: no-store'.",
     [], ref("TokenGenerated"), [401, 404, 429, 500, 503],
     {"400": {"description": "BadRequest: strategy anonymous issues no tokens", "schema": ref("ResponseError")}}),
    ("/config", "getConfig", "status", "Configuration of the service: StatusInfo plus the effective health rules (healthConfig) and the graph's appenders (graphAppenders).", [], ref("ConfigInfo"), [401, 500]),
    ("/grafana", "dashboardInfo", "external", "URL and descriptors of the external dashboard tool.", [],
     ref("DashboardToolInfo"), [401, 500, 503], {"204": {"description": "Display link disabled (empty body)"}}),
    ("/jaeger", "tracingInfo", "external", "URL of the external tracing tool.", [], ref("TracingToolInfo"), [401, 404, 406]),
    ("/swagger.json", "swagger", "status", "This document.", [], {"type": "object"}, []),
    ("/namespaces", "namespaceList", "namespaces", "Namespaces visible to the service.", [], arr(ref("Namespace")), [401, 500, 503]),
    ("/namespaces/{namespace}/apps", "appList", "apps", "Apps of a namespace.", [NS], ref("AppList"), [401, 500, 503]),
    ("/namespaces/{namespace}/apps/{app}", "appDetails", "apps", "Details of an app.", [NS, APP], ref("App"), [401, 404, 500, 503]),
    ("/namespaces/{namespace}/workloads", "workloadList", "workloads", "Workloads of a namespace.", [NS], ref("WorkloadList"), [401, 404, 500, 503]),
    ("/namespaces/{namespace}/services", "serviceList", "services", "Services of a namespace.", [NS], ref("ServiceList"),
     [401, 404, 500, 503]),
    ("/namespaces/{namespace}/workloads/{workload}", "workloadDetails", "workloads", "Workload details.", [NS, WL],
     ref("Workload"), [401, 404, 500, 503]),
    ("/namespaces/{namespace}/mesh", "meshConfigList", "config", "Mesh configuration lists of a namespace.",
     [NS, q("objects", "Comma-separated plural kind names to fill (default all): destinationrules, gateways, "
            "quotaspecbindings, quotaspecs, rules, serviceentries, virtualservices, authorizationpolicies, "
            "peerauthentications, requestauthentications, sidecars, k8sgateways, k8shttproutes, k8sgrpcroutes, "
            "k8sreferencegrants.")],
     ref("MeshConfigList"), [400, 401, 404, 500, 503]),
    ("/namespaces/{namespace}/mesh/{object_type}/{object}/mesh_validations", "objectValidations", "validations",
     "Validations of one mesh object.",
     [NS, path_param("object_type", "Type of the mesh object (plural, as in meshConfigList)."),
      path_param("object", "Name of the mesh object.")], ref("TypedMeshValidations"), [400, 401, 404, 500, 503]),
    ("/namespaces/{namespace}/mesh_validations", "namespaceValidations", "validations", "Validations of a namespace.",
     [NS], ref("NamespaceValidations"), [401, 404, 500, 503]),
    ("/namespaces/{namespace}/services/{service}/mesh_validations", "serviceValidations", "validations",
     "Validations of the mesh objects that refer to a service.", [NS, SVC], ref("TypedMeshValidations"), [401, 404, 500, 503]),
    ("/namespaces/{namespace}/apps/{app}/health", "appHealth", "health", "Health of one app.", [NS, APP, RATE_INTERVAL_HEALTH],
     ref("AppHealth"), [400, 401, 404, 500, 503]),
    ("/namespaces/{namespace}/services/{service}/health", "serviceHealth", "health", "Health of one service.",
     [NS, SVC, RATE_INTERVAL_HEALTH], ref("ServiceHealth"), [400, 401, 404, 500, 503]),
    ("/namespaces/{namespace}/workloads/{workload}/health", "workloadHealth", "health", "Health of one workload.",
     [NS, WL, RATE_INTERVAL_HEALTH], ref("WorkloadHealth"), [400, 401, 404, 500, 503]),
    ("/namespaces/{namespace}/health", "namespaceHealth", "health", "Health of all objects of a namespace.",
     [NS, RATE_INTERVAL_HEALTH, q("type", "Type of the objects.", "app", ["app", "service", "workload"],
                                  pattern="^(app|service|workload)$")],
     ref("NamespaceAppHealth"), [400, 401, 500, 503]),
    ("/namespaces/{namespace}/metrics", "namespaceMetrics", "metrics", "Metrics of a namespace.",
     [NS, q("filters[]", "Metric names to fetch; empty fetches all.", typ="string", array=True)] + DIRECTION + BASE_METRICS,
     ref("MetricsResponse"), [400, 401, 500, 503]),
    ("/namespaces/graph", "graphNamespaces", "graph", "Traffic graph of one or more namespaces.",
     [{"name": "namespaces", "in": "query", "required": True, "type": "string",
       "description": "Comma-separated list of namespaces."}] + GRAPH_PARAMS + [INJECT],
     ref("GraphConfig"), [400, 401, 500]),
    ("/namespaces/{namespace}/applications/{app}/graph", "graphApp", "graph", "Detail graph of an app.",
     [NS, APP] + GRAPH_PARAMS + [INJECT], ref("GraphConfig"), [400, 401, 500]),
    ("/namespaces/{namespace}/applications/{app}/versions/{version}/graph", "graphAppVersion", "graph",
     "Detail graph of a versioned app.",
     [NS, APP, path_param("version", "The app version label value.")] + GRAPH_PARAMS + [INJECT], ref("GraphConfig"), [400, 401, 500]),
    ("/namespaces/{namespace}/services/{service}/graph", "graphService", "graph", "Detail graph of a service.",
     [NS, SVC] + GRAPH_PARAMS, ref("GraphConfig"), [400, 401, 500]),
    ("/namespaces/{namespace}/workloads/{workload}/graph", "graphWorkload", "graph", "Detail graph of a workload.",
     [NS, WL] + GRAPH_PARAMS + [INJECT], ref("GraphConfig"), [400, 401, 500]),
    ("/namespaces/{namespace}/apps/{app}/customdashboard/{template}", "customDashboard", "dashboards",
     "Dashboard built from a named template.",
     [NS, APP, path_param("template", "The dashboard template name.")] + BASE_METRICS +
     [q("version", "Filter metrics by version.")], ref("Dashboard"), [400, 401, 500, 503]),
    ("/namespaces/{namespace}/apps/{app}/dashboard", "appDashboard", "dashboards", "Dashboard of a single app.",
     [NS, APP] + DIRECTION + BASE_METRICS, ref("Dashboard"), [400, 401, 500, 503]),
    ("/namespaces/{namespace}/workloads/{workload}/dashboard", "workloadDashboard", "dashboards",
     "Dashboard of a single workload (appDashboard's charts, selected by {side}_workload).",
     [NS, WL] + DIRECTION + BASE_METRICS, ref("Dashboard"), [400, 401, 500, 503]),
    ("/namespaces/{namespace}/services/{service}/dashboard", "serviceDashboard", "dashboards",
     "Inbound dashboard of a single service (selected by destination_service_name and _namespace); "
     "direction=outbound is a 400.",
     [NS, SVC] + SERVICE_DIRECTION + BASE_METRICS, ref("Dashboard"), [400, 401, 500, 503]),
]

PROXY = obj({"healthy": I, "total": I})
DEPLOYMENT_STATUS = obj({"name": S, "replicas": I, "available": I})
REQUESTS = obj({"requestCount": N, "requestErrorCount": N})
# A sample is [unix seconds (number), value (string)], as in Prometheus's answers.
SAMPLE = {"type": "array", "minItems": 2, "maxItems": 2,
          "items": {"description": "unix seconds (a number), then the value (a string)"}}
SERIES = obj({"matrix": arr(obj({"metric": mp(S), "values": arr(SAMPLE)}))})
VALIDATION = obj({"name": S, "objectType": S, "valid": B,
                  "checks": arr(obj({"message": S, "severity": {"type": "string", "enum": ["error", "warning", "info"]}, "path": S,
                                     "code": {"type": "string", "description": "Kiali's KIA code; only on the checks of "
                                              "AuthorizationPolicy, PeerAuthentication, RequestAuthentication, Sidecar "
                                              "and the Gateway API kinds."}},
                                    optional=("code",)))})
TRAFFIC = obj({"protocol": S, "rates": nullable(mp(S))})
# Appenders outside the bundle may add their own fields to nodes and edges.
APPENDER_FIELD = {"description": "An appender's own field: a boolean, number, string or null."}
STATUS_INFO = obj({"status": mp(S), "externalServices": arr(obj({"name": S, "url": S, "version": S}, optional=["url"])),
                   "warningMessages": arr(S)})
HEALTH_STATUS = {"type": "string", "enum": ["healthy", "degraded", "failure", "na"],
                 "description": "Computed health: the worst of the request status (under the configured [[health.rate]] "
                                "rules, Kiali's health_config) and the workload status (none available: failure, fewer "
                                "than desired: degraded). na: nothing to judge (a service without traffic, a workload "
                                "scaled to zero)."}
TOLERANCE = obj({
    "code": {"type": "string", "description": "Regex on the response code (gRPC: grpc_response_status; no response: -); X stands for a digit."},
    "direction": {"type": "string", "description": "Regex on inbound or outbound."},
    "protocol": {"type": "string", "description": "Regex on the request protocol (http, grpc)."},
    "degraded": {**N, "description": "Percent of the protocol's requests in that direction at or above which the object is degraded."},
    "failure": {**N, "description": "Percent at or above which the object has failed."}})
HEALTH_CONFIG = {**obj({"rate": arr(obj({"namespace": S, "kind": S, "name": S, "tolerance": arr(TOLERANCE)}))}),
                 "description": "The effective health rules: the configured [[health.rate]] entries in order, then Kiali's "
                                "default entry. The first entry whose namespace, kind and name match an object applies to it."}

DEFS = {
    "ResponseError": obj({"code": {"type": "integer", "format": "int32"}, "message": S}),
    "StatusInfo": STATUS_INFO,
    "ConfigInfo": obj({**STATUS_INFO["properties"], "healthConfig": ref("HealthConfig"),
                       "metricsCacheTtl": {**I, "description": "[metrics] cache_ttl in whole seconds (0: the answer cache is off). "
                                           "Answers at a queryTime on its grid (a multiple of it) are cached at their first request."},
                       "graphAppenders": {**arr(S), "description": "The appenders a graph runs when 'appenders' is "
                                          "absent, in run order: the bundled ones that are loaded (in Kiali's order), "
                                          "then plugins.appenders, then any other loaded one by name."}}),
    "HealthStatus": HEALTH_STATUS,
    "HealthConfig": HEALTH_CONFIG,
    "TokenGenerated": obj({"token": S, "expired_at": S}),
    "DashboardToolInfo": obj({"url": S, "serviceDashboardPath": S, "workloadDashboardPath": S, "varNamespace": S,
                              "varService": S, "varWorkload": S}),
    "TracingToolInfo": obj({"url": S}),
    "Namespace": obj({"name": S, "creationTimestamp": S, "isAmbient": B}),
    "DeploymentStatus": DEPLOYMENT_STATUS,
    "ProxyHealth": PROXY,
    "AppHealth": obj({"deploymentStatuses": arr(ref("DeploymentStatus")),
                      "proxy": arr(obj({"service": S, "inbound": ref("ProxyHealth"), "outbound": ref("ProxyHealth")})),
                      "requests": REQUESTS, "status": ref("HealthStatus")}),
    "ServiceHealth": obj({"proxy": obj({"inbound": ref("ProxyHealth"), "outbound": ref("ProxyHealth")}), "requests": REQUESTS,
                          "status": ref("HealthStatus")}),
    "WorkloadHealth": obj({"deploymentStatus": ref("DeploymentStatus"), "requests": REQUESTS, "status": ref("HealthStatus")}),
    # type=app: workloadStatuses; type=workload: workloadStatus; type=service: requests only.
    "NamespaceAppHealth": mp(obj({"requests": obj({"errorRatio": N, "inboundErrorRatio": N, "outboundErrorRatio": N}),
                                  "workloadStatuses": arr(ref("DeploymentStatus")),
                                  "workloadStatus": ref("DeploymentStatus"), "status": ref("HealthStatus")},
                                 optional=["workloadStatuses", "workloadStatus"])),
    "NodeData": obj({"id": S, "parent": S, "nodeType": S, "namespace": S, "workload": S, "app": S, "version": S,
                     "service": S, "destServices": mp(B), "traffic": arr(TRAFFIC), "hasCB": B, "hasMissingSC": B,
                     "hasVS": B, "hasHTTPRoute": B, "isDead": B, "isFind": B, "isGroup": S, "isInaccessible": B, "isMisconfigured": S, "isOutside": B,
                     "isRoot": B, "isServiceEntry": S, "isUnused": B, "isAmbient": B, "isWaypoint": B,
                     "healthStatus": {**ref("HealthStatus"), "description": "Set by the health appender: the node's status "
                                      "over the graph's own window (app, service and workload nodes)."}},
                    optional=["parent", "workload", "app", "version", "service", "destServices", "traffic",
                              "hasCB", "hasMissingSC", "hasVS", "hasHTTPRoute", "isDead", "isFind", "isGroup", "isInaccessible",
                              "isMisconfigured", "isOutside", "isRoot", "isServiceEntry", "isUnused",
                              "isAmbient", "isWaypoint", "healthStatus"],
                    open_fields=APPENDER_FIELD),
    "EdgeData": obj({"id": S, "source": S, "target": S, "traffic": TRAFFIC, "responseTime": S, "isFind": B, "isMTLS": B,
                     "isUnused": B},
                    optional=["responseTime", "isFind", "isMTLS", "isUnused"], open_fields=APPENDER_FIELD),
    "GraphConfig": obj({"timestamp": I, "duration": I, "graphType": S,
                        "elements": obj({"nodes": arr(obj({"data": ref("NodeData")})),
                                         "edges": arr(obj({"data": ref("EdgeData")}))})}),
    "MetricSeries": SERIES,
    "MetricsResponse": obj({"metrics": mp(ref("MetricSeries")), "histograms": mp(mp(ref("MetricSeries")))}),
    "Chart": obj({"name": S, "unit": S, "spans": I, "metric": ref("MetricSeries"), "histogram": mp(ref("MetricSeries"))},
                 optional=["metric", "histogram"]),  # one of the two
    "Dashboard": obj({"title": S, "aggregations": arr(obj({"displayName": S, "label": S})), "charts": arr(ref("Chart"))}),
    "AppList": obj({"namespace": obj({"name": S}), "applications": arr(obj({"name": S, "meshSidecar": B, "isAmbient": B}))}),
    "App": obj({"name": S, "namespace": obj({"name": S}),
                "runtimes": arr(obj({"name": S, "dashboardRefs": arr(obj({"template": S, "title": S}))})),
                "serviceNames": arr(S), "workloads": arr(obj({"workloadName": S, "meshSidecar": B}))}),
    "WorkloadList": obj({"namespace": obj({"name": S}),
                         "workloads": arr(obj({"name": S, "type": S, "appLabel": B, "versionLabel": B, "meshSidecar": B,
                                               "isAmbient": B, "isWaypoint": B}))}),
    "ServiceList": obj({"namespace": obj({"name": S}),
                        "services": arr(obj({"name": S, "meshSidecar": B, "isAmbient": B, "appLabel": B, "workloads": arr(S)}))}),
    "Autoscaler": obj({"name": S, "createdAt": S, "labels": mp(S), "lastScaleTime": S, "observedGeneration": I,
                       "minReplicas": I, "maxReplicas": I, "currentReplicas": I, "desiredReplicas": I,
                       "currentCPUUtilizationPercentage": I, "targetCPUUtilizationPercentage": I}),
    "Workload": obj({"name": S, "type": S, "createdAt": S, "resourceVersion": S, "labels": mp(S), "templateAnnotations": mp(S),
                     "replicas": I, "availableReplicas": I, "unavailableReplicas": I, "autoscaler": ref("Autoscaler"),
                     "pods": arr(obj({"name": S, "labels": mp(S), "createdAt": S, "meshSidecar": B, "phase": S})),
                     "services": arr(obj({"name": S, "labels": mp(S), "createdAt": S, "resourceVersion": S, "type": S,
                                          "ip": S, "ports": arr(obj({"name": S, "protocol": S, "port": I}))})),
                     "isAmbient": B, "isWaypoint": B}),
    "MeshConfigList": obj({"namespace": obj({"name": S}), **{k: arr({"type": "object"}) for k in [
        "destinationRules", "gateways", "quotaSpecBindings", "quotaSpecs", "rules", "serviceEntries", "virtualServices",
        "authorizationPolicies", "peerAuthentications", "requestAuthentications", "sidecars", "k8sGateways",
        "k8sHTTPRoutes", "k8sGRPCRoutes", "k8sReferenceGrants"]}}),
    "MeshValidation": VALIDATION,
    "TypedMeshValidations": mp(mp(ref("MeshValidation"))),
    "NamespaceValidations": mp(ref("TypedMeshValidations")),
}

def main():
    paths = {}
    for entry in OPS:
        path, op_id, tag, summary, params, schema, codes = entry[:7]
        extra = entry[7] if len(entry) > 7 else None
        if "{namespace}" in path or op_id == "graphNamespaces":
            codes = sorted(set(codes) | {403})
        paths[path] = {"get": {
            "operationId": op_id,
            "tags": [tag],
            "summary": summary,
            "produces": ["application/json"] if op_id != "swagger" else ["application/json"],
            "parameters": params,
            "responses": responses(schema, codes, extra=extra, op_id=op_id),
        }}
        if op_id not in ("Root", "getStatus", "swagger", "GetToken", "healthz", "ready"):
            paths[path]["get"]["security"] = [{"bearer": []}, {"basic": []}]
        if op_id == "GetToken":
            paths[path]["get"]["security"] = [{"basic": []}, {"kubernetes": []}, {"proxyHeader": []}]
    doc = {
        "swagger": "2.0",
        "info": {"title": "meshlens", "description": "Observability service for a service mesh.", "version": "0.1.0"},
        "basePath": "/api",
        "schemes": ["http"],
        "consumes": ["application/json"],
        "produces": ["application/json"],
        "securityDefinitions": {
            "basic": {"type": "basic", "description": "user and password"},
            "bearer": {"type": "apiKey", "name": "Authorization", "in": "header",
                       "description": "Bearer <token from GET /token>; with strategy token also Bearer <Kubernetes token>"},
            "kubernetes": {"type": "apiKey", "name": "Authorization", "in": "header",
                           "description": "strategy token: Bearer <Kubernetes token>, exchanged at GET /token"},
            "proxyHeader": {"type": "apiKey", "name": "X-Forwarded-Access-Token", "in": "header",
                            "description": "strategy header: the Kubernetes token set by the authenticating proxy "
                                           "(header name from auth.header_name)"},
        },
        "paths": paths,
        "definitions": DEFS,
    }
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "host", "swagger.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=2, sort_keys=False)
        f.write("\n")
    print(f"wrote {len(paths)} paths to {os.path.normpath(out)}")

if __name__ == "__main__":
    main()
