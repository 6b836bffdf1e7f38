"""Memory relief before the kubelet, closed loop: the real dynamic-scheduler binary, real Prometheus
and pushgateway, and the Kubernetes API simulator.

The load generator (pod_load.py) pushes each pod's working set and each node's memory.available
(capacity minus its running pods' working sets, as the kubelet computes it). On node-00002 run a
Guaranteed pod (8 GiB requested and limited, 7.5 GiB in use: within its requests) and a burstable
pod whose working set grows past its 256 MiB request, 0.1 GiB every half second. The rule
`memory-available` (operator "<", resource: memory: bytes available, relieveAfter: 0s) marks the
node below 6 GiB available and relieves it up to 7 GiB; the simulated kubelet would kill at 4 GiB.
`rebalance.after` is 10 minutes, so only the rule's own urgency lets it act in time. The pod over its
requests must go first through the Eviction API (the kubelet's order), the Guaranteed pod stays,
and the node never reaches the kubelet's threshold."""
import json
import os
import shutil
import tempfile
import time
import unittest

from harness import Controller, Stack, wait_until
from pod_load import KubeAdmin, LoadGenerator, running
from test_rebalance import AFFINITY, deploy_rbac

HOT = "node-00002"
OTHERS = ["node-00003", "node-00004", "node-00005"]
GiB = float(1 << 30)
THRESHOLD = 6 * GiB
CLEAR = 7 * GiB
KUBELET_HARD = 4 * GiB  # the simulated kubelet's evictionHard memory.available
GROWTH = 0.1 * GiB  # the burstable pod's working set, per step of the test's loop
STEP = 0.5

RULE_YAML = """
missingDataGrace: 10s
rules:
  - {name: cpu, query: "max by (node) (it_node_cpu)", threshold: 80, clearThreshold: 60, resource: cpu}
  - name: memory-available
    query: "min by (node) (it_node_mem_available)"
    operator: "<"
    resource: memory
    threshold: %d
    clearThreshold: %d
    relieveAfter: 0s
rebalance:
  after: 10m
  holdAfterEviction: 6s
  podUsage:
    cpu: "sum by (namespace, pod) (it_pod_cpu)"
    memory: "sum by (namespace, pod) (it_pod_mem)"
  minPodAge: 0s
  limits: {perCycle: 1, perHour: 50, perNodePerHour: 20, nodeCooldown: 3s, perWorkload: 5}
""" % (THRESHOLD, CLEAR)


class MemoryReliefIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ds-mem-")
        rbac_file = os.path.join(cls.tmp, "rbac.json")
        with open(rbac_file, "w") as f:
            json.dump(deploy_rbac(), f)
        cls.stack = Stack(nodes=5, control_plane=1, sim_args=[
            "-rbac", rbac_file, "-pod_grace_seconds", "1", "-pod_start_seconds", "1"]).start()
        cls.api = KubeAdmin(cls.stack)
        cls.load = LoadGenerator(cls.stack)
        cls.load.start()

    @classmethod
    def tearDownClass(cls):
        cls.load.stop()
        cls.stack.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pods(self, app):
        return self.api.get("/api/v1/namespaces/%s/pods?labelSelector=app%%3D%s" % (self.ns, app))["items"]

    def running_pods(self, app, count, timeout=20):
        def ok():
            ps = self.pods(app)
            return ps if len(ps) == count and all(running(p) for p in ps) else None
        return wait_until(ok, timeout, what="%d running pods app=%s" % (count, app))

    def workload(self, name, resources):
        spec = {"affinity": json.loads(json.dumps(AFFINITY)),
                "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9", "resources": resources}]}
        self.stack.sim_admin("POST", "/sim/workloads", {
            "namespace": self.ns, "name": name, "replicas": 1,
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec}})

    def evicted(self):
        return [w for w in self.stack.writes()["writes"]
                if w["user"] == "dynamic-scheduler" and w["verb"] == "EVICT" and w["code"] == 201]

    def test_the_pod_over_its_requests_moves_before_the_kubelet_must(self):
        self.ns = "memory-relief"
        self.stack.reset_marks()
        self.stack.sim_admin("DELETE", "/sim/writes")
        # Fillers keep the other workers busy by CPU requests: both workloads land on HOT.
        for n in OTHERS:
            code, obj = self.api.call("POST", "/api/v1/namespaces/%s/pods" % self.ns, {
                "metadata": {"name": "filler-" + n, "labels": {"app": "filler"}},
                "spec": {"nodeName": n, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                                                        "resources": {"requests": {"cpu": "3", "memory": "128Mi"}}}]}})
            self.assertEqual(code, 201, obj)
        self.running_pods("filler", len(OTHERS))
        guaranteed = {"cpu": "100m", "memory": "8Gi"}
        self.workload("guaranteed", {"requests": guaranteed, "limits": guaranteed})
        self.workload("burst", {"requests": {"cpu": "100m", "memory": "256Mi"}})
        g = self.running_pods("guaranteed", 1)[0]
        b = self.running_pods("burst", 1)[0]
        self.assertEqual((g["spec"]["nodeName"], b["spec"]["nodeName"]), (HOT, HOT))
        self.load.set_memory(self.ns, "guaranteed", 7.5 * GiB)
        burst = 1 * GiB
        self.load.set_memory(self.ns, "burst", burst)
        wait_until(lambda: self.stack.query('it_node_mem_available{node="%s"} > %d' % (HOT, THRESHOLD)), 20,
                   what="Prometheus: %s's memory.available" % HOT)

        c = Controller(self.stack, RULE_YAML, name="controller-memory")
        try:
            c.wait_ready()
            c.wait_cycles(2)
            self.assertEqual(self.stack.labelled(), [], "above the threshold: no mark")
            # The burstable pod's working set grows until the controller evicts it.
            started = time.monotonic()
            while not self.evicted():
                self.assertLess(time.monotonic() - started, 60, "no eviction within 60 s")
                burst = min(burst + GROWTH, 5 * GiB)
                self.load.set_memory(self.ns, "burst", burst)
                time.sleep(STEP)
            crossed = self.load.min_available[HOT]
            ev = self.evicted()
            self.assertEqual([w["name"] for w in ev], ["%s/%s" % (self.ns, b["metadata"]["name"])],
                             "the pod over its requests goes first")
            # Relieved: 1 GiB or more freed is enough for 7 GiB available; nothing else goes.
            wait_until(lambda: self.load.available.get(HOT, 0) >= CLEAR, 20,
                       what="%s back above the clear threshold" % HOT)
            wait_until(lambda: self.stack.labelled() == [], 30, what="the mark gone")
            c.wait_cycles(3)
            self.assertEqual(len(self.evicted()), 1, self.evicted())
            self.assertGreater(self.load.min_available[HOT], KUBELET_HARD,
                               "relieved before the kubelet's threshold (lowest %.2f GiB; %.2f GiB when "
                               "the eviction was seen)" % (self.load.min_available[HOT] / GiB, crossed / GiB))
            g_now = self.running_pods("guaranteed", 1)[0]
            self.assertEqual((g_now["metadata"]["name"], g_now["spec"]["nodeName"]),
                             (g["metadata"]["name"], HOT), "the Guaranteed pod within its requests stays")
            moved = self.running_pods("burst", 1)[0]
            self.assertIn(moved["spec"]["nodeName"], OTHERS, "the replacement avoids the marked node")
            rb = json.loads(c.get("/rebalance")[1])
            last = rb["evictions"][-1]
            self.assertEqual(last["unit"], "bytes")
            self.assertEqual(last["rule"], "memory-available")
            self.assertLess(last["load"], THRESHOLD, "bytes available when it acted")
            self.assertEqual(last["goal"], CLEAR)
            self.assertGreater(last["usage"], 1 * GiB, "the pod's working set, in bytes")
        finally:
            c.stop()
            self.load.clear(self.ns)


if __name__ == "__main__":
    unittest.main()
