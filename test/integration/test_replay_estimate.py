"""The rebalancer's estimate in `dynamic-scheduler replay` (a rule file with a `rebalance:` section),
against a real Prometheus whose history is written with promtool and the simulator's pods.

The estimate takes the pods as listed now, and a pod created after a cycle did not exist then, so
the history has to come after the pods: the pods are created first, the test waits out a short
window, and a second Prometheus is started on that window's history (2-second steps). Which
episodes qualify, which pods would be evicted and the loads are computed here from the rule file's
semantics (after, clear threshold as the goal, the largest users first, perCycle), not read from
the program; destinations are not claimed, and a pod LIST the user may not make is said, not a
crash."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from harness import CONTROLLER, Process, Stack, backfill, free_port, wait_until
from pod_load import KubeAdmin, running

STEP = 2          # seconds per replayed cycle (the window is waited out in real time)
STEPS = 24        # the window: 48 seconds
AFTER_STEPS = 4   # rebalance.after: 8 s
PER_CYCLE = 2
THRESHOLD, CLEAR = 80, 60
NS = "shop"

RULES = """maxMarkedFraction: 1
rules:
  - {name: cpu, query: est_node_cpu, operator: ">", threshold: %d, clearThreshold: %d, resource: cpu}
rebalance:
  after: %ds
  minPodAge: 1s
  podUsage:
    cpu: "sum by (namespace, pod) (est_pod_cpu)"
    memory: "sum by (namespace, pod) (est_pod_mem)"
  limits: {perCycle: %d}
""" % (THRESHOLD, CLEAR, AFTER_STEPS * STEP, PER_CYCLE)

# Pods per node with their real CPU use (cores); each its own ReplicaSet, requesting 100m.
PODS = {"node-00002": {"a": 1.5, "b": 0.8, "c": 0.2, "d": 0.05},
        "node-00003": {"e": 1.2, "f": 0.9},
        "node-00004": {"g": 0.1}}
# Node CPU percent per step (default 20): node-00002 hot over steps [2, 14), node-00003 from step 6
# to the end (an open mark), node-00004 for 3 steps only (shorter than `after`).
HOT = {"node-00002": (2, 14, 90), "node-00003": (6, STEPS, 95), "node-00004": (16, 19, 90)}


def node_cpu(node, k):
    lo, hi, v = HOT.get(node, (0, 0, 0))
    return v if lo <= k < hi else 20


def history(start):
    lines = ["# TYPE est_node_cpu gauge"]
    for node in PODS:
        for k in range(STEPS):
            lines.append('est_node_cpu{node="%s"} %s %d' % (node, node_cpu(node, k), start + k * STEP))
    lines.append("# TYPE est_pod_cpu gauge")
    for node, pods in PODS.items():
        for pod, cores in pods.items():
            for k in range(STEPS):
                lines.append('est_pod_cpu{namespace="%s",pod="%s",container="app"} %s %d'
                             % (NS, pod, cores, start + k * STEP))
    lines.append("# TYPE est_pod_mem gauge")
    for node, pods in PODS.items():
        for pod in pods:
            for k in range(STEPS):
                lines.append('est_pod_mem{namespace="%s",pod="%s"} 1e8 %d' % (NS, pod, start + k * STEP))
    return "\n".join(lines) + "\n# EOF\n"


def expected(allocatable_cpu):
    """Per hot episode (node, start step): (qualified step or None, [evicted pods], load_after),
    worked out from the rule file: a mark starts at the first hot step (no `for`) and ends at the
    first step back at or below the clear threshold; it qualifies `after` later if still on; the
    goal is the clear threshold; the largest users go first, each lowering the load by its share
    of the node's allocatable CPU, until the load is at the goal or perCycle pods are picked."""
    out = {}
    for node, (lo, hi, value) in HOT.items():
        qualified = lo + AFTER_STEPS if lo + AFTER_STEPS < hi else None
        picks, load = [], value
        if qualified is not None:
            for pod, cores in sorted(PODS[node].items(), key=lambda p: -p[1]):
                if load <= CLEAR or len(picks) == PER_CYCLE:
                    break
                picks.append(pod)
                load -= cores / allocatable_cpu[node] * 100
        out[(node, lo)] = (qualified, picks, load)
    return out


class ReplayEstimateIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ds-estimate-")
        # The controller's user may list nodes but not pods: the replay's pod LIST fails with it
        # (the admin's client certificate lists both).
        rbac = os.path.join(cls.tmp, "rbac.json")
        with open(rbac, "w") as f:
            json.dump({"users": {"dynamic-scheduler": [
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}]}}, f)
        cls.stack = Stack(nodes=4, control_plane=1, sim_args=["-rbac", rbac]).start()
        api = KubeAdmin(cls.stack)
        for node, pods in PODS.items():
            for pod in pods:
                code, obj = api.call("POST", "/api/v1/namespaces/%s/pods" % NS, {
                    "metadata": {"name": pod, "labels": {"app": pod}, "ownerReferences": [
                        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": pod + "-rs",
                         "uid": "rs-" + pod, "controller": True}]},
                    "spec": {"nodeName": node, "containers": [{"name": "app", "image": "pause", "resources": {
                        "requests": {"cpu": "100m", "memory": "64Mi"}}}]}})
                assert code == 201, (code, obj)
        count = sum(len(p) for p in PODS.values())
        wait_until(lambda: len([p for p in api.get("/api/v1/namespaces/%s/pods" % NS)["items"]
                                if running(p)]) == count, 20, what="the pods running")
        cls.allocatable = {n["metadata"]["name"]: cpu(n["status"]["allocatable"]["cpu"])
                           for n in api.get("/api/v1/nodes")["items"]}
        # The window starts after every pod's creation (and minPodAge) and ends before now.
        # On a multiple of the step, as the replay puts its grid.
        cls.first = (int(time.time()) // STEP + 2) * STEP
        cls.last = cls.first + (STEPS - 1) * STEP
        time.sleep(max(0.0, cls.last + 1 - time.time()))
        data = os.path.join(cls.tmp, "prom-data")
        backfill(history(cls.first), data, cls.tmp)
        port = free_port()
        cls.prom = "http://127.0.0.1:%d" % port
        with open(os.path.join(cls.tmp, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1m\n")
        cls.prom_proc = Process("prometheus-history", [
            "prometheus", "--config.file=" + os.path.join(cls.tmp, "prometheus.yml"),
            "--storage.tsdb.path=" + data, "--web.listen-address=127.0.0.1:%d" % port,
            "--storage.tsdb.retention.time=30d"], cls.tmp)
        wait_until(lambda: subprocess.run(["curl", "-sf", cls.prom + "/-/ready"],
                                          capture_output=True).returncode == 0, 30, what="Prometheus ready")
        cls.rule_file = os.path.join(cls.tmp, "rule.yaml")
        with open(cls.rule_file, "w") as f:
            f.write(RULES)

    @classmethod
    def tearDownClass(cls):
        cls.prom_proc.stop()
        cls.stack.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def replay(self, kubeconfig, out, *args):
        out_dir = os.path.join(self.tmp, out)
        r = subprocess.run([CONTROLLER, "replay", "-r", self.rule_file, "-prom", self.prom,
                            "-kubeconfig", kubeconfig, "-from", str(self.first), "-to", str(self.last),
                            "-step", str(STEP), "-out", out_dir, *args],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(out_dir, "replay.json")) as f:
            doc = json.load(f)
        with open(os.path.join(out_dir, "report.html")) as f:
            page = f.read()
        return r.stdout, doc, page

    def test_episodes_and_pods_as_the_rebalancer_would_choose_them(self):
        stdout, doc, page = self.replay(self.stack.admin_kubeconfig, "admin")
        est = doc["rebalance"]
        self.assertIn("scheduler is not replayed", est["note"])
        at = lambda k: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.first + k * STEP))
        want = expected(self.allocatable)
        got = {(e["node"], e["start"]): e for e in est["episodes"]}
        self.assertEqual(sorted(got), sorted((n, at(lo)) for n, lo in want), est)
        for (node, lo), (qualified, picks, load_after) in want.items():
            e = got[(node, at(lo))]
            self.assertEqual(e["qualified_at"], None if qualified is None else at(qualified), e)
            self.assertEqual([p["pod"] for p in e["evictions"]], picks, e)
            if qualified is None:
                self.assertEqual(e["qualification"], "not_long_enough")
                continue
            self.assertEqual((e["rule"], e["load"], e["goal"]), ("cpu", HOT[node][2], CLEAR), e)
            self.assertAlmostEqual(e["load_after"], load_after, places=6)
            self.assertEqual(e["candidates"], len(PODS[node]))
            for p in e["evictions"]:
                self.assertEqual(p["workload"], "%s/ReplicaSet/%s-rs" % (NS, p["pod"]))
                self.assertAlmostEqual(p["usage"], PODS[node][p["pod"]] / self.allocatable[node] * 100)
        evictions = sum(len(p) for _, p, _ in want.values())
        self.assertEqual(est["evictions"], evictions)
        qualified = sum(1 for q, _, _ in want.values() if q is not None)
        self.assertIn("rebalancer (estimated): %d of %d hot episodes qualified, %d evictions"
                      % (qualified, len(want), evictions), stdout)
        self.assertIn("where replacements would have gone is not claimed", stdout)
        self.assertIn("The rebalancer, estimated", page)
        self.assertIn("scheduler is not replayed", page)

    def test_offline_from_saved_nodes_and_pods_the_same_estimate(self):
        # -nodes_file and -pods_file as kubectl saves them: no cluster at all (a kubeconfig that
        # does not exist), the same episodes, pods and loads as from the cluster.
        saved = {}
        for kind in ("nodes", "pods"):
            saved[kind] = os.path.join(self.tmp, "saved-%s.json" % kind)
            with open(saved[kind], "w") as f:
                f.write(self.stack.kubectl("get", kind, "-A", "-o", "json").stdout)
        _, online, _ = self.replay(self.stack.admin_kubeconfig, "online")
        stdout, offline, _ = self.replay("/nonexistent/kubeconfig", "offline", "-nodes_file", saved["nodes"],
                                         "-pods_file", saved["pods"])
        self.assertNotIn("missing", offline["rebalance"], offline["rebalance"])
        self.assertEqual(offline["rebalance"], online["rebalance"])
        self.assertGreater(offline["rebalance"]["evictions"], 0)
        self.assertEqual(offline["workloads"], online["workloads"])
        self.assertNotIn("not computed", stdout)

    def test_a_pod_list_the_user_may_not_make_is_said(self):
        stdout, doc, page = self.replay(self.stack.kubeconfig, "no-pods")
        self.assertIn("the pod LIST failed", doc["rebalance"]["missing"])
        self.assertNotIn("episodes", doc["rebalance"])
        self.assertEqual(doc["workloads"], [])
        self.assertIn("workloads: not computed (the pod LIST failed", stdout)
        self.assertIn("rebalancer (estimated): not estimated: the pod LIST failed", stdout)
        self.assertIn("Not estimated: the pod LIST failed", page)
        # The marks are there all the same.
        self.assertEqual(len(doc["nodes"]["node-00002"]["marks"]), 1)


def cpu(quantity):
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


if __name__ == "__main__":
    unittest.main()
