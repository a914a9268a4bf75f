//! The operations' parameters: path and query parameters, and the lists several
//! operations share.

use super::{J, o};

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

pub fn ns() -> J {
    path_param("namespace", "The namespace name.")
}
/// `clusterName` (Kiali v2's name): the cluster a namespace-scoped operation reads.
pub fn cluster_name() -> J {
    q(
        "clusterName",
        "The cluster to read ([cluster] name or a [[cluster.remotes]] name); the home cluster when absent. \
         An unknown name is a 404; a remote that cannot be read now is a 503.",
    )
    .into()
}
/// `clusterName` of the node graphs: the node's cluster.
pub fn node_graph_cluster_name() -> J {
    q(
        "clusterName",
        "The cluster of the graph's node ([cluster] name or a [[cluster.remotes]] name): only that cluster's \
         node, by source_cluster/destination_cluster. Absent: the node by name in every cluster. The graph \
         still shows every cluster's nodes, each judged by its own cluster's API server. An unknown name is \
         a 404; a remote that cannot be read now is a 503.",
    )
    .into()
}
pub fn app() -> J {
    path_param("app", "The app name (value of the app label).")
}
pub fn svc() -> J {
    path_param("service", "The service name.")
}
pub fn wl() -> J {
    path_param("workload", "The workload name.")
}

pub fn rate_interval_health() -> J {
    q("rateInterval", "Rate interval (a Prometheus duration) for the request rates.")
        .default("10m")
        .into()
}

pub fn graph_params() -> Vec<J> {
    vec![
        q("appenders", "Comma-separated list of appenders to run; absent runs all, present and empty runs none.")
            .into(),
        q("duration", "Query time-range duration (number plus unit, e.g. 10m).").default("10m").into(),
        q("graphType", "Graph type.")
            .default("workload")
            .en(&["app", "service", "versionedApp", "workload"])
            .into(),
        q("groupBy", "Grouping of app boxes.").default("none").en(&["app", "none", "version"]).into(),
        q(
            "boxBy",
            "Comma-separated compound nodes (nodeType box, isBox): cluster (when the graph spans two or more \
             clusters; never unknown), namespace (when it spans two or more namespaces), app (in place of \
             groupBy's boxes). Only groups of two or more top-level members get a box. Anything else is a 400.",
        )
        .into(),
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

pub fn inject() -> J {
    q("injectServiceNodes", "Inject service nodes between source and destination nodes.")
        .default("false")
        .typ("boolean")
        .into()
}

pub fn base_metrics() -> Vec<J> {
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

pub fn direction() -> Vec<J> {
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

pub fn service_direction() -> Vec<J> {
    let mut v: Vec<J> = vec![
        q("direction", "Traffic direction: a service's dashboard is inbound only.")
            .default("inbound")
            .en(&["inbound"])
            .into(),
    ];
    v.extend(direction().into_iter().skip(1));
    v
}
