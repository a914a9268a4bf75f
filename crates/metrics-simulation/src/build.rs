//! Turning a topology into series: Istio's request, duration, size and TCP metrics for every
//! edge and reporter, Envoy membership gauges, and runtime metrics.

use std::collections::HashMap;

use crate::{
    Curve, Kind, SeriesSpec,
    topology::{EdgeSpec, Protocol, Runtime, Topology, WorkloadSpec},
};

const DOMAIN: &str = "svc.cluster.local";
const TRUST: &str = "cluster.local";
/// Istio's buckets for istio_request_duration_milliseconds.
const DURATION_BUCKETS_MS: [f64; 19] = [
    0.5, 1.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 30000.0,
    60000.0, 300000.0, 600000.0, 1800000.0, 3600000.0,
];
/// Istio's byte-size buckets (exponential, growth 10).
const SIZE_BUCKETS: [f64; 8] = [1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0, 10000000.0];
const SECONDS_BUCKETS: [f64; 11] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
/// Mean duration of a client-side failure (it never reaches the server).
const CLIENT_FAILURE_MS: f64 = 1.0;

type Labels = Vec<(String, String)>;

/// Series being collected: one per (name, labels); rates of the same series add up.
struct Sink {
    step: f64,
    n: usize,
    series: Vec<(SeriesSpec, Vec<f64>)>,
    index: HashMap<(String, Labels), usize>,
}

impl Sink {
    fn add(
        &mut self,
        family: &str,
        family_type: &'static str,
        name: &str,
        labels: &Labels,
        kind: Kind,
        values: Vec<f64>,
    ) {
        let key = (name.to_string(), labels.clone());
        if let Some(&i) = self.index.get(&key) {
            for (a, b) in self.series[i].1.iter_mut().zip(values) {
                *a += b;
            }
            return;
        }
        self.index.insert(key, self.series.len());
        let spec = SeriesSpec {
            family: family.into(),
            family_type,
            name: name.into(),
            labels: labels.clone(),
            kind,
            curve: Curve::Const(0.0),
        };
        self.series.push((spec, values));
    }

    fn counter(&mut self, family: &str, name: &str, labels: &Labels, rates: Vec<f64>) {
        self.add(family, "counter", name, labels, Kind::Counter, rates);
    }

    fn gauge(&mut self, name: &str, labels: &Labels, value: f64) {
        let values = vec![value; self.n];
        self.add(name, "gauge", name, labels, Kind::Gauge, values);
    }

    /// A histogram whose observations arrive at `rates[j]`/s with mean `means[j]`
    /// (exponentially distributed).
    fn histogram(
        &mut self,
        family: &str,
        buckets: &[f64],
        labels: &Labels,
        rates: &[f64],
        means: &[f64],
    ) {
        for &le in buckets {
            let mut l = labels.clone();
            l.push(("le".into(), fmt_bound(le)));
            let values = rates.iter().zip(means).map(|(r, m)| r * cdf_exp(le, *m)).collect();
            self.add(family, "histogram", &format!("{family}_bucket"), &l, Kind::Counter, values);
        }
        let mut l = labels.clone();
        l.push(("le".into(), "+Inf".into()));
        self.add(
            family,
            "histogram",
            &format!("{family}_bucket"),
            &l,
            Kind::Counter,
            rates.to_vec(),
        );
        let sums = rates.iter().zip(means).map(|(r, m)| r * m).collect();
        self.add(family, "histogram", &format!("{family}_sum"), labels, Kind::Counter, sums);
        self.add(
            family,
            "histogram",
            &format!("{family}_count"),
            labels,
            Kind::Counter,
            rates.to_vec(),
        );
    }
}

/// Share of observations at or under `le` for an exponential distribution of this mean.
fn cdf_exp(le: f64, mean: f64) -> f64 {
    if mean <= 0.0 { 1.0 } else { 1.0 - (-le / mean).exp() }
}

fn fmt_bound(v: f64) -> String {
    format!("{v}")
}

/// Pod names as the demo's manifests spell them: `<workload>-<9 hex digits of its name>-abcde`.
pub(crate) fn pod_names(w: &WorkloadSpec) -> Vec<String> {
    let hex: String =
        w.name.bytes().map(|b| format!("{b:02x}")).collect::<String>().chars().take(9).collect();
    (0..w.pods)
        .map(|i| {
            if i == 0 {
                format!("{}-{hex}-abcde", w.name)
            } else {
                format!("{}-{hex}-abcd{i}", w.name)
            }
        })
        .collect()
}

/// Whether cycle step `j` lies in `[at_minute, at_minute + minutes)`.
fn within(j: usize, step: f64, at_minute: u64, minutes: u64) -> bool {
    let t = j as f64 * step;
    t >= at_minute as f64 * 60.0 && t < (at_minute + minutes) as f64 * 60.0
}

/// Per-step traffic multiplier of an edge (its shift scenario; 1 without one).
fn shift_factors(e: &EdgeSpec, n: usize, step: f64) -> Vec<f64> {
    (0..n)
        .map(|j| match &e.shift {
            Some(s) if within(j, step, s.at_minute, s.minutes) => {
                let span = s.minutes as f64 * 60.0;
                let x = (j as f64 * step - s.at_minute as f64 * 60.0) / span;
                let tri = if x < 0.5 { 2.0 * x } else { 2.0 * (1.0 - x) };
                1.0 + (s.peak - 1.0) * tri
            }
            _ => 1.0,
        })
        .collect()
}

fn principal(w: &WorkloadSpec) -> String {
    format!(
        "spiffe://{TRUST}/ns/{}/sa/{}",
        w.namespace,
        w.service_account.as_deref().unwrap_or(&w.name)
    )
}

/// Istio's full label set of a request or TCP series, in Istio's order.
fn request_labels(
    e: &EdgeSpec,
    src: Option<&WorkloadSpec>,
    dst: Option<&WorkloadSpec>,
    reporter: &str,
    response: Option<(&str, Option<&str>, &str)>,
) -> Labels {
    let u = || "unknown".to_string();
    let svc_ns =
        e.service_namespace.clone().or_else(|| dst.map(|d| d.namespace.clone())).unwrap_or_else(u);
    let fqdn =
        if e.external { e.service.clone() } else { format!("{}.{svc_ns}.{DOMAIN}", e.service) };
    let mut l: Labels = vec![("reporter".into(), reporter.into())];
    let mut side = |prefix: &str, w: Option<&WorkloadSpec>, with_service: bool| {
        let p = |k: &str| format!("{prefix}_{k}");
        let (workload, ns, princ, app, version, canon, rev, cluster) = match w {
            None => (u(), u(), u(), u(), u(), u(), u(), u()),
            Some(w) => (
                w.name.clone(),
                w.namespace.clone(),
                if e.mtls { principal(w) } else { u() },
                w.app.clone(),
                w.version.clone().unwrap_or_else(u),
                w.app.clone(),
                w.version.clone().unwrap_or_else(|| "latest".into()),
                w.cluster.clone(),
            ),
        };
        l.push((p("workload"), workload));
        l.push((p("workload_namespace"), ns));
        l.push((p("principal"), princ));
        l.push((p("app"), app));
        l.push((p("version"), version));
        if with_service {
            l.push((p("service"), fqdn.clone()));
            l.push((p("service_name"), e.service.clone()));
            l.push((p("service_namespace"), svc_ns.clone()));
        }
        l.push((p("canonical_service"), canon));
        l.push((p("canonical_revision"), rev));
        l.push((p("cluster"), cluster));
    };
    side("source", src, false);
    side("destination", dst, true);
    l.push(("request_protocol".into(), e.protocol.label().into()));
    let flags = match response {
        Some((code, grpc, flags)) => {
            l.push(("response_code".into(), code.into()));
            if let Some(g) = grpc {
                l.push(("grpc_response_status".into(), g.into()));
            }
            flags
        }
        None => "-",
    };
    l.push(("response_flags".into(), flags.into()));
    let policy = match (reporter, e.mtls) {
        ("destination", true) => "mutual_tls",
        ("destination", false) => "none",
        _ => "unknown",
    };
    l.push(("connection_security_policy".into(), policy.into()));
    l
}

/// (code, grpc status, flags, client side, per-step rates)
type ResponseClass<'a> = (&'a str, Option<&'a str>, &'a str, bool, Vec<f64>);

/// ztunnel's TCP series of one hop: `istio_tcp_*` with `request_protocol="tcp"`, no
/// response code, and the scrape's `app="ztunnel"` (how they are told apart from sidecars').
fn ztunnel_hop(
    sink: &mut Sink,
    e: &EdgeSpec,
    src: Option<&WorkloadSpec>,
    dst: Option<&WorkloadSpec>,
    reporter: &str,
    bytes: &[f64],
) {
    let mut labels = request_labels(e, src, dst, reporter, None);
    for (k, v) in labels.iter_mut() {
        match k.as_str() {
            "request_protocol" => *v = "tcp".into(),
            // ztunnel always speaks mTLS (HBONE) to ztunnel or a waypoint.
            "connection_security_policy" if reporter == "destination" => *v = "mutual_tls".into(),
            _ => {}
        }
    }
    labels.push(("app".into(), "ztunnel".into()));
    sink.counter("istio_tcp_sent_bytes", "istio_tcp_sent_bytes_total", &labels, bytes.to_vec());
    let received: Vec<f64> = bytes.iter().map(|b| b / 4.0).collect();
    sink.counter("istio_tcp_received_bytes", "istio_tcp_received_bytes_total", &labels, received);
}

/// What ztunnel reports of an edge with an ambient end (Istio's ambient mode): a direct hop
/// is reported by each ambient end's ztunnel; a hop through the destination's waypoint is
/// two halves, client → waypoint (the client's ztunnel) and waypoint → server (the server's).
fn ztunnel_series(
    sink: &mut Sink,
    t: &Topology,
    e: &EdgeSpec,
    src: Option<&WorkloadSpec>,
    dst: Option<&WorkloadSpec>,
    bytes: &[f64],
) {
    let ambient = |w: Option<&WorkloadSpec>| w.is_some_and(|w| w.ambient || w.waypoint);
    let waypoint = dst.and_then(|d| d.use_waypoint.as_deref()).and_then(|k| t.workload(k));
    match waypoint {
        Some(wp) => {
            if ambient(src) {
                ztunnel_hop(sink, e, src, Some(wp), "source", bytes);
            }
            ztunnel_hop(sink, e, Some(wp), dst, "destination", bytes);
        }
        None => {
            if ambient(src) {
                ztunnel_hop(sink, e, src, dst, "source", bytes);
            }
            if ambient(dst) {
                ztunnel_hop(sink, e, src, dst, "destination", bytes);
            }
        }
    }
}

fn edge_series(sink: &mut Sink, t: &Topology, e: &EdgeSpec) {
    let (n, step) = (sink.n, sink.step);
    let src = t.workload(&e.from);
    let dst = e.to.as_deref().and_then(|k| t.workload(k));
    // Istio's reporters: each end with a proxy reports; an unknown caller has none.
    let mut reporters = Vec::new();
    if src.is_some_and(|s| s.sidecar) {
        reporters.push("source");
    }
    if dst.is_some_and(|d| d.sidecar) {
        reporters.push("destination");
    }
    // A waypoint reports the requests it proxies, naming the real client and server.
    if dst.is_some_and(|d| d.use_waypoint.is_some()) && e.protocol != Protocol::Tcp {
        reporters.push("waypoint");
    }
    let shift = shift_factors(e, n, step);
    if src.is_some_and(|s| s.ambient) || dst.is_some_and(|d| d.ambient) {
        let bytes: Vec<f64> = if e.protocol == Protocol::Tcp {
            shift.iter().map(|f| e.sent_bytes * f).collect()
        } else {
            let per_request = e.request_bytes.unwrap_or(512.0) + e.response_bytes.unwrap_or(512.0);
            let rate: f64 = e.responses.iter().filter(|r| !r.client_side).map(|r| r.rate).sum();
            shift.iter().map(|f| rate * per_request * f).collect()
        };
        ztunnel_series(sink, t, e, src, dst, &bytes);
    }
    if e.protocol == Protocol::Tcp {
        for reporter in reporters {
            let labels = request_labels(e, src, dst, reporter, None);
            let scaled = |r: f64| shift.iter().map(|f| r * f).collect::<Vec<_>>();
            sink.counter(
                "istio_tcp_sent_bytes",
                "istio_tcp_sent_bytes_total",
                &labels,
                scaled(e.sent_bytes),
            );
            sink.counter(
                "istio_tcp_received_bytes",
                "istio_tcp_received_bytes_total",
                &labels,
                scaled(e.received_bytes),
            );
            for what in ["opened", "closed"] {
                let family = format!("istio_tcp_connections_{what}");
                sink.counter(&family, &format!("{family}_total"), &labels, scaled(e.connections));
            }
        }
        return;
    }
    let burst = |j: usize| e.burst.as_ref().filter(|b| within(j, step, b.at_minute, b.minutes));
    let server_rate: f64 = e.responses.iter().filter(|r| !r.client_side).map(|r| r.rate).sum();
    let latency: Vec<f64> = (0..n)
        .map(|j| match &e.spike {
            Some(s) if within(j, step, s.at_minute, s.minutes) => s.latency_ms,
            _ => e.latency_ms,
        })
        .collect();
    let mut classes: Vec<ResponseClass<'_>> = e
        .responses
        .iter()
        .map(|r| {
            let rates = (0..n)
                .map(|j| {
                    let failing =
                        if r.client_side { 0.0 } else { burst(j).map_or(0.0, |b| b.share) };
                    r.rate * shift[j] * (1.0 - failing)
                })
                .collect();
            (r.code.as_str(), r.grpc_status.as_deref(), r.flags.as_str(), r.client_side, rates)
        })
        .collect();
    if let Some(b) = &e.burst {
        let rates =
            (0..n).map(|j| burst(j).map_or(0.0, |b| server_rate * shift[j] * b.share)).collect();
        // gRPC failures keep HTTP 200 and carry the status (14: unavailable).
        let (code, grpc) = if e.protocol == Protocol::Grpc {
            ("200", Some("14"))
        } else {
            (b.code.as_str(), None)
        };
        classes.push((code, grpc, "-", false, rates));
    }
    for reporter in reporters {
        for (code, grpc, flags, client_side, rates) in &classes {
            if *client_side && reporter != "source" {
                continue;
            }
            let labels = request_labels(e, src, dst, reporter, Some((code, *grpc, flags)));
            sink.counter("istio_requests", "istio_requests_total", &labels, rates.clone());
            let means: Vec<f64> =
                if *client_side { vec![CLIENT_FAILURE_MS; n] } else { latency.clone() };
            sink.histogram(
                "istio_request_duration_milliseconds",
                &DURATION_BUCKETS_MS,
                &labels,
                rates,
                &means,
            );
            if let (Some(req), Some(resp)) = (e.request_bytes, e.response_bytes) {
                sink.histogram("istio_request_bytes", &SIZE_BUCKETS, &labels, rates, &vec![req; n]);
                sink.histogram(
                    "istio_response_bytes",
                    &SIZE_BUCKETS,
                    &labels,
                    rates,
                    &vec![resp; n],
                );
            }
        }
    }
}

fn pod_labels(w: &WorkloadSpec, pod: &str, port: u16, i: usize) -> Labels {
    let mut l: Labels =
        vec![("namespace".into(), w.namespace.clone()), ("app".into(), w.app.clone())];
    if let Some(v) = &w.version {
        l.push(("version".into(), v.clone()));
    }
    l.push(("pod".into(), pod.into()));
    l.push(("instance".into(), format!("10.1.{}.{}:{port}", i / 250, i % 250 + 2)));
    l.push(("job".into(), "kubernetes-pods".into()));
    l
}

/// (service, namespace, port, pods behind it, calling pods)
type ServiceMembers<'a> = (String, String, u16, Vec<&'a WorkloadSpec>, Vec<&'a WorkloadSpec>);

/// Envoy cluster membership: each pod behind a service (with a port and a proxy) reports its
/// inbound cluster; each calling pod with a proxy reports the service's outbound cluster.
fn membership(sink: &mut Sink, t: &Topology, pod_index: &HashMap<String, usize>) {
    let mut services: Vec<ServiceMembers<'_>> = Vec::new();
    for e in t.edge.iter().filter(|e| e.protocol != Protocol::Tcp && !e.external) {
        let (Some(port), Some(dst)) = (e.port, e.to.as_deref().and_then(|k| t.workload(k))) else {
            continue;
        };
        let ns = e.service_namespace.clone().unwrap_or_else(|| dst.namespace.clone());
        let i = match services.iter().position(|s| s.0 == e.service && s.1 == ns && s.2 == port) {
            Some(i) => i,
            None => {
                services.push((e.service.clone(), ns, port, Vec::new(), Vec::new()));
                services.len() - 1
            }
        };
        let entry = &mut services[i];
        if dst.sidecar
            && !entry.3.iter().any(|w| w.name == dst.name && w.namespace == dst.namespace)
        {
            entry.3.push(dst);
        }
        if let Some(src) = t.workload(&e.from).filter(|s| s.sidecar)
            && !entry.4.iter().any(|w| w.name == src.name && w.namespace == src.namespace)
        {
            entry.4.push(src);
        }
    }
    for (svc, ns, port, members, callers) in services {
        let endpoints: u32 = members.iter().map(|w| w.pods).sum();
        let cluster = format!(
            "{port}__{}_{}_{}",
            svc.replace('-', "_"),
            ns.replace('-', "_"),
            DOMAIN.replace('.', "_")
        );
        for (dir, pods, value) in
            [("inbound", &members, 1.0), ("outbound", &callers, endpoints as f64)]
        {
            for w in pods.iter() {
                for pod in pod_names(w) {
                    let labels =
                        pod_labels(w, &pod, 15090, pod_index.get(&pod).copied().unwrap_or(0));
                    for stat in ["healthy", "total"] {
                        sink.gauge(
                            &format!("envoy_cluster_{dir}_{cluster}_membership_{stat}"),
                            &labels,
                            value,
                        );
                    }
                }
            }
        }
    }
}

/// Vert.x (Micrometer) and Go runtime (client_golang) metrics for the pods of an app.
fn runtimes(sink: &mut Sink, t: &Topology, pod_index: &HashMap<String, usize>) {
    let n = sink.n;
    for r in &t.runtime {
        for w in t.workload.iter().filter(|w| w.namespace == r.namespace && w.app == r.app) {
            // Requests per pod: what the edges into the workload carry on average.
            let incoming: f64 = t
                .edge
                .iter()
                .filter(|e| e.to.as_deref() == Some(&format!("{}/{}", w.namespace, w.name)))
                .flat_map(|e| e.responses.iter().filter(|r| !r.client_side).map(|r| r.rate))
                .sum::<f64>()
                / w.pods.max(1) as f64;
            for pod in pod_names(w) {
                let base = pod_labels(w, &pod, 9080, pod_index.get(&pod).copied().unwrap_or(0));
                match r.kind {
                    Runtime::Vertx => {
                        for (code, share, mean) in [("200", 0.9, 0.02), ("500", 0.1, 0.2)] {
                            let mut l = base.clone();
                            l.extend([
                                ("method".into(), "GET".into()),
                                ("code".into(), code.into()),
                                ("route".into(), "/reviews/:id".into()),
                            ]);
                            let rate = vec![incoming * share; n];
                            sink.counter(
                                "vertx_http_server_requests",
                                "vertx_http_server_requests_total",
                                &l,
                                rate.clone(),
                            );
                            sink.counter(
                                "vertx_http_server_requestCount",
                                "vertx_http_server_requestCount_total",
                                &l,
                                rate.clone(),
                            );
                            sink.histogram(
                                "vertx_http_server_responseTime_seconds",
                                &SECONDS_BUCKETS,
                                &l,
                                &rate,
                                &vec![mean; n],
                            );
                        }
                        sink.gauge("vertx_http_server_connections", &base, 4.0);
                        sink.gauge("vertx_http_server_active_requests", &base, 1.0);
                    }
                    Runtime::Go => {
                        for (name, v) in [
                            ("go_goroutines", 42.0),
                            ("go_threads", 12.0),
                            ("go_memstats_alloc_bytes", 4.5e6),
                            ("go_memstats_heap_alloc_bytes", 4.5e6),
                            ("go_memstats_heap_inuse_bytes", 6.2e6),
                            ("go_memstats_sys_bytes", 2.1e7),
                            ("go_memstats_next_gc_bytes", 8.0e6),
                        ] {
                            sink.gauge(name, &base, v);
                        }
                        let gc = "go_gc_duration_seconds";
                        for (q, v) in [
                            ("0", 2e-5),
                            ("0.25", 4e-5),
                            ("0.5", 6e-5),
                            ("0.75", 9e-5),
                            ("1", 4e-4),
                        ] {
                            let mut l = base.clone();
                            l.push(("quantile".into(), q.into()));
                            sink.add(gc, "summary", gc, &l, Kind::Gauge, vec![v; n]);
                        }
                        sink.add(
                            gc,
                            "summary",
                            &format!("{gc}_sum"),
                            &base,
                            Kind::Counter,
                            vec![0.0001; n],
                        );
                        sink.add(
                            gc,
                            "summary",
                            &format!("{gc}_count"),
                            &base,
                            Kind::Counter,
                            vec![0.5; n],
                        );
                        sink.counter(
                            "go_memstats_alloc_bytes_total",
                            "go_memstats_alloc_bytes_total",
                            &base,
                            vec![2e5; n],
                        );
                    }
                }
            }
        }
    }
}

/// Every series of the topology, with curves over a cycle of `n` steps.
pub(crate) fn series(t: &Topology, n: usize) -> Vec<SeriesSpec> {
    let step = t.step_seconds as f64;
    let mut sink = Sink { step, n, series: Vec::new(), index: HashMap::new() };
    for e in &t.edge {
        edge_series(&mut sink, t, e);
    }
    let pod_index: HashMap<String, usize> =
        t.workload.iter().flat_map(pod_names).enumerate().map(|(i, p)| (p, i)).collect();
    membership(&mut sink, t, &pod_index);
    runtimes(&mut sink, t, &pod_index);
    sink.series
        .into_iter()
        .map(|(mut spec, values)| {
            spec.curve = Curve::from_values(values, step);
            spec
        })
        .collect()
}
