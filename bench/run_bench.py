#!/usr/bin/env python3
"""dynamic-scheduler benchmarks at 1,000 and 10,000 nodes (bench/README.md).

Real Prometheus + pushgateway (+ Alertmanager for the webhook path) from Debian on 127.0.0.1,
the project's Kubernetes API simulator with realistic Node objects, 4 rules with one series per
node each, and a load driver that flips nodes hot/cold and timestamps every change. Measures
reaction time, cycle cost, memory, initial sync and API efficiency, and runs the original
project's algorithm on the same cluster for a side-by-side comparison.

  bench/run_bench.py                 full run; writes bench/RESULTS.md and bench/results.json
  bench/run_bench.py --smoke         200 nodes, a few flips; checks correctness only (CI)
"""
import argparse
import json
import os
import platform
import random
import re
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "integration"))
from harness import CONTROLLER, Controller, Process, Stack, free_port, http, wait_until  # noqa: E402

METRICS = ["bench_cpu", "bench_mem", "bench_mem_available", "bench_load"]
RULES = """
rules:
  - {name: cpu, query: "max by (node) (bench_cpu)", operator: ">", threshold: 80, clearThreshold: 70}
  - {name: memory, query: "max by (node) (bench_mem)", operator: ">", threshold: 85, clearThreshold: 75}
  - {name: memory_available, query: "min by (node) (bench_mem_available)", operator: "<", threshold: 500000000, clearThreshold: 800000000}
  - {name: load, query: "max by (node) (bench_load)", operator: ">", threshold: 8, clearThreshold: 6}
"""
COLD = {"bench_cpu": 20, "bench_mem": 40, "bench_mem_available": 4e9, "bench_load": 1}
HOT_CPU, COLD_CPU = 95, 20


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * p / 100.0
    f = int(k)
    c = min(f + 1, len(s) - 1)
    return s[f] + (s[c] - s[f]) * (k - f)


def summary(values):
    return {"n": len(values), "p50": pct(values, 50), "p95": pct(values, 95), "p99": pct(values, 99),
            "max": max(values) if values else float("nan")}


class Cluster:
    """The stack plus helpers to talk to the simulator directly (watch, patch)."""

    def __init__(self, nodes, alertmanager=False):
        self.n = nodes
        self.stack = Stack(nodes=nodes, control_plane=0)
        self.alertmanager = alertmanager

    def start(self):
        s = self.stack
        s.dir = tempfile.mkdtemp(prefix="ds-bench-")
        if self.alertmanager:
            self.am_port, self.hook_port = free_port(), free_port()
            with open(os.path.join(s.dir, "alerts.yml"), "w") as f:
                f.write("groups:\n  - name: bench\n    interval: 1s\n    rules:\n"
                        "      - alert: NodeHot\n        expr: max by (node) (bench_cpu) > 80\n        for: 0s\n")
            s.rule_files = [os.path.join(s.dir, "alerts.yml")]
        s.start_sim(extra=["-threads", "32"])
        self._start_prometheus()
        self.ctx = ssl.create_default_context(cafile=os.path.join(s.sim_dir, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(s.sim_dir, "admin.crt"), os.path.join(s.sim_dir, "admin.key"))
        self.names = ["node-%05d" % i for i in range(1, self.n + 1)]
        self.ips = {name: "10.%d.%d.%d" % (i // 65536 % 256, i // 256 % 256, i % 256)
                    for i, name in enumerate(self.names, 1)}
        for m in METRICS:
            self.push_group(m, "base", {n: COLD[m] for n in self.names})
        wait_until(lambda: self.count("bench_load") == self.n, 60, what="all baseline series in Prometheus")

    def _start_prometheus(self):
        s = self.stack
        # Stack.start() without the simulator (already started) but with optional Alertmanager.
        s.pgw_port, s.prom_port = free_port(), free_port()
        s.pgw, s.prom = "http://127.0.0.1:%d" % s.pgw_port, "http://127.0.0.1:%d" % s.prom_port
        cfg = "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n  scrape_timeout: 1s\n"
        if self.alertmanager:
            cfg += "rule_files: ['%s']\n" % s.rule_files[0]
            cfg += "alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['127.0.0.1:%d']\n" % self.am_port
        cfg += ("scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
                "    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % s.pgw_port)
        with open(os.path.join(s.dir, "prometheus.yml"), "w") as f:
            f.write(cfg)
        s.procs.append(Process("pushgateway", ["prometheus-pushgateway", "--web.listen-address=127.0.0.1:%d" % s.pgw_port,
                                               "--persistence.file=", "--web.enable-admin-api"], s.dir))
        s.procs.append(Process("prometheus", [
            "prometheus", "--config.file=" + os.path.join(s.dir, "prometheus.yml"),
            "--storage.tsdb.path=" + os.path.join(s.dir, "prom-data"), "--web.listen-address=127.0.0.1:%d" % s.prom_port,
            "--web.enable-lifecycle", "--storage.tsdb.retention.time=1h"], s.dir))
        wait_until(lambda: "pushgateway" in s.query_raw('up{job="pushgateway"}==1'), 30, what="first scrape")

    def start_alertmanager(self, controller_url):
        s = self.stack
        with open(os.path.join(s.dir, "am.yml"), "w") as f:
            f.write("route:\n  receiver: hook\n  group_by: ['alertname', 'node']\n  group_wait: 0s\n"
                    "  group_interval: 1s\n  repeat_interval: 1h\nreceivers:\n  - name: hook\n    webhook_configs:\n"
                    "      - url: '%s/webhook'\n        send_resolved: true\n" % controller_url)
        p = Process("alertmanager", ["prometheus-alertmanager", "--config.file=" + os.path.join(s.dir, "am.yml"),
                                     "--storage.path=" + os.path.join(s.dir, "am-data"),
                                     "--web.listen-address=127.0.0.1:%d" % self.am_port, "--cluster.listen-address=",
                                     "--web.external-url=http://127.0.0.1:%d" % self.am_port], s.dir)
        s.procs.append(p)
        # 60 s, and its log when it does not come up: on a loaded 2-core machine it once took more
        # than 20 s (or exited: a port picked free can be taken before it binds it).
        try:
            wait_until(lambda: not p.alive() or
                       http("GET", "http://127.0.0.1:%d/-/ready" % self.am_port)[0] == 200, 60,
                       what="alertmanager")
        except AssertionError as e:
            raise AssertionError("%s; its log: %s" % (e, p.output()[-2000:])) from None
        if not p.alive():
            raise AssertionError("alertmanager exited: %s" % p.output()[-2000:])
        return p

    def stop(self):
        self.stack.stop()

    # --- Prometheus side ---
    def push_group(self, metric, group, values):
        body = "# TYPE %s gauge\n" % metric + "".join(
            '%s{node="%s",ip="%s"} %s\n' % (metric, n, self.ips.get(n, "0.0.0.0"), v) for n, v in values.items())
        code, text = http("PUT", "%s/metrics/job/%s/instance/%s" % (self.stack.pgw, metric, group), body.encode())
        assert code == 200, (code, text)

    def delete_group(self, metric, group):
        http("DELETE", "%s/metrics/job/%s/instance/%s" % (self.stack.pgw, metric, group))

    def count(self, metric):
        r = self.stack.query("count(%s)" % metric)
        return int(float(r[0]["value"][1])) if r else 0

    def visible(self, node, value):
        r = self.stack.query('max(bench_cpu{node="%s"})' % node)
        return bool(r) and float(r[0]["value"][1]) == value

    # --- Kubernetes side ---
    def api(self, method, path, body=None, content_type="application/merge-patch+json"):
        req = urllib.request.Request(self.stack.sim_url + path, data=body, method=method,
                                     headers={"Content-Type": content_type} if body else {})
        with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
            return json.loads(r.read())

    def sim_stats(self):
        return self.api("GET", "/sim/stats")

    def writes_by(self, user="dynamic-scheduler"):
        return sum(1 for w in self.api("GET", "/sim/writes")["writes"] if w["user"] == user and w["changed"])

    def labelled(self):
        sel = urllib.parse.quote("status=presure")
        return {i["metadata"]["name"] for i in self.api("GET", "/api/v1/nodes?labelSelector=" + sel)["items"]}


class Watcher(threading.Thread):
    """Watches the simulator and records when each node's status label changes."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.c = cluster
        self.state = {}
        self.changes = {}  # node -> list of (time, labelled)
        self.cv = threading.Condition()
        self.stopped = False

    def run(self):
        while not self.stopped:
            rv = self.c.api("GET", "/api/v1/nodes?limit=1")["metadata"]["resourceVersion"]
            for item in self.c.api("GET", "/api/v1/nodes")["items"]:
                self.state[item["metadata"]["name"]] = (item["metadata"].get("labels") or {}).get("status") == "presure"
            url = self.c.stack.sim_url + "/api/v1/nodes?watch=1&resourceVersion=%s&timeoutSeconds=3600" % rv
            try:
                with urllib.request.urlopen(url, context=self.c.ctx, timeout=3600) as r:
                    for line in r:
                        if self.stopped:
                            return
                        ev = json.loads(line)
                        if ev["type"] not in ("ADDED", "MODIFIED", "DELETED"):
                            continue
                        meta = ev["object"]["metadata"]
                        now = time.monotonic()
                        hot = ev["type"] != "DELETED" and (meta.get("labels") or {}).get("status") == "presure"
                        with self.cv:
                            if self.state.get(meta["name"]) != hot:
                                self.changes.setdefault(meta["name"], []).append((now, hot))
                            self.state[meta["name"]] = hot
                            self.cv.notify_all()
            except Exception:
                time.sleep(0.2)

    def wait_state(self, node, hot, after, timeout):
        """Time of the first change of `node` to `hot` after `after`, or None."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for t, h in self.changes.get(node, []):
                    if h == hot and t >= after:
                        return t
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def count_state(self, nodes, hot):
        with self.cv:
            return sum(1 for n in nodes if self.state.get(n) == hot)


def controller_metrics(ctl):
    out = {}
    for line in ctl.get("/metrics")[1].splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def start_controller(cluster, interval, extra=()):
    c = Controller(cluster.stack, RULES, interval=interval, args=["-write_qps", "200", "-write_burst", "200", *extra],
                   name="controller-%s" % int(time.time() * 1000))
    c.start_time = time.monotonic()
    return c


def rss_bytes(ctl):
    with open("/proc/%d/status" % ctl.proc.proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def flip(cluster, watcher, node, hot, timeout):
    """Pushes one node hot or cold; returns (floor seconds, reaction seconds or None)."""
    value = HOT_CPU if hot else COLD_CPU
    t0 = time.monotonic()
    cluster.push_group("bench_cpu", "flip-" + node, {node: value})
    floor = None
    while time.monotonic() - t0 < timeout:
        if cluster.visible(node, value):
            floor = time.monotonic() - t0
            break
        time.sleep(0.02)
    t1 = watcher.wait_state(node, hot, t0, timeout)
    return floor, (t1 - t0) if t1 is not None else None


def reaction_run(cluster, watcher, nodes, concurrent, timeout, jitter):
    """Flips each node hot then cold. Sequential or overlapping (one new flip per second). Each
    flip waits a random 0..jitter seconds first, so flips land at random phases of the cycle."""
    floors, reactions, shares, failed = [], [], [], 0
    lock = threading.Lock()
    rng = random.Random(len(nodes))

    def one(node):
        nonlocal failed
        for hot in (True, False):
            with lock:
                pause = rng.uniform(0, jitter)
            time.sleep(pause)
            f, r = flip(cluster, watcher, node, hot, timeout)
            with lock:
                if f is not None:
                    floors.append(f)
                if r is None:
                    failed += 1
                else:
                    reactions.append(r)
                    if f is not None:
                        shares.append(r - f)  # what the controller adds after the data is queryable
    if concurrent:
        threads = []
        for n in nodes:
            t = threading.Thread(target=one, args=(n,))
            t.start()
            threads.append(t)
            time.sleep(1.0)
        for t in threads:
            t.join()
    else:
        for n in nodes:
            one(n)
    return {"reaction": summary(reactions), "floor": summary(floors), "controller_share": summary(shares),
            "failed": failed}


def cycle_cost(ctl, seconds):
    """Samples /metrics after every cycle for `seconds`; averages the per-cycle figures."""
    seen, rows = set(), []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        m = controller_metrics(ctl)
        cyc = m.get("dynamic_scheduler_cycles_total")
        if cyc not in seen:
            seen.add(cyc)
            rows.append(m)
        time.sleep(0.2)
    rows = rows[1:] or rows
    keys = ["dynamic_scheduler_last_cycle_duration_seconds", "dynamic_scheduler_cycle_cpu_seconds"] + [
        'dynamic_scheduler_cycle_phase_seconds{phase="%s"}' % p for p in ("query", "decode", "decide", "plan", "write")]
    return {k.split("{")[-1].replace('phase="', "").replace('"}', "").replace("dynamic_scheduler_last_cycle_", "").replace("dynamic_scheduler_cycle_", ""):
            statistics.mean(r.get(k, 0) for r in rows) for k in keys} | {"cycles": len(rows)}


def original_algorithm(cluster, seconds, qps=5.0, burst=10, flips=()):
    """The original project's loop, as a mode of this driver (not of the product): query every
    rule, then PATCH every node every cycle (label set or removed), client-go's default client
    limiter (5 QPS, burst 10). Runs for `seconds` or one full cycle, whichever is first."""
    start = time.monotonic()
    hot = set()
    for rule_query, thr, op in (("max by (node) (bench_cpu)", 80, ">"), ("max by (node) (bench_mem)", 85, ">"),
                                ("min by (node) (bench_mem_available)", 5e8, "<"), ("max by (node) (bench_load)", 8, ">")):
        for r in cluster.stack.query(rule_query):
            v = float(r["value"][1])
            if (v > thr) if op == ">" else (v < thr):
                hot.add(r["metric"]["node"])
    tokens, last = float(burst), time.monotonic()
    writes, converged_at = 0, {}
    order = list(cluster.names)
    for n in order:
        if time.monotonic() - start > seconds:
            break
        while True:  # token bucket
            now = time.monotonic()
            tokens = min(burst, tokens + (now - last) * qps)
            last = now
            if tokens >= 1:
                tokens -= 1
                break
            time.sleep((1 - tokens) / qps)
        body = json.dumps({"metadata": {"labels": {"status": "presure" if n in hot else None}}}).encode()
        cluster.api("PATCH", "/api/v1/nodes/" + n, body)
        writes += 1
        if n in flips:
            converged_at[n] = time.monotonic() - start
    elapsed = time.monotonic() - start
    return {"nodes": len(order), "writes": writes, "elapsed": elapsed, "write_qps": writes / elapsed, "full_cycle": writes == len(order),
            "cycle_seconds": len(order) / (writes / elapsed), "flip_converged": converged_at}


def run_size(n, args, results):
    print("\n=== %d nodes ===" % n, flush=True)
    res = results.setdefault(str(n), {})
    cluster = Cluster(n, alertmanager=True)
    cluster.start()
    try:
        watcher = Watcher(cluster)
        watcher.start()
        wait_until(lambda: len(watcher.state) >= n, 60, what="watcher synced")
        rng = random.Random(n)

        # Initial sync and memory after sync, steady state, cycle cost (-s 1).
        ctl = start_controller(cluster, 1)
        ctl.wait_ready(120)
        ready = time.monotonic() - ctl.start_time
        m = controller_metrics(ctl)
        res["initial_sync"] = {"list_seconds": m["dynamic_scheduler_node_cache_initial_sync_seconds"],
                               "ready_seconds": ready}
        time.sleep(3)
        res["rss_after_sync_mb"] = rss_bytes(ctl) / 1e6
        print("sync %.2f s, ready %.2f s, RSS %.1f MB" % (res["initial_sync"]["list_seconds"], ready,
                                                        res["rss_after_sync_mb"]), flush=True)
        w0, s0 = cluster.writes_by(), cluster.sim_stats()["requests"]
        c0 = controller_metrics(ctl)["dynamic_scheduler_cycles_total"]
        res["cycle_cost"] = cycle_cost(ctl, args.steady_seconds)
        c1 = controller_metrics(ctl)["dynamic_scheduler_cycles_total"]
        w1, s1 = cluster.writes_by(), cluster.sim_stats()["requests"]
        cycles = c1 - c0
        res["steady"] = {"cycles": cycles, "writes": w1 - w0,
                         "api_requests_per_cycle": (sum(s1.values()) - sum(s0.values())) / max(cycles, 1),
                         "requests": {k: s1.get(k, 0) - s0.get(k, 0) for k in s1}}
        print("cycle cost:", json.dumps(res["cycle_cost"]), "steady:", res["steady"]["writes"], "writes over",
              cycles, "cycles", flush=True)

        # Reaction time, periodic path -s 1 (sequential flips).
        nodes = rng.sample(cluster.names, args.flips // 2)
        res["reaction_s1"] = reaction_run(cluster, watcher, nodes, False, 30, 1.0)
        print("reaction -s 1:", json.dumps(res["reaction_s1"]), flush=True)
        ctl.stop()

        # Reaction time, -s 10 (overlapping flips, one started per second).
        ctl = start_controller(cluster, 10)
        ctl.wait_ready(120)
        nodes = rng.sample(cluster.names, args.flips // 2)
        res["reaction_s10"] = reaction_run(cluster, watcher, nodes, True, 60, 10.0)
        print("reaction -s 10:", json.dumps(res["reaction_s10"]), flush=True)
        ctl.stop()

        # Webhook path: Prometheus alert -> Alertmanager -> POST /webhook; the periodic loop is slow.
        ctl = start_controller(cluster, 300)
        ctl.wait_ready(120)
        am = cluster.start_alertmanager(ctl.url)
        time.sleep(2)
        nodes = rng.sample(cluster.names, args.flips // 2)
        res["reaction_webhook"] = reaction_run(cluster, watcher, nodes, False, 30, 1.0)
        print("reaction webhook:", json.dumps(res["reaction_webhook"]), flush=True)
        am.stop()
        ctl.stop()

        # 2,000 (or n/5) nodes flip at once, write limit 200 QPS.
        k = min(2000, n // 5)
        ctl = start_controller(cluster, 1)
        ctl.wait_ready(120)
        burst_nodes = rng.sample(cluster.names, k)
        for hot in (True, False):
            t0 = time.monotonic()
            if hot:
                cluster.push_group("bench_cpu", "burst", {b: HOT_CPU for b in burst_nodes})
            else:
                cluster.delete_group("bench_cpu", "burst")
            done = wait_until(lambda: watcher.count_state(burst_nodes, hot) == k, 120, interval=0.05,
                              what="%d nodes %s" % (k, "hot" if hot else "cold"))
            res.setdefault("mass_flip", {})["to_hot" if hot else "to_cold"] = {"nodes": k,
                                                                              "seconds": time.monotonic() - t0}
            time.sleep(3)
        print("mass flip:", json.dumps(res["mass_flip"]), flush=True)

        # Memory under churn (10,000 nodes only in the full run).
        if args.churn_seconds > 0 and (n == max(args.sizes) or args.smoke):
            res["churn"] = churn(cluster, ctl, args.churn_seconds, rng)
            print("churn:", json.dumps(res["churn"]), flush=True)
        ctl.stop()

        # The original algorithm on the same cluster: flip nodes, then one (partial) cycle.
        # `--original-seconds 0` leaves it out (a memory run has no use for it).
        if args.original_seconds <= 0:
            watcher.stopped = True
            return
        flips = set(rng.sample(cluster.names, min(20, n // 10)))
        cluster.push_group("bench_cpu", "orig", {f: HOT_CPU for f in flips})
        wait_until(lambda: all(cluster.visible(f, HOT_CPU) for f in list(flips)[:3]), 20, what="orig flips visible")
        w0 = cluster.writes_by("admin")
        res["original"] = original_algorithm(cluster, args.original_seconds, flips=flips)
        res["original"]["writes_logged"] = cluster.writes_by("admin") - w0
        conv = list(res["original"].pop("flip_converged").values())
        res["original"]["flips_converged"] = len(conv)
        res["original"]["flip_reaction"] = summary(conv)
        print("original:", json.dumps(res["original"]), flush=True)
        cluster.delete_group("bench_cpu", "orig")
        watcher.stopped = True
    finally:
        cluster.stop()


def churn(cluster, ctl, seconds, rng):
    """Nodes added and deleted, labels and annotations edited by others, values flipping."""
    samples = [(0, rss_bytes(ctl))]
    start = time.monotonic()
    created = []
    i = 0
    while time.monotonic() - start < seconds:
        i += 1
        for _ in range(5):
            name = "churn-%06d" % rng.randrange(10**6)
            body = json.dumps({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                               "status": {"addresses": [{"type": "InternalIP", "address": "10.200.%d.%d" % (
                                   rng.randrange(256), rng.randrange(256))}]}}).encode()
            try:
                cluster.api("POST", "/api/v1/nodes", body, "application/json")
                created.append(name)
            except Exception:
                pass
        while len(created) > 50:
            cluster.api("DELETE", "/api/v1/nodes/" + created.pop(rng.randrange(len(created))))
        for n in rng.sample(cluster.names, 10):
            cluster.api("PATCH", "/api/v1/nodes/" + n, json.dumps(
                {"metadata": {"labels": {"team": rng.choice(["a", "b", None])},
                              "annotations": {"churn": str(i)}}}).encode())
        cluster.push_group("bench_cpu", "churn", {n: rng.choice([HOT_CPU, COLD_CPU]) for n in rng.sample(cluster.names, 20)})
        if i % 10 == 0:
            samples.append((time.monotonic() - start, rss_bytes(ctl)))
        time.sleep(1)
    samples.append((time.monotonic() - start, rss_bytes(ctl)))
    cluster.delete_group("bench_cpu", "churn")
    for name in created:
        cluster.api("DELETE", "/api/v1/nodes/" + name)
    first = [r for t, r in samples if t <= seconds * 0.2]
    last = [r for t, r in samples if t >= seconds * 0.8]
    return {"seconds": seconds, "rss_start_mb": samples[0][1] / 1e6, "rss_end_mb": samples[-1][1] / 1e6,
            "rss_max_mb": max(r for _, r in samples) / 1e6,
            "rss_first_fifth_mean_mb": statistics.mean(first) / 1e6, "rss_last_fifth_mean_mb": statistics.mean(last) / 1e6,
            "samples": len(samples)}


def micro(args):
    """Each benchmark's CPU time (min and median of the repetitions) and wall time (median), in ms.

    CPU time, not wall time, is the figure: on a shared machine the wall time of a one-thread
    benchmark mostly measures the wait for a core."""
    exe = os.path.join(os.environ.get("DS_BUILD_DIR", os.path.join(HERE, "..", "build")), "micro_bench")
    if not os.path.exists(exe):
        return {}
    cmd = [exe, "--benchmark_format=json"]
    cmd += ["--benchmark_min_time=0.01"] if args.smoke else ["--benchmark_min_time=0.5", "--benchmark_repetitions=%d" %
                                                             args.micro_repetitions]
    load = os.getloadavg()[0]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    runs = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = b.get("run_name", b["name"])
        runs.setdefault(name, []).append(b)
    res = {}
    for name, bs in runs.items():
        cpu = sorted(b["cpu_time"] for b in bs)
        real = sorted(b["real_time"] for b in bs)
        res[name] = {"cpu_ms_min": cpu[0], "cpu_ms_median": cpu[len(cpu) // 2], "real_ms_median": real[len(real) // 2],
                     "repetitions": len(bs)}
        evicting = sorted(b["ms_per_evicting_cycle"] for b in bs if "ms_per_evicting_cycle" in b)
        if evicting:  # the rebalance step's cycles that evict (issue 38's target)
            res[name]["evicting_cycle_cpu_ms_median"] = evicting[len(evicting) // 2]
    res["_taken"] = {"at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_before": load,
                     "load_after": os.getloadavg()[0], "cores": os.cpu_count()}
    return res


def write_report(results, args, path_md, path_json):
    with open(path_json, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    L = ["# Benchmark results", "",
         "Generated by `%s` on %s. Do not edit by hand; run the command again." % (
             " ".join(["bench/run_bench.py"] + sys.argv[1:]), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())), "",
         "Machine: %s, %d cores, %.0f GiB RAM, kernel %s. Prometheus, pushgateway and Alertmanager from Debian, "
         "1 s scrape and rule interval. 4 rules, one series per node each." % (
             platform.machine(), os.cpu_count(), mem_gib, platform.release()), ""]
    mb = dict(results.get("micro", {}))
    taken = mb.pop("_taken", None)
    if mb:
        L += ["## Microbenchmarks (Google Benchmark, one thread)", ""]
        if taken:
            L += ["Taken %s%s, load average %.1f before and %.1f after on %d cores (the machine was shared: CPU "
                  "time is the figure; wall time mostly measures the wait for a core)." % (
                      taken["at"], " by `bench/run_bench.py --micro-only`" if results.get("micro_only") else "",
                      taken["load_before"], taken["load_after"], taken["cores"]), ""]
        L += ["| benchmark | CPU ms, min | CPU ms, median | wall ms, median | target |", "|---|---|---|---|---|"]
        targets = {"BM_ScanMatch10k": "decode of a 10,000-sample response <= 5 ms",
                   "BM_CycleCompute10kx4": "decode+match+decide+plan <= 10 ms per cycle on one thread (the controller "
                                           "runs the 4 scans in parallel; see the cycle cost below for wall time)",
                   "BM_RebalanceStep10kNodes300kPods/0/iterations:360": "rebalance step <= 20 ms CPU per cycle "
                                                                        "(10,000 nodes, 300,000 pods, 1 % hot; "
                                                                        "podUsage over every pod)",
                   "BM_RebalanceStep10kNodes300kPods/1/iterations:360": "the same with podUsage naming $nodes"}
        for k, v in mb.items():
            if isinstance(v, dict):
                L.append("| %s | %.2f | %.2f | %.2f | %s |" % (k, v["cpu_ms_min"], v["cpu_ms_median"],
                                                                v["real_ms_median"], targets.get(k, "")))
            else:  # an older results.json: wall time only
                L.append("| %s | | | %.2f | %s |" % (k, v, targets.get(k, "")))
        L.append("")
        evicting = {k: v["evicting_cycle_cpu_ms_median"] for k, v in mb.items()
                    if isinstance(v, dict) and "evicting_cycle_cpu_ms_median" in v}
        if evicting:
            L += ["The rebalance step's cycles that evict (its median CPU over the cycles with an eviction: the "
                  "per-pod usage query, the reads, the ledger and the record written ahead, the POST; target <= 20 "
                  "ms): " + "; ".join("%s %.2f ms" % (k, v) for k, v in sorted(evicting.items())) + ". "
                  "With podUsage over every pod, decoding the usage of all 300,000 pods is most of it.", ""]
    for scale in ("rebalance_scale_300k.json", "rebalance_scale_300k_padded.json"):
        if not os.path.exists(os.path.join(HERE, scale)):
            continue
        sys.path.insert(0, HERE)
        import rebalance_scale  # its table, from its own results file
        with open(os.path.join(HERE, scale)) as f:
            sr = json.load(f)
        L += ["## Rebalancing at scale (`bench/rebalance_scale.py`%s)" % (
                  ", pods of %s bytes" % sr["pod_json_bytes"] if "--pod-padding" in sr.get("command", "") else ""), "",
              "Taken %s by `%s` (results in `bench/%s`), the real binary against the "
              "simulator on the same 2 cores%s. The rebalance step's CPU is the controller's own "
              "`dynamic_scheduler_last_rebalance_cpu_seconds` (the cycle thread's CPU clock); process CPU "
              "(utime+stime) also counts its other threads, and was taken while the simulator and Prometheus "
              "shared its cores." % (
                  sr.get("started", "?"), sr.get("command", "bench/rebalance_scale.py"), scale,
                  "; load average %s during the run" % sr["machine_load"] if sr.get("machine_load") else ""), ""]
        L += rebalance_scale.table(sr).strip("\n").split("\n") + [""]
    if results.get("micro_only"):
        L += ["The sections below are from the full run of %s (`bench/run_bench.py`), not run again." %
              results.get("full_run_at", "an earlier date"), ""]
    sizes = [k for k in results if k.isdigit()]
    def row(name, f, target=""):
        L.append("| %s | %s | %s |" % (name, " | ".join(f(results[s]) for s in sizes), target))
    L += ["## Controller at scale", "", "| figure | " + " | ".join("%s nodes" % s for s in sizes) + " | target (10,000) |",
          "|---|" + "---|" * len(sizes) + "---|"]
    ms = lambda x: "%.1f ms" % (x * 1000)
    sec = lambda x: "%.2f s" % x
    row("initial sync (paged LIST)", lambda r: sec(r["initial_sync"]["list_seconds"]), "<= 3 s")
    row("start to ready (/status 200)", lambda r: sec(r["initial_sync"]["ready_seconds"]), "")
    row("RSS after sync", lambda r: "%.1f MB" % r["rss_after_sync_mb"], "<= 40 MB")
    row("cycle wall time", lambda r: ms(r["cycle_cost"]["duration_seconds"]), "")
    row("cycle CPU time", lambda r: ms(r["cycle_cost"]["cpu_seconds"]), "")
    row("  query (waiting on Prometheus)", lambda r: ms(r["cycle_cost"]["query"]), "")
    row("  decode+match (CPU, 4 rules)", lambda r: ms(r["cycle_cost"]["decode"]), "")
    row("  decide", lambda r: ms(r["cycle_cost"]["decide"]), "")
    row("  plan", lambda r: ms(r["cycle_cost"]["plan"]), "")
    row("  write", lambda r: ms(r["cycle_cost"]["write"]), "")
    row("writes in steady state", lambda r: "%d over %d cycles" % (r["steady"]["writes"], r["steady"]["cycles"]), "0")
    row("API requests per steady cycle", lambda r: "%.2f" % r["steady"]["api_requests_per_cycle"], "")
    for key, label, target in (("reaction_s1", "reaction -s 1", "p99 <= 2.5 s"), ("reaction_s10", "reaction -s 10", "p99 <= 11.5 s"),
                               ("reaction_webhook", "reaction webhook (Alertmanager)", "p99 <= 1.5 s")):
        row(label + " p50/p95/p99", lambda r, k=key: "%.2f / %.2f / %.2f s (n=%d, failed %d)" % (
            r[k]["reaction"]["p50"], r[k]["reaction"]["p95"], r[k]["reaction"]["p99"], r[k]["reaction"]["n"], r[k]["failed"]), target)
        row("  floor: push -> visible in a query, p50/p99", lambda r, k=key: "%.2f / %.2f s" % (
            r[k]["floor"]["p50"], r[k]["floor"]["p99"]), "")
        row("  controller's share (reaction - floor), p50/p99", lambda r, k=key: "%.2f / %.2f s" % (
            r[k]["controller_share"]["p50"], r[k]["controller_share"]["p99"]) if "controller_share" in r[k] else "-", "")
    row("mass flip to hot (200 QPS)", lambda r: "%d nodes in %.1f s" % (r["mass_flip"]["to_hot"]["nodes"], r["mass_flip"]["to_hot"]["seconds"]), "2,000 in <= 12 s")
    row("mass flip to cold (200 QPS)", lambda r: "%d nodes in %.1f s" % (r["mass_flip"]["to_cold"]["nodes"], r["mass_flip"]["to_cold"]["seconds"]), "")
    L.append("")
    for s in sizes:
        ch = results[s].get("churn")
        if ch:
            L += ["Memory under churn at %s nodes for %d s: RSS %.1f MB at start, %.1f MB at the end, max %.1f MB; mean of the first "
                  "fifth %.1f MB, of the last fifth %.1f MB (target: flat)." % (s, ch["seconds"], ch["rss_start_mb"], ch["rss_end_mb"],
                                                                            ch["rss_max_mb"], ch["rss_first_fifth_mean_mb"], ch["rss_last_fifth_mean_mb"]), ""]
    L += ["## Side by side: the original project's algorithm", "",
          "Query every rule, then PATCH every node every cycle with client-go's default limiter (5 QPS, burst 10), run by "
          "the benchmark driver on the same cluster and Prometheus. Where a full cycle did not fit in the time given, the "
          "cycle time is computed from the measured write rate.", "",
          "| figure | " + " | ".join("%s nodes" % s for s in sizes) + " |", "|---|" + "---|" * len(sizes)]
    def orow(name, f):
        L.append("| %s | %s |" % (name, " | ".join(f(results[s]) for s in sizes)))
    orow("writes per cycle: original / dynamic-scheduler (steady)", lambda r: "%d / %d" % (
        r["original"]["nodes"], r["steady"]["writes"] / max(r["steady"]["cycles"], 1)))
    orow("cycle (time to touch every node)", lambda r: "%.0f s (%s)" % (r["original"]["cycle_seconds"],
                                                                        "measured" if r["original"]["full_cycle"] else "computed from %.1f writes/s over %.0f s" % (r["original"]["write_qps"], r["original"]["elapsed"])))
    orow("time to converge after a mass flip: original / ours", lambda r: "~%.0f s / %.1f s (ratio %.0fx)" % (
        r["original"]["cycle_seconds"], r["mass_flip"]["to_hot"]["seconds"], r["original"]["cycle_seconds"] / r["mass_flip"]["to_hot"]["seconds"]))
    orow("reaction: original (mean over random positions) / ours -s 10 p50", lambda r: "~%.0f s / %.1f s (ratio %.0fx)" % (
        r["original"]["cycle_seconds"] / 2, r["reaction_s10"]["reaction"]["p50"], r["original"]["cycle_seconds"] / 2 / r["reaction_s10"]["reaction"]["p50"]))
    L.append("")
    with open(path_md, "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="200 nodes, few flips, short churn; correctness only")
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--flips", type=int, default=50, help="flips per reaction-time mode (each node hot then cold)")
    ap.add_argument("--churn-seconds", type=int, default=1800)
    ap.add_argument("--steady-seconds", type=int, default=15)
    ap.add_argument("--original-seconds", type=int, default=240,
                    help="how long the original algorithm runs; 0 leaves it out")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--micro-repetitions", type=int, default=5)
    ap.add_argument("--micro-only", action="store_true",
                    help="run only build/micro_bench and rewrite its section; the other sections come from the "
                         "last full run's results.json")
    ap.add_argument("--report-only", action="store_true",
                    help="measure nothing: rewrite RESULTS.md from results.json (and the rebalance_scale_300k "
                         "files), e.g. after a new bench/rebalance_scale.py run")
    args = ap.parse_args()
    # A directory that does not exist yet is made now: minutes of measuring must not end in a crash.
    os.makedirs(args.out, exist_ok=True)
    if args.smoke:
        args.sizes, args.flips, args.churn_seconds, args.steady_seconds, args.original_seconds = "200", 6, 15, 5, 8
    args.sizes = [int(x) for x in args.sizes.split(",")]
    if args.micro_only or args.report_only:
        md, js = os.path.join(args.out, "RESULTS.md"), os.path.join(args.out, "results.json")
        with open(js) as f:
            results = json.load(f)
        if args.report_only:
            write_report(results, args, md, js)
            print("wrote", md)
            return
        if not results.get("micro_only"):
            with open(md) as f:
                m = re.search(r"^Generated by .* on (.*?)\. Do not edit", f.read(), re.M)
            results["full_run_at"] = m.group(1) if m else "an earlier date"
        results["micro_only"] = True
        results["micro"] = micro(args)
        write_report(results, args, md, js)
        print("wrote", md)
        return
    results = {"micro": micro(args)}
    print("micro:", json.dumps(results["micro"]), flush=True)
    for n in args.sizes:
        run_size(n, args, results)
    if args.smoke:
        check_smoke(results)
        print("smoke OK")
        return
    if args.original_seconds <= 0 or sorted(args.sizes) != [1000, 10000]:
        # A partial run (one size, no original algorithm) has too little for RESULTS.md's tables,
        # and must not overwrite the full run's figures: its own file, beside them.
        path = os.path.join(args.out, "results-partial.json")
        with open(path, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
        print("partial run: wrote", path, "(RESULTS.md needs the full run)")
        return
    write_report(results, args, os.path.join(args.out, "RESULTS.md"), os.path.join(args.out, "results.json"))
    print("wrote", os.path.join(args.out, "RESULTS.md"))


def check_smoke(results):
    """Correctness only: every flip converged, no steady writes, the original mode wrote."""
    r = results["200"]
    for k in ("reaction_s1", "reaction_s10", "reaction_webhook"):
        assert r[k]["failed"] == 0 and r[k]["reaction"]["n"] > 0, (k, r[k])
    assert r["steady"]["writes"] == 0, r["steady"]
    assert r["mass_flip"]["to_hot"]["nodes"] == 40, r["mass_flip"]
    assert r["original"]["writes"] > 0, r["original"]
    assert r["churn"]["samples"] >= 2


if __name__ == "__main__":
    main()
