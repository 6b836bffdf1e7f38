"""Balance, closed loop (issue 39): the descheduler's best-known use. Six replicas of one workload
sit on one worker at 77 % CPU, two workers run at 13 %, and a new, empty worker joins. No absolute
threshold is crossed; a `relativeTo: mean` rule with `resource: cpu` says node-00002 stands out from
its pool, and relief spreads replicas until it is back within the mean plus the clear offset:
the real binary, real Prometheus and pushgateway, and the simulator's pods, scheduler model and
eviction subresource (test_rebalance.py's stack and load generator).

The numbers: 3920m allocatable per worker; each replica uses 0.5 cores (12.8 %), six of them
76.5 %; fillers of 0.5 cores on node-00003/4 (12.8 %); node-00005 empty. Mean 25.5: node-00002 is over 25.5 + 30 = 55.5 and clears at 25.5 + 15 = 40.5,
which three evictions reach (38.3 %); every destination stays at or below 55.5."""
import json
import os
import threading
import unittest

import yaml

from harness import Controller, http, touched, wait_until
from pod_load import KubeAdmin, cpu_cores, running
from test_rebalance import AFFINITY, RebalanceStack

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")

PACKED = "node-00002"
BUSY = ["node-00003", "node-00004"]
NEW = "node-00005"
REPLICAS = 6
POD_CORES = 0.5

RULE_YAML = """
missingDataGrace: 10s
rules:
  - {{name: skew, query: "max by (node) (it_node_cpu)", relativeTo: mean, threshold: 30,
     clearThreshold: 15, resource: cpu}}
rebalance:
  after: {after}
  holdAfterEviction: 4s
  podUsage:
    cpu: "sum by (namespace, pod) (it_pod_cpu)"
  minPodAge: 0s
  limits: {{perCycle: 1, perHour: 50, perNodePerHour: 20, nodeCooldown: 2s, perWorkload: 6}}
{underused}"""


class BalanceIT(RebalanceStack):
    def tearDown(self):
        self.stack.kubectl("uncordon", NEW, check=False)
        self.stack.kubectl("label", "nodes", "--all", "status-", check=False)
        super().tearDown()

    def pack(self):
        """Fillers on the busy workers (3 CPUs requested, 0.5 used), the new worker cordoned, then
        the six replicas, all on PACKED; then the new worker joins (uncordoned). Returns the
        replicas' names once Prometheus sees PACKED at 76.5 %."""
        self.stack.kubectl("cordon", NEW)
        for n in BUSY:
            code, obj = self.api.call("POST", "/api/v1/namespaces/%s/pods" % self.ns, {
                "metadata": {"name": "filler-" + n, "labels": {"app": "filler"}},
                "spec": {"nodeName": n, "containers": [{
                    "name": "c", "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "3", "memory": "128Mi"}}}]}})
            self.assertEqual(code, 201, obj)
        self.running_pods("filler", len(BUSY))
        spec = {"affinity": json.loads(json.dumps(AFFINITY)),
                "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}
        self.stack.sim_admin("POST", "/sim/workloads", {
            "namespace": self.ns, "name": "web", "replicas": REPLICAS, "deployment": "web",
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}})
        pods = self.running_pods("web", REPLICAS)
        self.assertEqual({p["spec"]["nodeName"] for p in pods}, {PACKED})
        self.stack.kubectl("uncordon", NEW)
        self.load.set(self.ns, "web", POD_CORES)
        self.load.set(self.ns, "filler", POD_CORES)
        want = 100 * REPLICAS * POD_CORES / 3.92
        wait_until(lambda: abs((self.node_cpu(PACKED) or 0) - want) < 0.01, 20,
                   what="Prometheus: %s at %.1f %%" % (PACKED, want))
        wait_until(lambda: all(abs((self.node_cpu(n) or 0) - 12.755) < 0.01 for n in BUSY), 20,
                   what="Prometheus: the busy workers at 12.8 %")
        self.assertEqual(self.node_cpu(NEW), 0.0)
        return sorted(p["metadata"]["name"] for p in pods)

    def start_balance(self, after="0s", underused=""):
        c = Controller(self.stack, RULE_YAML.format(after=after, underused=underused),
                       args=["-leader_elect_namespace", self.ns], name="controller-" + self.ns)
        self.controllers.append(c)
        return c

    def spread(self):
        """{node: running replicas of web}."""
        out = {}
        for p in self.pods("web"):
            if p.get("spec", {}).get("nodeName") and not p["metadata"].get("deletionTimestamp"):
                out[p["spec"]["nodeName"]] = out.get(p["spec"]["nodeName"], 0) + 1
        return out

    def moved(self, before):
        """{pod: node} of every replica of web the load generator saw bound that is not one of
        `before` (after one more push, so that the newest are in)."""
        n = self.load.pushes
        wait_until(lambda: self.load.pushes >= n + 2, 10, what="two more load pushes")
        return {name: node for (ns, name), node in self.load.bound.items()
                if ns == self.ns and name.startswith("web-") and name not in before}

    def balance(self, c, before):
        """Waits until PACKED is relieved and unmarked and the evictions stop; checks where they
        came from and where the replacements went. Returns the evictions."""
        self.wait_marked([PACKED])
        wait_until(lambda: len(self.evicted()) >= 1, 30, what="a first eviction")
        wait_until(lambda: (self.node_cpu(PACKED) or 100) <= 40.5, 40,
                   what="%s at or below the mean + 15" % PACKED)
        self.wait_marked([], timeout=30)
        done = len(self.evicted())
        c.wait_cycles(6)
        ev = self.evicted()
        self.assertEqual(len(ev), done, "no further eviction once balanced: %s" % ev)
        self.assertEqual([w for w in self.evictions() if w["code"] != 201], [])
        names = [w["name"].split("/", 1)[1] for w in ev]
        self.assertTrue(set(names) <= set(before), "only the packed replicas: %s" % names)
        self.assertEqual(len(ev), 3, "77 %% -> 38 %%: three replicas of 12.8 %% (%s)" % names)
        moved = self.moved(before)
        self.assertEqual(len(moved), len(ev), moved)
        self.assertNotIn(PACKED, moved.values(), "no bounce-back: %s" % moved)
        self.assertIn(NEW, moved.values(), "the new worker takes its share: %s" % moved)
        spread = self.spread()
        self.assertEqual(spread.get(PACKED), REPLICAS - 3, spread)
        # Nothing is hot by the rule any more: every worker at or below the mean + 30.
        values = [self.node_cpu(n) for n in [PACKED, NEW] + BUSY]
        mean = sum(values) / len(values)
        self.assertTrue(all(v <= mean + 30 for v in values), values)
        return ev

    def test_a_new_worker_gets_its_share_of_packed_replicas(self):
        before = self.pack()
        c = self.start_balance()
        self.balance(c, before)
        # What /rebalance says of each: the relative rule relieved, the goal its mean + 15.
        ev = self.rebalance()["evictions"]
        self.assertEqual(len(ev), 3, ev)
        for e in ev:
            self.assertEqual((e["node"], e["rule"]), (PACKED, "skew"), e)
            self.assertAlmostEqual(e["goal"], 25.5 + 15, delta=0.1, msg=e)

    def test_the_mirror_mode_does_not_mark_a_balance_destination_underused(self):
        # Relief waits 6 s after the mark; the empty worker is below cpuBelow for far longer than
        # `for` before any replica reaches it. It is where the packed replicas are to go.
        before = self.pack()
        c = self.start_balance(after="6s", underused="  underused: {cpuBelow: 10, for: 2s}\n")
        self.balance(c, before)
        underused = [w for w in self.controller_writes("PATCH")
                     if touched(w).get(("labels", "status")) == "underused"]
        self.assertEqual(underused, [], "no node was marked underused while balance needed it")
        self.assertEqual(self.stack.labelled(value="underused"), [])


class StateMetrics(threading.Thread):
    """kube-state-metrics' series for requests, from the simulator's pods and nodes, pushed every
    half second (one pushgateway group, replaced each time): kube_pod_container_resource_requests
    {namespace, pod, container, node, resource="cpu", unit="core"} per bound pod's container,
    kube_pod_status_phase{namespace, pod, phase} (1 for its phase, 0 for the others) and
    kube_node_status_allocatable{node, resource="cpu", unit="core"}, as kube-state-metrics v2 names
    them. What examples/requests-recording-rules.yml reads."""

    def __init__(self, stack):
        super().__init__(daemon=True)
        self.stack = stack
        self.api = KubeAdmin(stack)
        self.stopping = threading.Event()
        self.pushes = 0

    def step(self):
        lines = ["# TYPE kube_node_status_allocatable gauge\n"]
        for n in self.api.get("/api/v1/nodes")["items"]:
            lines.append('kube_node_status_allocatable{node="%s",resource="cpu",unit="core"} %r\n' % (
                n["metadata"]["name"], cpu_cores(n["status"]["allocatable"]["cpu"])))
        req, phase = ["# TYPE kube_pod_container_resource_requests gauge\n"], [
            "# TYPE kube_pod_status_phase gauge\n"]
        for p in self.api.get("/api/v1/pods")["items"]:
            meta, spec = p["metadata"], p.get("spec", {})
            if not spec.get("nodeName"):
                continue
            for c in spec.get("containers", []):
                cpu = c.get("resources", {}).get("requests", {}).get("cpu")
                if cpu:
                    req.append('kube_pod_container_resource_requests{namespace="%s",pod="%s",container="%s",'
                               'node="%s",resource="cpu",unit="core"} %r\n' % (
                                   meta["namespace"], meta["name"], c["name"], spec["nodeName"], cpu_cores(cpu)))
            now = p.get("status", {}).get("phase", "Pending")
            for ph in ("Pending", "Running", "Succeeded", "Failed"):
                phase.append('kube_pod_status_phase{namespace="%s",pod="%s",phase="%s"} %d\n' % (
                    meta["namespace"], meta["name"], ph, 1 if ph == now else 0))
        code, text = http("PUT", self.stack.pgw + "/metrics/job/ksm", "".join(lines + req + phase).encode())
        if code not in (200, 202):
            raise OSError("pushgateway answered %d: %s" % (code, text))
        self.pushes += 1

    def run(self):
        while not self.stopping.is_set():
            try:
                self.step()
            except Exception:  # the test sees the values it waits for, or not
                pass
            self.stopping.wait(0.5)


class BalanceByRequestsIT(RebalanceStack):
    """The requests-based recipe of docs/rebalancing.md as shipped: Prometheus evaluates
    examples/requests-recording-rules.yml over kube-state-metrics' series, and the controller runs
    examples/rule-balance-requests.yaml (its waits shortened for a test). Six replicas requesting
    500m each (76.5 % of 3920m) on one worker, fillers of 500m (12.8 %) on two, one empty: mean 25.5,
    over 45.5, relieved to 35.5 -- four replicas of 12.8 % move (38.3 % is still over 35.5)."""
    RULE_FILES = (os.path.join(EXAMPLES, "requests-recording-rules.yml"),)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ksm = StateMetrics(cls.stack)
        cls.ksm.start()

    @classmethod
    def tearDownClass(cls):
        cls.ksm.stopping.set()
        cls.ksm.join(10)
        super().tearDownClass()

    def tearDown(self):
        for n in [NEW] + BUSY:
            self.stack.kubectl("uncordon", n, check=False)
        super().tearDown()

    def requested(self, node):
        res = self.stack.query('node:dynamic_scheduler_cpu_requests:percent{node="%s"}' % node)
        return float(res[0]["value"][1]) if res else None

    def test_the_requests_recipe_spreads_a_packed_worker(self):
        for n in [NEW] + BUSY:  # the replicas all go to PACKED; the fillers are placed by name
            self.stack.kubectl("cordon", n)
        container = {"name": "c", "image": "registry.k8s.io/pause:3.9",
                     "resources": {"requests": {"cpu": "500m", "memory": "64Mi"}}}
        for n in BUSY:
            code, obj = self.api.call("POST", "/api/v1/namespaces/%s/pods" % self.ns, {
                "metadata": {"name": "filler-" + n, "labels": {"app": "filler"}},
                "spec": {"nodeName": n, "containers": [container]}})
            self.assertEqual(code, 201, obj)
        self.stack.sim_admin("POST", "/sim/workloads", {
            "namespace": self.ns, "name": "web", "replicas": REPLICAS, "deployment": "web",
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"affinity": json.loads(json.dumps(AFFINITY)), "containers": [container]}}})
        before = sorted(p["metadata"]["name"] for p in self.running_pods("web", REPLICAS))
        self.assertEqual({p["spec"]["nodeName"] for p in self.pods("web")}, {PACKED})
        for n in [NEW] + BUSY:
            self.stack.kubectl("uncordon", n)
        wait_until(lambda: abs((self.requested(PACKED) or 0) - 300 / 3.92) < 0.01, 20,
                   what="the recording rule: %s at 76.5 %% requested" % PACKED)
        wait_until(lambda: self.requested(NEW) == 0.0, 20, what="the new worker at 0 % requested")

        with open(os.path.join(EXAMPLES, "rule-balance-requests.yaml")) as f:
            cfg = yaml.safe_load(f)
        del cfg["interval"]  # -s 1
        cfg["rebalance"].update({"after": "0s", "holdAfterEviction": "4s", "minPodAge": "0s", "settle": "2s"})
        cfg["rebalance"]["limits"].update({"nodeCooldown": "2s", "perCycle": 1})
        c = Controller(self.stack, yaml.safe_dump(cfg), args=["-leader_elect_namespace", self.ns],
                       name="controller-" + self.ns)
        self.controllers.append(c)
        self.wait_marked([PACKED])
        wait_until(lambda: (self.requested(PACKED) or 100) <= 35.5 + 0.01, 60,
                   what="%s at or below the mean + 10 by requests" % PACKED)
        self.wait_marked([], timeout=30)
        done = len(self.evicted())
        c.wait_cycles(6)
        ev = self.evicted()
        self.assertEqual(len(ev), done, "nothing more once balanced")
        self.assertEqual(len(ev), 4, ev)
        self.assertTrue({w["name"].split("/", 1)[1] for w in ev} <= set(before))
        where = {}
        for p in self.pods("web"):
            if running(p):
                where[p["spec"]["nodeName"]] = where.get(p["spec"]["nodeName"], 0) + 1
        self.assertEqual(where.get(PACKED), 2, where)
        self.assertGreaterEqual(where.get(NEW, 0), 1, where)
        values = [self.requested(n) for n in [PACKED, NEW] + BUSY]
        self.assertTrue(all(v <= sum(values) / 4 + 20 + 0.01 for v in values), values)


if __name__ == "__main__":
    unittest.main()
