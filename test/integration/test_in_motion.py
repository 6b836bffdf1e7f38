"""Relief that knows what is already moving (issue 38), closed loop: the real binary, real
Prometheus and pushgateway, the simulator with the deploy RBAC. The stack is test_rebalance's, with
graceful deletions that take 30 s: an evicted pod stays listed (terminating) that long.

The hot node (node-00002) runs 4 pods of 0.85 cores: 86.7 %; its goal is the rule's clear
threshold, 60 %, so exactly two of them must go (65.0 %, then 43.4 %).
- Pods that keep using CPU while they terminate: the node's value does not fall until they are
  gone, 30 s later, long after the cool-down (3 s). Exactly two are evicted.
- Values that lag: the node's value is a 60 s mean (as a recording rule over a rate shows it), and
  rebalance.settle says so. Exactly two are evicted.
- perHour 1 with the controller killed (-9) and started again, and with a failover between two
  replicas: one eviction in the hour, read back from the ledger.
- Other disruptors: a Deployment mid-rollout, an HPA scaling it down, a node a cluster-autoscaler
  removes: nothing evicted there, the reason on /rebalance and in the skip counter."""
import json
import signal
import time
import unittest

from harness import Controller, wait_until
from test_rebalance import HOT, POD_PERCENT, RULE_YAML, RebalanceStack, metric0


class InMotionIT(RebalanceStack):
    GRACE_SECONDS = 30

    def tearDown(self):
        self.load.count_terminating = False
        self.load.lag(0)
        super().tearDown()

    def node_report(self, c):
        code, text = c.get("/rebalance")
        self.assertEqual(code, 200, text)
        for n in json.loads(text)["nodes"]:
            if n["name"] == HOT:
                return n
        return None

    def test_pods_that_keep_using_cpu_while_they_terminate(self):
        self.load.count_terminating = True
        self.setup_hot(affinity=True)
        c = self.start("{perCycle: 1, perHour: 50, perNodePerHour: 20, nodeCooldown: 3s, perWorkload: 5}")
        self.wait_marked([HOT])
        wait_until(lambda: len(self.evicted()) >= 2, 30, what="two evictions")
        # Both still terminating: the node's value has not moved, the cool-down is long over.
        report = wait_until(lambda: (lambda n: n if n and n.get("qualification") == "in_motion" else None)(
            self.node_report(c)), 15, what="/rebalance: %s in motion" % HOT)
        self.assertEqual(report["leaving"]["pods"], 2, report)
        self.assertAlmostEqual(report["leaving"]["usage"], 2 * POD_PERCENT, places=1)
        self.assertEqual(report["leaving"]["until"], "", "until they are gone")
        self.assertGreater(self.node_cpu(HOT), 80, "the terminating pods still use their CPU")
        wait_until(lambda: (self.node_cpu(HOT) or 100) < 60, 45, what="%s cooled once they are gone" % HOT)
        c.wait_cycles(3)
        self.assertEqual(len(self.evicted()), 2, "exactly what the goal needs: %s" % self.evicted())
        self.assertGreater(metric0(c, "dynamic_scheduler_eviction_skips_total", reason="in_motion"), 0)

    def test_values_that_lag_behind_the_pods(self):
        self.load.count_terminating = True
        self.setup_hot(affinity=True)
        self.load.lag(60)  # a 60 s mean from now on, of a node that was at 86.7 % for a minute
        c = self.start("{perCycle: 1, perHour: 50, perNodePerHour: 20, nodeCooldown: 3s, perWorkload: 5}",
                       windows="  settle: 62s\n")
        self.wait_marked([HOT])
        try:
            wait_until(lambda: len(self.evicted()) >= 2, 30, what="two evictions")
        except AssertionError as e:
            raise AssertionError("%s; /rebalance: %s; skips: %s" % (e, self.node_report(c), [
                l for l in c.get("/metrics")[1].splitlines() if "skips_total{" in l])) from None
        first = self.evicted()[0]["time"]
        # Both keep running for their 30 s grace period, then the mean falls below the clear
        # threshold about 37 s after they stopped.
        wait_until(lambda: (self.node_cpu(HOT) or 100) < 60, 100, what="%s's mean below 60 %%" % HOT)
        c.wait_cycles(3)
        self.assertEqual(len(self.evicted()), 2, "the lagging value held no third eviction: %s" % self.evicted())
        self.assertGreater(time.time() - first, 30, "the node was over its threshold for a while after")
        self.assertGreater(metric0(c, "dynamic_scheduler_eviction_skips_total", reason="in_motion"), 0)

    def wait_gone(self, evicted):
        """Until the evicted pod is gone (its 30 s grace period): its usage no longer counts as
        leaving (a gauge's settle time is one interval), and the node qualifies on its own heat."""
        name = evicted["name"].split("/", 1)[1]
        wait_until(lambda: name not in [p["metadata"]["name"] for p in self.pods("hot")], 45,
                   what="%s gone" % name)

    def ledger(self):
        out = self.stack.kubectl("get", "lease", "-n", self.ns, "dynamic-scheduler-evictions", "-o",
                                 "jsonpath={.metadata.annotations.dynamic-scheduler\\.io/evictions}").stdout
        return json.loads(out) if out else []

    def test_per_hour_holds_across_a_kill_and_a_restart(self):
        self.setup_hot(affinity=True)
        limits = "{perCycle: 1, perHour: 1, perNodePerHour: 20, nodeCooldown: 3s, perWorkload: 5}"
        c = self.start(limits, name="first-" + self.ns)
        self.wait_marked([HOT])
        wait_until(lambda: len(self.evicted()) == 1, 30, what="the first eviction")
        entries = self.ledger()
        self.assertEqual([e["p"] for e in entries], [self.evicted()[0]["name"]])
        c.proc.stop(sig=signal.SIGKILL)
        self.controllers.remove(c)
        c2 = self.start(limits, name="second-" + self.ns)
        c2.wait_ready()
        self.wait_gone(self.evicted()[0])
        c2.wait_cycles(5)  # the node still needs a second eviction
        self.assertGreater(self.node_cpu(HOT), 60)
        self.assertEqual(len(self.evicted()), 1, "perHour 1 whoever evicted: %s" % self.evicted())
        self.assertGreater(metric0(c2, "dynamic_scheduler_eviction_skips_total", reason="per_hour"), 0)

    def test_per_hour_holds_across_a_failover(self):
        self.setup_hot(affinity=True)
        limits = "{perCycle: 1, perHour: 1, perNodePerHour: 20, nodeCooldown: 3s, perWorkload: 5}"
        args = ["-leader_elect", "-leader_elect_namespace", self.ns, "-leader_elect_retry_period", "1",
                "-leader_elect_renew_deadline", "3", "-leader_elect_lease_duration", "4"]
        a = self.start(limits, args=args, name="a-" + self.ns)
        wait_until(lambda: a.metric("dynamic_scheduler_leader") == 1, 20, what="a leads")
        b = self.start(limits, args=args, name="b-" + self.ns)
        b.wait_ready()
        self.wait_marked([HOT])
        wait_until(lambda: len(self.evicted()) == 1, 30, what="the first eviction")
        a.proc.stop(sig=signal.SIGKILL)
        self.controllers.remove(a)
        wait_until(lambda: b.metric("dynamic_scheduler_leader") == 1, 20, what="b takes over")
        self.wait_gone(self.evicted()[0])
        b.wait_cycles(5)  # the node still needs a second eviction
        self.assertEqual(len(self.evicted()), 1, "perHour 1 across the failover: %s" % self.evicted())
        self.assertGreater(metric0(b, "dynamic_scheduler_eviction_skips_total", reason="per_hour"), 0)

    def disrupted(self, c, who):
        n = self.node_report(c)
        return (n or {}).get("otherDisruptors", {}).get(who, 0)

    def test_a_deployment_mid_rollout_then_done(self):
        self.setup_hot(affinity=True, deployment=True)
        self.stack.sim_admin("POST", "/sim/rollouts", {"kind": "Deployment", "namespace": self.ns, "name": "hot",
                                                       "updatedReplicas": 1})
        c = self.start("{perCycle: 1, perHour: 50, perNodePerHour: 20, nodeCooldown: 3s, perWorkload: 5}")
        self.wait_marked([HOT])
        wait_until(lambda: self.disrupted(c, "rollout") == 4, 20, what="/rebalance: 4 pods left to the rollout")
        c.wait_cycles(3)
        self.assertEqual(self.evicted(), [])
        self.assertGreater(metric0(c, "dynamic_scheduler_eviction_skips_total", reason="rollout"), 0)
        self.stack.sim_admin("POST", "/sim/rollouts", {"kind": "Deployment", "namespace": self.ns, "name": "hot",
                                                       "done": True})
        wait_until(lambda: len(self.evicted()) >= 1, 20, what="an eviction once the rollout is done")

    def test_an_hpa_scaling_the_workload_down(self):
        self.setup_hot(affinity=True, deployment=True)
        self.stack.sim_admin("POST", "/sim/hpas", {"namespace": self.ns, "name": "hot",
                                                   "target": {"kind": "Deployment", "name": "hot"},
                                                   "minReplicas": 1, "maxReplicas": 10,
                                                   "currentReplicas": 4, "desiredReplicas": 2})
        c = self.start("{perCycle: 1, perHour: 50, perNodePerHour: 20, nodeCooldown: 3s, perWorkload: 5}")
        self.wait_marked([HOT])
        wait_until(lambda: self.disrupted(c, "scale_down") == 4, 20, what="/rebalance: 4 pods left to the HPA")
        c.wait_cycles(3)
        self.assertEqual(self.evicted(), [])
        self.api.call("DELETE", "/apis/autoscaling/v2/namespaces/%s/horizontalpodautoscalers/hot" % self.ns)

    def test_a_node_the_cluster_autoscaler_removes(self):
        self.setup_hot(affinity=True)
        self.stack.kubectl("taint", "node", HOT, "ToBeDeletedByClusterAutoscaler=1733580000:NoSchedule")
        try:
            c = self.start("{perCycle: 1, perHour: 50, perNodePerHour: 20, nodeCooldown: 3s, perWorkload: 5}")
            self.wait_marked([HOT])
            wait_until(lambda: (self.node_report(c) or {}).get("limitedBy") == "node_removal", 20,
                       what="/rebalance: %s limited by node_removal" % HOT)
            c.wait_cycles(3)
            self.assertEqual(self.evicted(), [])
            self.assertGreater(metric0(c, "dynamic_scheduler_eviction_skips_total", reason="node_removal"), 0)
        finally:
            self.stack.kubectl("taint", "node", HOT, "ToBeDeletedByClusterAutoscaler-")


if __name__ == "__main__":
    unittest.main()
