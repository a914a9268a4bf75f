# Writes the demo manifests of config/demo/ (run from the repository root:
#   python3 crates/cluster/scripts/gen_demo_manifests.py config/demo). Needs PyYAML.
import json, sys
out = sys.argv[1]
TS = "2026-01-01T00:00:00Z"
SC = json.dumps({"version": "demo", "initContainers": ["istio-init"], "containers": ["istio-proxy"], "volumes": ["istio-envoy", "istio-certs"]})
rv = [100]
uid = [0]
def meta(name, ns=None, labels=None, annotations=None, owner=None):
    rv[0] += 1; uid[0] += 1
    m = {"name": name}
    if ns: m["namespace"] = ns
    m["uid"] = "00000000-0000-4000-8000-%012d" % uid[0]
    m["resourceVersion"] = str(rv[0])
    m["creationTimestamp"] = TS
    if labels: m["labels"] = labels
    if annotations: m["annotations"] = annotations
    if owner: m["ownerReferences"] = [owner]
    return m
import yaml
def y(doc, ind=0):
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=200).rstrip("\n")
docs = {}
def add(f, d): docs.setdefault(f, []).append(d)

def ns(name, f, labels=None):
    add(f, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(name, labels=labels), "status": {"phase": "Active"}})

def deploy(f, namespace, name, app, version, replicas, sidecar, port=None, svc=None, extra_labels=None, pod_ann=None, ports_proto="http"):
    labels = {"app": app}
    if version: labels["version"] = version
    if extra_labels: labels.update(extra_labels)
    tann = dict(pod_ann or {})
    d = {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": meta(name, namespace, labels=dict(labels)),
         "spec": {"replicas": replicas, "selector": {"matchLabels": dict(labels)},
                  "template": {"metadata": {"labels": dict(labels), **({"annotations": tann} if tann else {})},
                               "spec": {"containers": [{"name": app, "image": "example/%s:%s" % (app, version or "latest")}]}}},
         "status": ({"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas} if replicas else {"observedGeneration": 1})}
    add(f, d)
    h = "%08x" % (abs(hash(name)) % (16**8))
    h = "".join(c for c in name.encode().hex()[:9])
    rsname = "%s-%s" % (name, h)
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": meta(rsname, namespace, labels=dict(labels), owner={"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": d["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}),
          "spec": {"replicas": replicas, "selector": {"matchLabels": dict(labels)}, "template": d["spec"]["template"]},
          "status": {"replicas": replicas, "availableReplicas": replicas, "readyReplicas": replicas} if replicas else {"replicas": 0}}
    add(f, rs)
    for i in range(replicas):
        ann = dict(tann)
        if sidecar: ann["sidecar.istio.io/status"] = SC
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": meta("%s-%s" % (rsname, "abcde"[i:] + "x" * i), namespace, labels=dict(labels), annotations=ann or None,
                                owner={"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rsname, "uid": rs["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}),
               "spec": {"containers": [{"name": app, "image": "example/%s:%s" % (app, version or "latest")}] + ([{"name": "istio-proxy", "image": "istio/proxyv2:1.20.0"}] if sidecar else [])},
               "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}], "podIP": "10.1.0.%d" % (10 + uid[0] % 200)}}
        add(f, pod)

def service(f, namespace, name, app, port, proto="http", extra_sel=None, pname=None):
    sel = {"app": app}
    if extra_sel: sel.update(extra_sel)
    add(f, {"apiVersion": "v1", "kind": "Service", "metadata": meta(name, namespace, labels={"app": app, "service": name}),
            "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.%d" % (10 + uid[0] % 200), "selector": sel,
                     "ports": [{"name": pname or proto, "port": port, "protocol": "TCP", "targetPort": port}]}})

# istio-system
f = "istio-system.yaml"
ns("istio-system", f)
deploy(f, "istio-system", "istio-ingressgateway", "istio-ingressgateway", None, 1, True, extra_labels={"istio": "ingressgateway"})
service(f, "istio-system", "istio-ingressgateway", "istio-ingressgateway", 80, extra_sel={"istio": "ingressgateway"}, pname="http2")

f = "bookinfo.yaml"
ns("bookinfo", f, labels={"istio-injection": "enabled"})
for name, app, ver, rep, sc in [("productpage-v1", "productpage", "v1", 1, True), ("details-v1", "details", "v1", 1, False),
                                ("reviews-v1", "reviews", "v1", 1, True), ("reviews-v2", "reviews", "v2", 1, True),
                                ("reviews-v3", "reviews", "v3", 1, True), ("ratings-v1", "ratings", "v1", 1, True),
                                ("ratings-v2", "ratings", "v2", 0, True), ("mongodb-v1", "mongodb", "v1", 1, True),
                                ("notifications-v1", "notifications", "v1", 1, True)]:
    ann = {"kiali.io/runtimes": "vertx-server"} if name == "reviews-v1" else None
    deploy(f, "bookinfo", name, app, ver, rep, sc, pod_ann=ann)
for name, port, proto in [("productpage", 9080, "http"), ("details", 9080, "http"), ("reviews", 9080, "http"),
                          ("ratings", 9080, "http"), ("mongodb", 27017, "tcp"), ("notifications", 9080, "http")]:
    service(f, "bookinfo", name, name, port, pname=("mongo" if proto == "tcp" else "http"))
add(f, {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta("productpage", "bookinfo", labels={"app": "productpage"}),
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "productpage-v1"}, "minReplicas": 1, "maxReplicas": 5,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]},
        "status": {"observedGeneration": 1, "lastScaleTime": TS, "currentReplicas": 1, "desiredReplicas": 1,
                   "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12, "averageValue": "12m"}}}]}})

f = "mesh-config.yaml"
NET = "networking.istio.io/v1beta1"
def mc(kind, name, spec):
    add(f, {"apiVersion": NET, "kind": kind, "metadata": meta(name, "bookinfo"), "spec": spec})
mc("Gateway", "bookinfo-gateway", {"selector": {"istio": "ingressgateway"}, "servers": [{"port": {"number": 80, "name": "http", "protocol": "HTTP"}, "hosts": ["*"]}]})
mc("VirtualService", "bookinfo", {"hosts": ["*"], "gateways": ["bookinfo-gateway"], "http": [{"route": [{"destination": {"host": "productpage", "port": {"number": 9080}}}]}]})
mc("VirtualService", "reviews", {"hosts": ["reviews"], "http": [{"route": [
    {"destination": {"host": "reviews", "subset": "v1"}, "weight": 50},
    {"destination": {"host": "reviews", "subset": "v2"}, "weight": 30},
    {"destination": {"host": "reviews", "subset": "v3"}, "weight": 20}]}]})
mc("VirtualService", "ratings", {"hosts": ["ratings"], "http": [{"route": [
    {"destination": {"host": "ratings", "subset": "v1"}, "weight": 70},
    {"destination": {"host": "ratings", "subset": "v2"}, "weight": 20}]}]})
mc("DestinationRule", "reviews", {"host": "reviews", "subsets": [{"name": v, "labels": {"version": v}} for v in ("v1", "v2", "v3")]})
mc("DestinationRule", "ratings", {"host": "ratings", "trafficPolicy": {
    "connectionPool": {"tcp": {"maxConnections": 100}, "http": {"http1MaxPendingRequests": 10, "maxRequestsPerConnection": 1}},
    "outlierDetection": {"consecutive5xxErrors": 5, "interval": "10s", "baseEjectionTime": "30s", "maxEjectionPercent": 100}},
    "subsets": [{"name": v, "labels": {"version": v}} for v in ("v1", "v2")]})
mc("ServiceEntry", "books-api", {"hosts": ["api.books.example.com"], "location": "MESH_EXTERNAL", "resolution": "DNS",
                                 "ports": [{"number": 80, "name": "http", "protocol": "HTTP"}]})

f = "kube-system.yaml"
ns("kube-system", f)
deploy(f, "kube-system", "coredns", "coredns", None, 1, False, extra_labels={"k8s-app": "kube-dns"})
service(f, "kube-system", "kube-dns", "coredns", 53, pname="dns")

import os
hdr = {"istio-system.yaml": "The mesh's own namespace: the ingress gateway.",
       "bookinfo.yaml": "The bookinfo app: workloads (Deployment -> ReplicaSet -> Pods), services, the HPA.",
       "mesh-config.yaml": "Mesh config of bookinfo; VirtualService `ratings` is broken on purpose (weights sum to 90).",
       "kube-system.yaml": "Hidden by cluster.exclude_namespaces: nothing here may appear in any answer."}
for fn, ds in docs.items():
    with open(os.path.join(out, fn), "w") as fh:
        fh.write("# %s\n# Kubernetes manifests as `kubectl get -o yaml` would give them.\n" % hdr[fn])
        for d in ds:
            fh.write("---\n" + y(d) + "\n")
