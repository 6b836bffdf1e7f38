#!/usr/bin/env python3
"""The rebalancer at scale with the real binary (bench/README.md, "Rebalancing at scale").

The real dynamic-scheduler against the Kubernetes API simulator with N nodes and P pods, 1 % of the
nodes hot: real Prometheus and pushgateway, `bench_cpu{node}` for every node (hot nodes at 95 %),
`bench_pod_cpu{namespace,pod,node}` (cores) for the pods of the hot nodes only, a rule with
`resource: cpu` and a `rebalance:` section. Measures the controller's RSS (after sync, peak),
the CPU of its rebalance step (dynamic_scheduler_last_rebalance_cpu_seconds, per cycle) and its process
CPU per cycle with and without the `rebalance:` section, the API requests it sends per cycle (the
simulator's request log), and its evictions against the configured limits. Connections stay open
(the simulator's -keep_alive), as with a real API server, unless --no-keep-alive.

  bench/rebalance_scale.py --nodes 200 --pods 2000 --run-seconds 60     # quick check
  bench/rebalance_scale.py                                              # 10,000 nodes, 300,000 pods

Pods: the hot nodes' pods are POSTed one by one with spec.nodeName (bound at once, Running after
-pod_start_seconds) and a controller ownerReference (kind ReplicaSet) of their own ReplicaSet; the
other nodes' pods come from one simulator workload (/sim/workloads) whose template names one node
at a time (spec.nodeName), replicas raised by the pods per node each time: the simulator's
ReplicaSet stand-in then creates them bound. Each POST and each workload change costs the
simulator a scan of every pod, so the filler is created in the order the controller would look at
nodes (coldest first) and stops at --create-seconds; the report says how many pods were created.
An eviction is followed as a ReplicaSet would: the evicted pod's usage leaves its node, and a
replacement with the same labels and owner is created bound to a cold node.
"""
import argparse
import http.client as httpclient
import json
import os
import random
import ssl
import statistics
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "test", "integration"))
from harness import Controller, http, wait_until  # noqa: E402
from run_bench import Cluster, controller_metrics, rss_bytes, summary  # noqa: E402
from test_rebalance import deploy_rbac  # noqa: E402

ALLOCATABLE_CORES = 3.92  # the simulator's nodes: allocatable cpu 3920m
HOT_PERCENT = 95.0

RULE = """
missingDataGrace: 60s
rules:
  - {name: cpu, query: "max by (node) (bench_cpu)", operator: ">", threshold: 80, clearThreshold: 70,
     resource: cpu}
"""
REBALANCE = """rebalance:
  after: 0s
  holdAfterEviction: 5m
  podUsage:
    cpu: "{usage}"
  minPodAge: 0s
  limits: {{perCycle: {per_cycle}, perHour: {per_hour}, perNodePerHour: {per_node_per_hour},
           nodeCooldown: {cooldown}s, perWorkload: 1}}
"""
USAGE_QUERIES = {"plain": "sum by (namespace, pod) (bench_pod_cpu)",
                 "nodes": 'sum by (namespace, pod) (bench_pod_cpu{node=~\\"$nodes\\"})'}


# --------------------------------------------------------------------------------------------
class RequestLog:
    """The controller's requests, from the simulator's own log (-request_log: one line per
    request, "<epoch s> <user> <METHOD> <target>"), so that connections stay open as with a real
    API server. This script and its load generator are another user (admin)."""

    def __init__(self, sim_dir, user="dynamic-scheduler"):
        self.path = os.path.join(sim_dir, "requests.log")
        self.user = user

    def since(self, t0, t1=None):
        out = []
        try:
            with open(self.path) as f:
                for line in f:
                    parts = line.rstrip("\n").split(" ", 3)
                    if len(parts) == 4 and parts[1] == self.user:
                        t = float(parts[0])
                        if t >= t0 and (t1 is None or t < t1):
                            out.append((t, parts[2], parts[3]))
        except FileNotFoundError:
            pass
        return out


def classify(method, target):
    """A request's kind; pod LISTs say which selector they carry."""
    u = urllib.parse.urlsplit(target)
    q = urllib.parse.parse_qs(u.query)
    p = u.path
    watch = q.get("watch", ["0"])[0] in ("1", "true")
    if p == "/api/v1/nodes":
        return "WATCH nodes" if watch else "LIST nodes"
    if p.startswith("/api/v1/nodes/"):
        return method + " node"
    parts = p.split("/")
    if p == "/api/v1/pods" or (p.startswith("/api/v1/namespaces/") and len(parts) == 6 and parts[5] == "pods"):
        if method != "GET":
            return method + " pods"
        if watch:
            return "WATCH pods"
        scope = "all namespaces" if p == "/api/v1/pods" else "one namespace"
        sel = [s for s in ("fieldSelector", "labelSelector") if s in q]
        if not sel:
            return "LIST pods, %s, NO selector" % scope
        return "LIST pods, %s, %s" % (scope, "+".join(sel))
    if p.endswith("/eviction"):
        return "POST eviction"
    if "/events" in p:
        return method + " events"
    if "/leases" in p:
        return method + " lease"
    return method + " " + "/".join(parts[:5])


# --------------------------------------------------------------------------------------------
class Sim:
    """The simulator's API as admin, one TLS connection per request."""

    def __init__(self, cluster):
        s = cluster.stack
        self.port = s.sim_port
        self.dir = s.sim_dir
        self.ctx = cluster.ctx

    def call(self, method, path, body=None, ok=(200, 201)):
        c = httpclient.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=120)
        try:
            c.request(method, path, json.dumps(body) if body is not None else None,
                      {"Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
        finally:
            c.close()
        if r.status not in ok:
            raise RuntimeError("%s %s: %d %s" % (method, path, r.status, data[:300]))
        return json.loads(data) if data else {}


# --pod-padding: an annotation of that many bytes on every pod, for pods the size of a real API
# server's (managedFields, a fuller status) rather than the simulator's own.
POD_ANNOTATIONS = {}


# The term the README asks workloads to carry: without it the rebalancer evicts nothing (its
# replacement would come back, rebalance/steering.h).
AFFINITY = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [
        {"key": "status", "operator": "NotIn", "values": ["presure"]}]}}]}}


def pod_body(name, node, labels, owner):
    return {"metadata": {"name": name, "labels": labels, "annotations": dict(POD_ANNOTATIONS),
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                              "uid": "uid-" + owner, "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": {"nodeName": node, "affinity": AFFINITY,
                     "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}


def _post_pods(args):
    port, sim_dir, items = args
    ctx = ssl.create_default_context(cafile=os.path.join(sim_dir, "ca.crt"))
    ctx.load_cert_chain(os.path.join(sim_dir, "admin.crt"), os.path.join(sim_dir, "admin.key"))
    for ns, body in items:
        for attempt in range(5):
            try:
                c = httpclient.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=120)
                c.request("POST", "/api/v1/namespaces/%s/pods" % ns, json.dumps(body),
                          {"Content-Type": "application/json"})
                r = c.getresponse()
                data = r.read()
                c.close()
                if r.status == 201 or r.status == 409:
                    break
                raise RuntimeError("create pod: %d %s" % (r.status, data[:200]))
            except OSError:
                time.sleep(0.2 * (attempt + 1))
        else:
            raise RuntimeError("create pod %s/%s failed" % (ns, body["metadata"]["name"]))
    return len(items)


class Load:
    """The hot nodes' pods and their usage; node usage follows evictions (see the docstring)."""

    def __init__(self, cluster, sim, hot, cold_load, pods_per_node, rng, usage_mode):
        self.c, self.sim, self.hot, self.cold_load, self.rng = cluster, sim, hot, cold_load, rng
        self.per_node = pods_per_node
        self.usage_mode = usage_mode
        self.hot_set = set(hot)
        self.pods = {}  # (ns, name) -> {"node", "cores", "labels", "owner"}
        self.lock = threading.Lock()
        self.evictions = []  # (time, "ns/name", node)
        self.other_writes = []
        self.replacements = 0
        self.stopping = threading.Event()
        self.log_offset = 0
        self.errors = []

    def plan_hot_pods(self):
        total = ALLOCATABLE_CORES * HOT_PERCENT / 100
        for h, node in enumerate(self.hot):
            weights = [self.rng.uniform(0.5, 1.5) for _ in range(self.per_node)]
            scale = total / sum(weights)
            for k in range(self.per_node):
                i = h * self.per_node + k
                rs = "svc-%04d" % (i % 1000)
                ns = "team-%02d" % (i % 1000 % 20)
                name = "%s-%s-%05d" % (rs, "x%04d" % h, i)
                self.pods[(ns, name)] = {"node": node, "cores": weights[k] * scale, "owner": rs,
                                         "labels": {"app": rs, "pod-template-hash": "h" + rs[4:]}}

    def create_hot_pods(self, procs=4):
        from multiprocessing import Pool
        items = [(ns, pod_body(name, p["node"], p["labels"], p["owner"])) for (ns, name), p in self.pods.items()]
        chunks = [(self.sim.port, self.sim.dir, items[i::procs]) for i in range(procs)]
        with Pool(procs) as pool:
            return sum(pool.map(_post_pods, chunks))

    def node_percent(self):
        used = {n: 0.0 for n in self.hot}
        with self.lock:
            for p in self.pods.values():
                if p["node"] in used:
                    used[p["node"]] += p["cores"]
        return {n: 100 * v / ALLOCATABLE_CORES for n, v in used.items()}

    def push(self):
        with self.lock:
            lines = ['bench_pod_cpu{namespace="%s",pod="%s",node="%s"} %r\n' % (ns, name, p["node"], p["cores"])
                     for (ns, name), p in self.pods.items() if p["node"] in self.hot_set]
        body = "# TYPE bench_pod_cpu gauge\n" + "".join(lines)
        code, text = http("PUT", "%s/metrics/job/bench_pod_cpu/instance/hot" % self.c.stack.pgw, body.encode())
        assert code == 200, (code, text)
        self.c.push_group("bench_cpu", "hot", self.node_percent())

    def push_cold(self):
        self.c.push_group("bench_cpu", "cold", self.cold_load)

    def follow(self):
        """Reads the simulator's write log (its file: the in-memory log of a big run is too big
        to fetch) and follows each eviction."""
        path = os.path.join(self.sim.dir, "writes.jsonl")
        with open(path, "rb") as f:
            f.seek(self.log_offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.log_offset += end
        changed = False
        cold_nodes = sorted(self.cold_load, key=self.cold_load.get)[: max(50, len(self.cold_load) // 10)]
        for line in data[:end].splitlines():
            w = json.loads(line)
            if w["user"] != "dynamic-scheduler":
                continue
            if w["verb"] != "EVICT":
                self.other_writes.append((w["time"], w["verb"], w["name"], w["code"]))
                continue
            ns, name = w["name"].split("/", 1)
            with self.lock:
                p = self.pods.get((ns, name))
            self.evictions.append({"time": w["time"], "pod": w["name"], "code": w["code"],
                                   "node": p["node"] if p else None})
            if w["code"] != 201 or p is None:
                continue
            new = {"node": self.rng.choice(cold_nodes), "cores": p["cores"], "owner": p["owner"],
                   "labels": p["labels"]}
            new_name = name + "-r"
            with self.lock:
                del self.pods[(ns, name)]
                self.pods[(ns, new_name)] = new
            self.sim.call("POST", "/api/v1/namespaces/%s/pods" % ns,
                          pod_body(new_name, new["node"], new["labels"], new["owner"]))
            self.replacements += 1
            changed = True
        if changed:
            self.push()

    def run(self):
        while not self.stopping.is_set():
            try:
                self.follow()
            except Exception as e:  # keep following; reported
                self.errors.append(repr(e))
            self.stopping.wait(0.5)

    def start(self):
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def stop(self):
        self.stopping.set()
        self.thread.join(10)


def create_filler(sim, nodes_in_order, per_node, budget_seconds, want):
    """One workload whose template names one node at a time (see the docstring); returns
    (pods created, nodes filled, seconds, stopped_by_budget)."""
    t0 = time.monotonic()
    created = 0
    filled = 0
    report_at = t0 + 30
    for node in nodes_in_order:
        if created >= want:
            break
        if time.monotonic() - t0 > budget_seconds:
            return created, filled, time.monotonic() - t0, True
        n = min(per_node, want - created)
        sim.call("POST", "/sim/workloads", {
            "namespace": "filler", "name": "fill", "replicas": created + n,
            "template": {"metadata": {"labels": {"app": "fill", "pod-template-hash": "fill"},
                                      "annotations": dict(POD_ANNOTATIONS)},
                         "spec": {"nodeName": node, "containers": [{
                             "name": "app", "image": "registry.k8s.io/pause:3.9",
                             "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}})
        created += n
        filled += 1
        if time.monotonic() > report_at:
            report_at += 30
            print("  filler: %d pods on %d nodes in %.0f s" % (created, filled, time.monotonic() - t0), flush=True)
    return created, filled, time.monotonic() - t0, False


# --------------------------------------------------------------------------------------------
def ready(ctl, timeout=180):
    def ok():
        if not ctl.proc.alive():
            raise RuntimeError("the controller exited: " + ctl.proc.output()[-2000:])
        return ctl.get("/status")[0] == 200
    wait_until(ok, timeout, what="controller /status 200")


def proc_cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def observe(ctl, seconds, info):
    """Polls the controller from its start for `seconds`: cycles, its own per-cycle CPU figure,
    process CPU (utime+stime), RSS; every 0.25 s for the first 3 cycles (their ends date the
    first evictions), then once a second. info gets the RSS and time when /status first answers
    200 (after the initial sync)."""
    pid = ctl.proc.proc.pid
    rows = []
    t_start = time.time()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not ctl.proc.alive():
            raise RuntimeError("the controller exited: " + ctl.proc.output()[-2000:])
        try:
            if "ready_seconds" not in info and ctl.get("/status")[0] == 200:
                info["ready_seconds"] = time.time() - t_start
                info["rss_after_sync_mb"] = rss_bytes(ctl) / 1e6
                info["cpu_at_ready_s"] = proc_cpu_seconds(pid)
            m = controller_metrics(ctl)
        except OSError:
            time.sleep(0.1)
            continue
        rows.append({"t": time.time(), "load": os.getloadavg()[0],
                     # The last completed cycle, which the last-cycle figures describe
                     # (cycles_total counts a cycle as it starts).
                     "cycles": m.get("dynamic_scheduler_last_cycle_number",
                                     m.get("dynamic_scheduler_cycles_total", 0)),
                     "cycle_cpu": m.get("dynamic_scheduler_cycle_cpu_seconds", 0),
                     "rebalance_cpu": m.get("dynamic_scheduler_last_rebalance_cpu_seconds", 0),
                     "cycle_wall": m.get("dynamic_scheduler_last_cycle_duration_seconds", 0),
                     "proc_cpu": proc_cpu_seconds(pid), "rss": rss_bytes(ctl), "m": m})
        time.sleep(0.25 if rows[-1]["cycles"] < 3 else 1.0)
    info["rss_hwm_mb"] = proc_status(pid, "VmHWM") / 1e6
    info["rss_end_mb"] = rows[-1]["rss"] / 1e6
    info["initial_sync_seconds"] = rows[-1]["m"].get("dynamic_scheduler_node_cache_initial_sync_seconds")
    return rows


def per_cycle(rows):
    """Process CPU per cycle from the first completed cycle on (the initial sync excluded), and
    the controller's own cycle CPU figures (one per cycle seen)."""
    rows = [r for r in rows if r["cycles"] >= 1] or rows
    first, last = rows[0], rows[-1]
    cycles = last["cycles"] - first["cycles"]
    own, seen = [], set()
    for r in rows[1:]:
        if r["cycles"] not in seen and r["cycles"] > first["cycles"]:
            seen.add(r["cycles"])
            own.append(r["cycle_cpu"])
    return {"cycles": cycles, "seconds": last["t"] - first["t"], "cycles_total": last["cycles"],
            "process_cpu_per_cycle_ms": 1000 * (last["proc_cpu"] - first["proc_cpu"]) / max(cycles, 1),
            "cycle_cpu_ms": {k: 1000 * v for k, v in summary(own).items() if k != "n"} | {"n": len(own)},
            "rss_max_sampled_mb": max(r["rss"] for r in rows) / 1e6}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--pods", type=int, default=300000)
    ap.add_argument("--hot-percent", type=float, default=1.0)
    ap.add_argument("--interval", type=int, default=10, help="controller -s")
    ap.add_argument("--run-seconds", type=int, default=240, help="with the rebalance: section")
    ap.add_argument("--baseline-seconds", type=int, default=60, help="same controller without rebalance:")
    ap.add_argument("--create-seconds", type=int, default=600, help="budget for creating the filler pods")
    ap.add_argument("--usage", choices=sorted(USAGE_QUERIES), default="plain",
                    help="podUsage query: plain, or naming $nodes")
    ap.add_argument("--per-cycle", type=int, default=2)
    ap.add_argument("--per-hour", type=int, default=20)
    ap.add_argument("--per-node-per-hour", type=int, default=3)
    ap.add_argument("--cooldown", type=int, default=30, help="nodeCooldown seconds")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-keep-alive", action="store_true",
                    help="the simulator closes every connection after one answer (its default), so each "
                         "request costs the controller a TLS handshake; API servers keep connections open")
    ap.add_argument("--pod-padding", type=int, default=0,
                    help="bytes of annotation added to every pod (the simulator's pods are smaller than a "
                         "real API server's, which carry managedFields)")
    ap.add_argument("--out", default=os.path.join(HERE, "rebalance_scale.json"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    if args.pod_padding > 0:
        POD_ANNOTATIONS["bench.dynamic-scheduler.io/padding"] = "x" * args.pod_padding
    n_hot = max(1, int(round(args.nodes * args.hot_percent / 100)))
    per_node = max(1, args.pods // args.nodes)
    res = {"command": " ".join(["bench/rebalance_scale.py"] + sys.argv[1:]),
           "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "nodes": args.nodes, "pods_wanted": args.pods, "hot_nodes": n_hot, "pods_per_node": per_node,
           "interval_s": args.interval, "usage_query": USAGE_QUERIES[args.usage].replace('\\"', '"'),
           "limits": {"perCycle": args.per_cycle, "perHour": args.per_hour,
                      "perNodePerHour": args.per_node_per_hour, "nodeCooldown_s": args.cooldown,
                      "perWorkload": 1}}

    cluster = Cluster(args.nodes)
    tmp_rbac = "/tmp/ds-rebalance-scale-rbac-%d.json" % os.getpid()
    with open(tmp_rbac, "w") as f:
        json.dump(deploy_rbac(), f)
    cluster.stack.sim_args = ["-rbac", tmp_rbac, "-pod_start_seconds", "1", "-pod_grace_seconds", "1"]
    cluster.stack.sim_args.append("-request_log")  # the controller's requests, counted below
    if not args.no_keep_alive:  # as a real API server: no TLS handshake per request
        cluster.stack.sim_args.append("-keep_alive")
    load = None
    ctl = None
    try:
        t = time.monotonic()
        cluster.start()
        print("stack up in %.1f s (%d nodes)" % (time.monotonic() - t, args.nodes), flush=True)
        sim = Sim(cluster)
        names = list(cluster.names)
        hot = sorted(rng.sample(names, n_hot))
        hot_set = set(hot)
        cold_load = {n: round(rng.uniform(20, 60), 1) for n in names if n not in hot_set}
        load = Load(cluster, sim, hot, cold_load, per_node, rng, args.usage)
        load.plan_hot_pods()

        # Pods: the hot nodes' pods first (one POST each), then the filler, coldest nodes first.
        t = time.monotonic()
        n_hot_pods = load.create_hot_pods()
        hot_secs = time.monotonic() - t
        print("hot pods: %d in %.1f s" % (n_hot_pods, hot_secs), flush=True)
        order = sorted(cold_load, key=cold_load.get)
        filler, filled, fill_secs, cut = create_filler(sim, order, per_node, args.create_seconds,
                                                       args.pods - n_hot_pods)
        sample = sim.call("GET", "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s" % hot[0]).get("items", [])
        res["pod_json_bytes"] = round(sum(len(json.dumps(i, separators=(",", ":"))) for i in sample)
                                      / max(1, len(sample)))
        stats = sim.call("GET", "/sim/stats")
        res["pods"] = {"created": stats["pods"], "hot_pods": n_hot_pods, "hot_pods_seconds": hot_secs,
                       "filler_pods": filler, "filler_nodes": filled, "filler_seconds": fill_secs,
                       "filler_stopped_by_budget": cut, "total_seconds": hot_secs + fill_secs}
        print("pods: %s" % json.dumps(res["pods"]), flush=True)
        sim.call("DELETE", "/sim/writes")  # the in-memory copy; the file keeps everything
        load.log_offset = os.path.getsize(os.path.join(sim.dir, "writes.jsonl"))
        wait_until(lambda: not sim.call("GET", "/api/v1/pods?fieldSelector=status.phase%21%3DRunning&limit=1")["items"],
                   120, interval=1, what="every pod Running")

        # Usage: cold nodes spread over 20..60 %, hot nodes at 95 % made of their pods' usage.
        load.push_cold()
        load.push()
        wait_until(lambda: cluster.count("bench_pod_cpu") == n_hot_pods, 60, what="pod series in Prometheus")
        wait_until(lambda: abs(float(cluster.stack.query('max(bench_cpu{node="%s"})' % hot[0])[0]["value"][1])
                               - load.node_percent()[hot[0]]) < 0.01, 60, what="hot node values in Prometheus")
        res["pod_series"] = n_hot_pods

        requests = RequestLog(sim.dir)
        kubeconfig = cluster.stack.kubeconfig
        common = ["-write_qps", "200", "-write_burst", "200"]

        # Baseline: the same rule without the rebalance: section.
        if args.baseline_seconds > 0:
            t0 = time.time()
            ctl = Controller(cluster.stack, RULE, args=common, kubeconfig=kubeconfig, name="controller-baseline",
                             interval=args.interval)
            info = {}
            rows = observe(ctl, args.baseline_seconds, info)
            res["baseline"] = per_cycle(rows) | info
            res["baseline"]["requests"] = count_requests(requests.since(t0, rows[-1]["t"]), rows[-1]["cycles"])
            ctl.stop()
            ctl = None
            print("baseline: %s" % json.dumps(res["baseline"]), flush=True)
            wait_until(lambda: len(cluster.labelled()) == n_hot, 30, interval=1, what="hot nodes marked")
            # The marks stay: the next controller (same identity) finds them with their records.

        # The rebalancer.
        rule = RULE + REBALANCE.format(usage=USAGE_QUERIES[args.usage], per_cycle=args.per_cycle,
                                       per_hour=args.per_hour, per_node_per_hour=args.per_node_per_hour,
                                       cooldown=args.cooldown)
        res["rule_yaml"] = rule
        load.start()
        t_start = time.time()
        ctl = Controller(cluster.stack, rule, args=common, kubeconfig=kubeconfig, name="controller-rebalance",
                         interval=args.interval)
        info = {}
        rows = observe(ctl, args.run_seconds, info)
        res.update({k: info[k] for k in ("ready_seconds", "rss_after_sync_mb", "initial_sync_seconds") if k in info})
        run = per_cycle(rows)
        run.update(info)
        loads = [r["load"] for r in rows]
        res["machine_load"] = "%.1f-%.1f (1-minute load average on %d cores, sampled with each poll)" % (
            min(loads), max(loads), os.cpu_count())
        reqs = requests.since(t_start, rows[-1]["t"])
        run["requests"] = count_requests(reqs, rows[-1]["cycles"])
        run["pod_lists"] = [target for _, method, target in reqs
                            if classify(method, target).startswith("LIST pods")]
        m = rows[-1]["m"]
        run["controller_metrics"] = {k: v for k, v in m.items() if "evict" in k or "rebalance" in k or "skips" in k}
        # Cycle ends (for per-cycle eviction counts): the first sample that saw each new count.
        ends = [(b["t"], b["cycles"]) for a, b in zip(rows, rows[1:]) if b["cycles"] > a["cycles"]]
        lists_by_cycle = {}
        for t, method, target in reqs:
            if classify(method, target).startswith("LIST pods"):
                c = next((n for te, n in ends if te >= t), None)
                lists_by_cycle[c] = lists_by_cycle.get(c, 0) + 1
        run["pod_lists_per_cycle"] = {"max": max(lists_by_cycle.values(), default=0),
                                      "cycles_with_lists": len(lists_by_cycle),
                                      "histogram": {str(k): v for k, v in sorted(lists_by_cycle.items(),
                                                                                 key=lambda kv: kv[0] or 0)}}
        time.sleep(1.5)
        load.follow()
        load.stop()
        run["pacing"] = pacing(load.evictions, ends, t_start, args)
        # Per cycle: the controller's own CPU and wall figures, its phases, pod LISTs, evictions.
        detail = []
        for a, b in zip(rows, rows[1:]):
            if b["cycles"] > a["cycles"]:
                detail.append({"cycle": b["cycles"], "cpu_ms": 1000 * b["cycle_cpu"], "wall_ms": 1000 * b["cycle_wall"],
                               "rebalance_cpu_ms": 1000 * b["rebalance_cpu"],
                               "phases_ms": {k.split('"')[1]: round(1000 * v, 2) for k, v in b["m"].items()
                                             if k.startswith("dynamic_scheduler_cycle_phase_seconds{")},
                               "pod_lists": lists_by_cycle.get(b["cycles"], 0),
                               "evictions": sum(1 for e in load.evictions if e.get("cycle") == b["cycles"])})
        run["per_cycle"] = detail
        for d in detail:
            print("cycle %d: cpu %.1f ms (rebalance step %.1f ms), wall %.0f ms, %d pod LISTs, %d evictions, phases %s" % (
                d["cycle"], d["cpu_ms"], d["rebalance_cpu_ms"], d["wall_ms"], d["pod_lists"], d["evictions"],
                d["phases_ms"]))
        run["evictions"] = load.evictions
        run["replacements_created"] = load.replacements
        run["other_controller_writes"] = {}
        for _, verb, _, code in load.other_writes:
            k = "%s %d" % (verb, code)
            run["other_controller_writes"][k] = run["other_controller_writes"].get(k, 0) + 1
        run["load_errors"] = load.errors[:5]
        res["run"] = run
        ctl.stop()
        print("run: %s" % json.dumps({k: v for k, v in run.items() if k not in ("pod_lists", "evictions")}), flush=True)
    except BaseException:
        if ctl is not None:
            print("controller log (tail):\n" + ctl.proc.output()[-3000:], file=sys.stderr)
        raise
    finally:
        if load is not None and not load.stopping.is_set():
            load.stopping.set()
        cluster.stop()
        os.remove(tmp_rbac)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    print(table(res))
    print("wrote", args.out)


def count_requests(reqs, cycles):
    out = {}
    for _, method, target in reqs:
        k = classify(method, target)
        out[k] = out.get(k, 0) + 1
    return {k: {"total": v, "per_cycle": v / max(cycles, 1)} for k, v in sorted(out.items())}


def pacing(evictions, ends, t0, args):
    """Evictions against the limits: per cycle, in the run (under an hour: perHour), per node
    per hour, and the gap between two cycles that evicted from one node (nodeCooldown: "the pods
    one cycle picks for a node are one plan", rebalance/eviction_budget.cc)."""
    done = [e for e in evictions if e["code"] == 201]
    for e in done:
        e["cycle"] = next((n for t, n in ends if t >= e["time"]), None)
    per_cycle_counts = {}
    for e in done:
        per_cycle_counts[e["cycle"]] = per_cycle_counts.get(e["cycle"], 0) + 1
    by_node = {}
    for e in done:
        by_node.setdefault(e["node"], []).append((e["time"], e["cycle"]))
    gaps, same_cycle = [], 0
    for evs in by_node.values():
        evs.sort()
        starts = []
        for i, (t, c) in enumerate(evs):
            if i and c == evs[i - 1][1]:
                same_cycle += 1
            else:
                starts.append(t)
        gaps += [b - a for a, b in zip(starts, starts[1:])]
    times = sorted(e["time"] for e in done)
    first_hour = [t for t in times if t < times[0] + 3600] if times else []
    return {"evicted": len(done), "refused_or_failed": len(evictions) - len(done),
            "max_per_cycle": max(per_cycle_counts.values()) if per_cycle_counts else 0,
            "cycles_with_evictions": len(per_cycle_counts),
            "per_cycle_histogram": {str(k): v for k, v in sorted(per_cycle_counts.items(), key=lambda kv: kv[0] or 0)},
            "in_first_hour": len(first_hour), "nodes_relieved": len(by_node),
            "max_per_node": max((len(v) for v in by_node.values()), default=0),
            "second_eviction_same_node_same_cycle": same_cycle,
            "min_gap_same_node_between_cycles_s": min(gaps) if gaps else None,
            "first_s": times[0] - t0 if times else None, "last_s": times[-1] - t0 if times else None,
            "ok": {"perCycle": all(v <= args.per_cycle for v in per_cycle_counts.values()),
                   "perHour": len(first_hour) <= args.per_hour,
                   "perNodePerHour": all(len(v) <= args.per_node_per_hour for v in by_node.values()),
                   "nodeCooldown": all(g >= args.cooldown - 0.5 for g in gaps)}}


def table(res):
    r, b = res.get("run", {}), res.get("baseline", {})
    p = res.get("pods", {})
    L = ["", "| figure | value | target |", "|---|---|---|",
         "| nodes / hot nodes / pods created | %d / %d / %d (wanted %d) | 10,000 / 100 / 300,000 |" % (
             res["nodes"], res["hot_nodes"], p.get("created", 0), res["pods_wanted"]),
         "| pod creation | %.0f s (hot pods %.0f s, filler %.0f s%s) | |" % (
             p.get("total_seconds", 0), p.get("hot_pods_seconds", 0), p.get("filler_seconds", 0),
             ", stopped by --create-seconds" if p.get("filler_stopped_by_budget") else ""),
         "| podUsage query | `%s` (%d pod series) | |" % (res["usage_query"], res.get("pod_series", 0)),
         "| pods per node / JSON bytes per pod in a LIST | %d / %s | |" % (
             res["pods_per_node"], res.get("pod_json_bytes", "?")),
         "| controller -s | %d s | |" % res["interval_s"]]
    if r:
        L += ["| RSS after sync (/status 200, %.1f s after start) | %.1f MB | <= 80 MB |" % (
                  res.get("ready_seconds", float("nan")), res.get("rss_after_sync_mb", float("nan"))),
              "| RSS max (VmHWM) / at the end | %.1f / %.1f MB | <= 80 MB |" % (r["rss_hwm_mb"], r["rss_end_mb"])]
    if b:
        L.append("| process CPU per cycle, no rebalance: (incl. the cycle that marks the hot nodes) "
                 "| %.1f ms (%d cycles; own figure p50 %.1f ms) | |" % (
                     b["process_cpu_per_cycle_ms"], b["cycles"], b["cycle_cpu_ms"]["p50"]))
    if r:
        L.append("| process CPU per cycle, with rebalance: | %.1f ms (%d cycles; own figure p50 %.1f, max %.1f ms) | |" % (
            r["process_cpu_per_cycle_ms"], r["cycles"], r["cycle_cpu_ms"]["p50"], r["cycle_cpu_ms"]["max"]))
        cyc = [d for d in r.get("per_cycle", []) if d["cpu_ms"] > 0]
        # The target: the step's own CPU, on the cycle's thread (dynamic_scheduler_last_rebalance_cpu_seconds).
        evicting = [d["rebalance_cpu_ms"] for d in cyc if d.get("evictions") and "rebalance_cpu_ms" in d]
        quiet = [d["rebalance_cpu_ms"] for d in cyc if not d.get("evictions") and "rebalance_cpu_ms" in d]
        if evicting:
            L.append("| rebalance step's own CPU, cycles that evict: median / max | %.1f / %.1f ms (%d cycles) "
                     "| <= 20 ms |" % (statistics.median(evicting), max(evicting), len(evicting)))
        if quiet:
            L.append("| rebalance step's own CPU, cycles that evict nothing: median / max | %.1f / %.1f ms "
                     "(%d cycles) | <= 20 ms |" % (statistics.median(quiet), max(quiet), len(quiet)))
        groups = (("that list pods", [d["cpu_ms"] for d in cyc if d["pod_lists"]]),
                  ("that list nothing", [d["cpu_ms"] for d in cyc if not d["pod_lists"]]))
        if b and cyc:
            L.append("| process CPU during the costliest cycle, minus the baseline p50 (all threads) | %.1f ms | |" % (
                max(d["cpu_ms"] for d in cyc) - b["cycle_cpu_ms"]["p50"]))
        for label, sel in groups:
            if sel and b:
                L.append("| process CPU during cycles %s, median minus the baseline p50 (all threads) | %.1f ms (%d cycles) | |" % (
                    label, statistics.median(sel) - b["cycle_cpu_ms"]["p50"], len(sel)))
        for k, v in r["requests"].items():
            L.append("| requests: %s | %d (%.2f per cycle) | %s |" % (
                k, v["total"], v["per_cycle"], "0" if "NO selector" in k else ""))
        pc = r["pacing"]
        L.append("| pod LISTs in one cycle (max; cycles with any) | %d; %d of %d |  |" % (
            r["pod_lists_per_cycle"]["max"], r["pod_lists_per_cycle"]["cycles_with_lists"], r["cycles_total"]))
        L += ["| evictions (201) / refused | %d / %d | |" % (pc["evicted"], pc["refused_or_failed"]),
              "| max evictions in one cycle | %d | <= perCycle %d |" % (pc["max_per_cycle"], res["limits"]["perCycle"]),
              "| evictions in the run (< 1 h) | %d | <= perHour %d |" % (pc["in_first_hour"], res["limits"]["perHour"]),
              "| max evictions per node | %d | <= perNodePerHour %d |" % (pc["max_per_node"], res["limits"]["perNodePerHour"]),
              "| min gap between two cycles evicting from one node | %s (same-cycle 2nd evictions: %d) | >= nodeCooldown %d s |" % (
                  "%.1f s" % pc["min_gap_same_node_between_cycles_s"]
                  if pc["min_gap_same_node_between_cycles_s"] is not None else "-",
                  pc["second_eviction_same_node_same_cycle"], res["limits"]["nodeCooldown_s"]),
              "| pacing checks | %s | all true |" % pc["ok"]]
    return "\n".join(L)


if __name__ == "__main__":
    main()
