#!/usr/bin/env python3
"""Writes Istio-style traffic as OpenMetrics text with timestamps, for test fixtures.

The live demo no longer uses this script: its traffic comes from the simulator backend
(config/demo/topology.toml; `meshlens simulate` writes that model as a file). This script
stays for the fixtures whose tests predict numbers from its --expected JSON: the demo topology
at constant base rates (config/demo/README.md, without the scenario cycle) and the large
synthetic meshes of the benchmarks. The synthetic topology is a chain of workloads per
namespace, counters only, for benchmarks.

Output rules (what promtool's `tsdb create-blocks-from openmetrics` and the embedded store
both need): timestamps in seconds, every series' samples in time order, one metric family
per block with its `# TYPE` line, and a final `# EOF`. Counters grow by a constant amount per
step and start well above zero, so `rate()` over any window inside the data is exact and
Prometheus's extrapolation is never cut at zero.

Python 3 standard library only.

Examples:
  scripts/gen_traffic.py --out config/demo/metrics.om
  scripts/gen_traffic.py --out /tmp/m.om --end 1700000000 --minutes 30 --expected /tmp/m.json
  scripts/gen_traffic.py --out /tmp/big.om --topology synthetic --namespaces 200 --workloads 10 --minutes 10
  scripts/gen_traffic.py --out config/demo/metrics.om --if-stale      # only when older than 10 min
"""

import argparse
import json
import math
import os
import sys
import tempfile
import time

DOMAIN = "svc.cluster.local"
TRUST = "cluster.local"

# Istio's buckets for istio_request_duration_milliseconds (current) and _seconds (older).
DURATION_BUCKETS_MS = [0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000,
                       60000, 300000, 600000, 1800000, 3600000]
DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
# Istio's byte-size buckets: exponential, scale 1, growth 10, 8 finite buckets.
SIZE_BUCKETS = [1, 10, 100, 1000, 10000, 100000, 1000000, 10000000]
# Vert.x Micrometer default response-time buckets are not fixed; these are typical.
VERTX_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

# Seconds of traffic already counted before the window: keeps counters well above zero.
COUNTER_HEADSTART = 86400.0


class Workload:
    """One workload as Istio's labels see it (None = outside the mesh: all labels unknown)."""

    def __init__(self, name, namespace, app, version, sa=None, sidecar=True, pods=1):
        self.name, self.namespace, self.app, self.version = name, namespace, app, version
        self.sa = sa or name
        self.sidecar = sidecar
        self.pods = pods

    def principal(self):
        return "spiffe://%s/ns/%s/sa/%s" % (TRUST, self.namespace, self.sa)

    def pod_names(self):
        return ["%s-7d4b9c%02d-%05x" % (self.name, i, (hash_text(self.name) + i) % 0xFFFFF)
                for i in range(self.pods)]


def hash_text(text):
    """A stable small hash (Python's hash() is salted per process)."""
    h = 0
    for ch in text.encode():
        h = (h * 131 + ch) % 1000003
    return h


class Edge:
    """One source→destination row of the traffic table."""

    def __init__(self, src, service, svc_ns, dst, protocol, codes, reporters, mtls,
                 latency, req_size=None, resp_size=None, tcp=None, external=False):
        self.src = src                  # Workload or None (unknown)
        self.service = service          # service name (or external host)
        self.svc_ns = svc_ns            # service namespace
        self.dst = dst                  # Workload or None (no workload, e.g. ServiceEntry)
        self.protocol = protocol        # http | grpc | tcp
        self.codes = codes              # [(code, grpc_status, flags, rate, source_only)]
        self.reporters = reporters      # ("source",), ("destination",) or both
        self.mtls = mtls
        self.latency = latency          # mean request duration in ms
        self.req_size, self.resp_size = req_size, resp_size
        self.tcp = tcp                  # (sent B/s, received B/s)
        self.external = external

    def fqdn(self):
        return self.service if self.external else "%s.%s.%s" % (self.service, self.svc_ns, DOMAIN)


def demo_topology():
    """The mesh of config/demo/README.md."""
    ingress = Workload("istio-ingressgateway", "istio-system", "istio-ingressgateway", None,
                       sa="istio-ingressgateway-service-account")
    productpage = Workload("productpage-v1", "bookinfo", "productpage", "v1", sa="bookinfo-productpage")
    details = Workload("details-v1", "bookinfo", "details", "v1", sa="bookinfo-details", sidecar=False)
    reviews = [Workload("reviews-v%d" % v, "bookinfo", "reviews", "v%d" % v, sa="bookinfo-reviews")
               for v in (1, 2, 3)]
    ratings = Workload("ratings-v1", "bookinfo", "ratings", "v1", sa="bookinfo-ratings")
    mongodb = Workload("mongodb-v1", "bookinfo", "mongodb", "v1", sa="bookinfo-mongodb")
    both = ("source", "destination")
    ok = lambda rate: ("200", None, "-", rate, False)  # noqa: E731
    edges = [
        Edge(None, "istio-ingressgateway", "istio-system", ingress, "http", [ok(10.0)],
             ("destination",), False, 45.0),
        Edge(ingress, "productpage", "bookinfo", productpage, "http",
             [ok(9.5), ("500", None, "-", 0.5, False)], both, True, 40.0, 700.0, 5200.0),
        Edge(productpage, "details", "bookinfo", details, "http",
             [ok(9.0), ("404", None, "-", 1.0, False)], ("source",), False, 5.0, 350.0, 180.0),
        Edge(productpage, "reviews", "bookinfo", reviews[0], "http", [ok(5.0)], both, True, 20.0,
             350.0, 400.0),
        Edge(productpage, "reviews", "bookinfo", reviews[1], "http", [ok(3.0)], both, True, 30.0,
             350.0, 450.0),
        Edge(productpage, "reviews", "bookinfo", reviews[2], "http",
             [ok(1.8), ("503", None, "UF", 0.2, True)], both, True, 50.0, 350.0, 450.0),
        Edge(reviews[1], "ratings", "bookinfo", ratings, "http",
             [ok(2.7), ("503", None, "-", 0.3, False)], both, True, 3.0),
        Edge(reviews[2], "ratings", "bookinfo", ratings, "grpc",
             [("200", "0", "-", 1.9, False), ("200", "14", "-", 0.1, False)], both, True, 4.0),
        Edge(ratings, "mongodb", "bookinfo", mongodb, "tcp", [], both, False, 0.0,
             tcp=(2000.0, 1500.0)),
        Edge(productpage, "api.books.example.com", "bookinfo", None, "http", [ok(1.0)],
             ("source",), False, 100.0, 300.0, 2500.0, external=True),
    ]
    workloads = [ingress, productpage, details] + reviews + [ratings, mongodb]
    return edges, workloads


def synthetic_topology(namespaces, workloads):
    """`namespaces` namespaces, each a chain unknown → w0 → w1 → ... → w(M-1)."""
    edges, all_wl = [], []
    both = ("source", "destination")
    for n in range(namespaces):
        ns = "ns-%d" % n
        chain = [Workload("w%d-v1" % i, ns, "w%d" % i, "v1") for i in range(workloads)]
        all_wl.extend(chain)
        if not chain:
            continue
        edges.append(Edge(None, chain[0].app, ns, chain[0], "http", [("200", None, "-", 10.0, False)],
                          ("destination",), False, 10.0))
        for i in range(1, len(chain)):
            rate = round(10.0 / (i + 1), 3)
            edges.append(Edge(chain[i - 1], chain[i].app, ns, chain[i], "http",
                              [("200", None, "-", rate, False), ("500", None, "-", 0.1, False)],
                              both, True, 10.0))
    return edges, all_wl


def request_labels(edge, reporter, code, grpc_status, flags):
    """Istio's full label set for one request series, in Istio's order."""
    src, dst = edge.src, edge.dst
    unknown = "unknown"
    labels = [("reporter", reporter)]
    if src is None:
        labels += [("source_workload", unknown), ("source_workload_namespace", unknown),
                   ("source_principal", unknown), ("source_app", unknown), ("source_version", unknown),
                   ("source_canonical_service", unknown), ("source_canonical_revision", unknown),
                   ("source_cluster", unknown)]
    else:
        labels += [("source_workload", src.name), ("source_workload_namespace", src.namespace),
                   ("source_principal", src.principal() if edge.mtls else unknown),
                   ("source_app", src.app), ("source_version", src.version or unknown),
                   ("source_canonical_service", src.app),
                   ("source_canonical_revision", src.version or "latest"),
                   ("source_cluster", "Kubernetes")]
    if dst is None:
        labels += [("destination_workload", unknown), ("destination_workload_namespace", unknown),
                   ("destination_principal", unknown), ("destination_app", unknown),
                   ("destination_version", unknown), ("destination_service", edge.fqdn()),
                   ("destination_service_name", edge.service),
                   ("destination_service_namespace", edge.svc_ns),
                   ("destination_canonical_service", unknown),
                   ("destination_canonical_revision", unknown), ("destination_cluster", unknown)]
    else:
        labels += [("destination_workload", dst.name), ("destination_workload_namespace", dst.namespace),
                   ("destination_principal", dst.principal() if edge.mtls else unknown),
                   ("destination_app", dst.app), ("destination_version", dst.version or unknown),
                   ("destination_service", edge.fqdn()), ("destination_service_name", edge.service),
                   ("destination_service_namespace", edge.svc_ns),
                   ("destination_canonical_service", dst.app),
                   ("destination_canonical_revision", dst.version or "latest"),
                   ("destination_cluster", "Kubernetes")]
    labels.append(("request_protocol", edge.protocol))
    if code is not None:
        labels.append(("response_code", code))
    if grpc_status is not None:
        labels.append(("grpc_response_status", grpc_status))
    labels.append(("response_flags", flags))
    if reporter == "destination":
        policy = "mutual_tls" if edge.mtls else "none"
    else:
        policy = "unknown"
    labels.append(("connection_security_policy", policy))
    return labels


def escape(value):
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def fmt_labels(labels):
    return "{" + ",".join('%s="%s"' % (k, escape(v)) for k, v in labels) + "}"


def fmt_num(v):
    if v == math.inf:
        return "+Inf"
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(float(v))


class Writer:
    """Emits families in OpenMetrics order: one `# TYPE` per family, then its series."""

    def __init__(self, out, times, compact):
        self.out, self.times, self.compact = out, times, compact
        self.families = {}  # family -> (type, [(name, labels, kind, params)])
        self.order = []

    def series(self, family, ftype, name, labels, kind, a, b=0.0):
        """kind "counter": value at step i = a + b*i*step_secs; "gauge": constant a."""
        if family not in self.families:
            self.families[family] = (ftype, [])
            self.order.append(family)
        self.families[family][1].append((name, labels, kind, a, b))

    def write(self):
        t0 = self.times[0]
        for family in self.order:
            ftype, rows = self.families[family]
            self.out.write("# TYPE %s %s\n" % (family, ftype))
            for name, labels, kind, a, b in rows:
                head = name + fmt_labels(labels) + " "
                lines = []
                for t in self.times:
                    # Computed from scratch per sample (not accumulated) so that every step
                    # adds exactly the same amount up to one rounding.
                    v = a + b * (t - t0) if kind == "counter" else a
                    lines.append("%s%s %s\n" % (head, fmt_num(v), fmt_num(t)))
                self.out.write("".join(lines))
        self.out.write("# EOF\n")


def cdf_exp(le, mean):
    """Share of requests at or under `le` for an exponential distribution of this mean."""
    if mean <= 0:
        return 1.0
    return round(1.0 - math.exp(-le / mean), 6)


def histogram(w, base, unit_buckets, labels, rate, mean, scale=1.0):
    """A histogram family whose observations arrive at `rate`/s with the given mean."""
    start = rate * COUNTER_HEADSTART
    for le in unit_buckets:
        f = cdf_exp(le, mean * scale)
        w.series(base, "histogram", base + "_bucket", labels + [("le", fmt_num(le))], "counter",
                 start * f, rate * f)
    w.series(base, "histogram", base + "_bucket", labels + [("le", "+Inf")], "counter", start, rate)
    w.series(base, "histogram", base + "_sum", labels, "counter", start * mean * scale, rate * mean * scale)
    w.series(base, "histogram", base + "_count", labels, "counter", start, rate)


def emit_edges(w, edges, args, synthetic):
    expected = []
    duration_base = ("istio_request_duration_milliseconds" if args.duration_unit == "ms"
                     else "istio_request_duration_seconds")
    buckets = DURATION_BUCKETS_MS if args.duration_unit == "ms" else DURATION_BUCKETS_S
    scale = 1.0 if args.duration_unit == "ms" else 0.001
    for e in edges:
        rows = []
        for reporter in e.reporters:
            if e.protocol == "tcp":
                labels = request_labels(e, reporter, None, None, "-")
                sent, received = e.tcp
                w.series("istio_tcp_sent_bytes", "counter", "istio_tcp_sent_bytes_total", labels,
                         "counter", sent * COUNTER_HEADSTART, sent)
                w.series("istio_tcp_received_bytes", "counter", "istio_tcp_received_bytes_total", labels,
                         "counter", received * COUNTER_HEADSTART, received)
                w.series("istio_tcp_connections_opened", "counter", "istio_tcp_connections_opened_total",
                         labels, "counter", 0.5 * COUNTER_HEADSTART, 0.5)
                w.series("istio_tcp_connections_closed", "counter", "istio_tcp_connections_closed_total",
                         labels, "counter", 0.5 * COUNTER_HEADSTART, 0.5)
                rows.append({"reporter": reporter, "sent_bytes": sent, "received_bytes": received,
                             "connections_opened": 0.5, "connections_closed": 0.5,
                             "connection_security_policy": dict(labels)["connection_security_policy"]})
                continue
            for code, grpc_status, flags, rate, source_only in e.codes:
                if source_only and reporter != "source":
                    continue
                labels = request_labels(e, reporter, code, grpc_status, flags)
                w.series("istio_requests", "counter", "istio_requests_total", labels, "counter",
                         rate * COUNTER_HEADSTART, rate)
                row = {"reporter": reporter, "response_code": code, "grpc_response_status": grpc_status,
                       "response_flags": flags, "rate": rate,
                       "connection_security_policy": dict(labels)["connection_security_policy"]}
                if not synthetic:
                    # Client-side failures return fast.
                    mean = 1.0 if flags != "-" else e.latency
                    histogram(w, duration_base, buckets, labels, rate, mean, scale)
                    row["duration_mean"] = mean * scale
                    if e.req_size is not None:
                        histogram(w, "istio_request_bytes", SIZE_BUCKETS, labels, rate, e.req_size)
                        histogram(w, "istio_response_bytes", SIZE_BUCKETS, labels, rate, e.resp_size)
                        row["request_bytes_mean"] = e.req_size
                        row["response_bytes_mean"] = e.resp_size
                rows.append(row)
        expected.append({
            "source": None if e.src is None else {
                "workload": e.src.name, "namespace": e.src.namespace, "app": e.src.app,
                "version": e.src.version},
            "destination": {
                "service": e.fqdn(), "service_name": e.service, "service_namespace": e.svc_ns,
                "workload": None if e.dst is None else e.dst.name,
                "namespace": None if e.dst is None else e.dst.namespace,
                "app": None if e.dst is None else e.dst.app,
                "version": None if e.dst is None else e.dst.version},
            "protocol": e.protocol, "mtls": e.mtls, "series": rows})
    return expected


def pod_labels(wl, pod, port):
    labels = [("namespace", wl.namespace), ("app", wl.app)]
    if wl.version:
        labels.append(("version", wl.version))
    labels += [("pod", pod), ("instance", "10.1.%d.%d:%d" % (hash_text(pod) % 250, hash_text(pod + "x") % 250, port)),
               ("job", "kubernetes-pods")]
    return labels


def emit_demo_gauges(w, workloads):
    """Envoy membership gauges, Vert.x metrics (reviews), Go runtime metrics (ratings)."""
    gauges = []
    by_app = {}
    for wl in workloads:
        by_app.setdefault(wl.app, []).append(wl)

    def gauge(name, labels, value, ftype="gauge", family=None):
        w.series(family or name, ftype, name, labels, "gauge", value)
        gauges.append({"name": name, "labels": dict(labels), "value": value})

    # Envoy cluster membership: each pod of a service reports its inbound cluster (itself);
    # each calling pod reports the outbound cluster of the service it calls (all endpoints).
    callers = {"productpage": ["istio-ingressgateway"], "reviews": ["productpage"],
               "ratings": ["reviews"]}
    for svc, caller_apps in callers.items():
        members = [wl for wl in by_app[svc]]
        endpoints = sum(wl.pods for wl in members)
        inbound = "envoy_cluster_inbound_9080__%s_bookinfo_svc_cluster_local_membership_" % svc
        outbound = "envoy_cluster_outbound_9080__%s_bookinfo_svc_cluster_local_membership_" % svc
        for wl in members:
            for pod in wl.pod_names():
                gauge(inbound + "healthy", pod_labels(wl, pod, 15090), 1)
                gauge(inbound + "total", pod_labels(wl, pod, 15090), 1)
        for app in caller_apps:
            for wl in by_app[app]:
                if svc == "ratings" and wl.version == "v1":
                    continue  # reviews-v1 does not call ratings
                for pod in wl.pod_names():
                    gauge(outbound + "healthy", pod_labels(wl, pod, 15090), endpoints)
                    gauge(outbound + "total", pod_labels(wl, pod, 15090), endpoints)

    # Vert.x (Micrometer Prometheus registry) for app reviews.
    for wl in by_app["reviews"]:
        for pod in wl.pod_names():
            base = pod_labels(wl, pod, 9080)
            rate = {"v1": 5.0, "v2": 3.0, "v3": 2.0}[wl.version]
            for method, code, share in (("GET", "200", 0.9), ("GET", "500", 0.1)):
                labels = base + [("method", method), ("code", code), ("route", "/reviews/:id")]
                w.series("vertx_http_server_requests", "counter", "vertx_http_server_requests_total",
                         labels, "counter", rate * share * COUNTER_HEADSTART, rate * share)
                w.series("vertx_http_server_requestCount", "counter", "vertx_http_server_requestCount_total",
                         labels, "counter", rate * share * COUNTER_HEADSTART, rate * share)
                histogram(w, "vertx_http_server_responseTime_seconds", VERTX_BUCKETS, labels,
                          rate * share, 0.02 if code == "200" else 0.2)
            gauge("vertx_http_server_connections", base, 4)
            gauge("vertx_http_server_active_requests", base, 1)

    # Go runtime (client_golang's collector) for app ratings.
    for wl in by_app["ratings"]:
        for pod in wl.pod_names():
            base = pod_labels(wl, pod, 9080)
            gauge("go_goroutines", base, 42)
            gauge("go_threads", base, 12)
            gauge("go_memstats_alloc_bytes", base, 4.5e6)
            gauge("go_memstats_heap_alloc_bytes", base, 4.5e6)
            gauge("go_memstats_heap_inuse_bytes", base, 6.2e6)
            gauge("go_memstats_sys_bytes", base, 2.1e7)
            for q, v in (("0", 2e-5), ("0.25", 4e-5), ("0.5", 6e-5), ("0.75", 9e-5), ("1", 4e-4)):
                gauge("go_gc_duration_seconds", base + [("quantile", q)], v, "summary",
                      "go_gc_duration_seconds")
            w.series("go_gc_duration_seconds", "summary", "go_gc_duration_seconds_sum", base,
                     "counter", 0.5, 0.0001)
            w.series("go_gc_duration_seconds", "summary", "go_gc_duration_seconds_count", base,
                     "counter", 5000.0, 0.5)
            w.series("go_memstats_alloc_bytes_total", "counter", "go_memstats_alloc_bytes_total", base,
                     "counter", 1e10, 2e5)
    return gauges


def is_fresh(path, max_age):
    try:
        return time.time() - os.stat(path).st_mtime < max_age
    except OSError:
        return False


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="output file (default: stdout)")
    p.add_argument("--end", default="now", help="last timestamp: 'now' or Unix seconds")
    p.add_argument("--minutes", type=float, default=60, help="length of the window (default 60)")
    p.add_argument("--step", type=int, default=15, help="seconds between samples (default 15)")
    p.add_argument("--topology", choices=["demo", "synthetic"], default="demo")
    p.add_argument("--namespaces", type=int, default=10, help="synthetic: namespaces")
    p.add_argument("--workloads", type=int, default=5, help="synthetic: workloads per namespace")
    p.add_argument("--duration-unit", choices=["ms", "s"], default="ms",
                   help="ms: istio_request_duration_milliseconds; s: the older _seconds")
    p.add_argument("--expected", help="also write the emitted rates and gauges as JSON here")
    p.add_argument("--if-stale", nargs="?", const="", metavar="FILE|SECONDS",
                   help="do nothing when FILE (default: --out) is younger than --max-age; "
                        "a number instead of FILE is the maximum age for --out")
    p.add_argument("--max-age", type=float, default=600, help="seconds, for --if-stale (default 600)")
    args = p.parse_args(argv)

    if args.step <= 0 or args.minutes <= 0:
        p.error("--step and --minutes must be positive")
    if args.if_stale is not None:
        target = args.if_stale or args.out
        try:
            # `--if-stale 600`: a maximum age in seconds for --out.
            args.max_age = float(args.if_stale)
            target = args.out
        except ValueError:
            pass
        if not target:
            p.error("--if-stale needs a FILE or --out")
        if is_fresh(target, args.max_age) and (not args.expected or is_fresh(args.expected, args.max_age)):
            return 0
    if args.end == "now":
        end = int(time.time())
    else:
        try:
            end = int(args.end)
        except ValueError:
            p.error("--end must be 'now' or Unix seconds")
    count = int(args.minutes * 60 // args.step)
    times = [end - (count - i) * args.step for i in range(count + 1)]

    if args.topology == "demo":
        edges, workloads = demo_topology()
    else:
        edges, workloads = synthetic_topology(args.namespaces, args.workloads)

    out_dir = os.path.dirname(os.path.abspath(args.out)) if args.out else None
    if args.out:
        fd, tmp = tempfile.mkstemp(prefix=".gen_traffic.", dir=out_dir)
        os.chmod(tmp, 0o644)
        out = os.fdopen(fd, "w", buffering=1 << 20)
    else:
        tmp, out = None, sys.stdout
    try:
        w = Writer(out, times, args.topology == "synthetic")
        expected_edges = emit_edges(w, edges, args, args.topology == "synthetic")
        gauges = emit_demo_gauges(w, workloads) if args.topology == "demo" else []
        w.write()
        if tmp:
            out.close()
            # Atomic replace: a reader never sees half a file.
            os.replace(tmp, args.out)
            tmp = None
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
    if args.expected:
        doc = {"start": times[0], "end": times[-1], "step": args.step, "topology": args.topology,
               "duration_metric": ("istio_request_duration_milliseconds" if args.duration_unit == "ms"
                                   else "istio_request_duration_seconds"),
               "edges": expected_edges, "gauges": gauges}
        with open(args.expected, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
