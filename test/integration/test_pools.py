"""Node pools and per-rule intervals end to end (rules[].nodeSelector, rules[].interval): the real
controller against real Prometheus, the pushgateway and the API simulator. Two pools with their own
thresholds see the same value and only one marks its node; a node relabelled out of its pool loses
the mark; and a rule with `interval: 3s` at `-s 1` reaches Prometheus about a third as often as a
rule of every cycle, counted in Prometheus's own query log."""
import json
import os
import unittest

from harness import Controller, StackTestCase, http, wait_until

GPU, GPU_IDLE, GENERAL, GENERAL_IDLE = "node-00002", "node-00003", "node-00004", "node-00005"

POOL_RULES = """
rules:
  - name: gpu-cpu
    query: pool_cpu
    threshold: 50
    nodeSelector: pool=gpu
  - name: general-cpu
    query: pool_cpu
    threshold: 80
    nodeSelector: pool=general
"""

INTERVAL_RULES = """
rules:
  - name: every
    query: every_cycle_cpu
    threshold: 80
  - name: slow
    query: slow_cpu + 0
    threshold: 80
    interval: 3s
"""


class PoolsIT(StackTestCase):
    # 5 managed nodes (node-00001 is the control plane): the herd cap allows 2 marks.
    STACK = {"nodes": 6, "control_plane": 1}

    def setUp(self):
        self.stack.wipe_pushgateway()
        self.stack.reset_marks("pool")
        self.controller = None

    def tearDown(self):
        if self.controller is not None:
            self.controller.stop()

    def pool(self, node, name):
        self.stack.kubectl("label", "node", node, "pool=" + name, "--overwrite")

    def push(self, metric, values):
        for node, v in values.items():
            self.stack.push(metric, node, v, {"node": node})

    def test_each_pool_has_its_threshold_and_a_node_leaving_it_loses_the_mark(self):
        for node in (GPU, GPU_IDLE):
            self.pool(node, "gpu")
        for node in (GENERAL, GENERAL_IDLE):
            self.pool(node, "general")
        # The same 60 on a GPU node and a general one: over the GPU pool's 50, under the general 80.
        self.push("pool_cpu", {GPU: 60, GENERAL: 60, GPU_IDLE: 10, GENERAL_IDLE: 10})
        self.stack.wait_value('count(pool_cpu)', 4)
        self.controller = Controller(self.stack, POOL_RULES)
        self.controller.wait_ready()
        wait_until(lambda: self.stack.labelled() == [GPU], 20, what="the GPU node marked")
        self.controller.wait_cycles(3)
        self.assertEqual(self.stack.labelled(), [GPU], "the general node's 60 is under its 80")
        # /nodes: the holding rule is the GPU pool's.
        holds = self.controller.nodes()
        self.assertIn(GPU, json.dumps(holds))
        self.assertIn("gpu-cpu", json.dumps(holds))
        self.assertNotIn("general-cpu", json.dumps(holds))

        # Into the general pool: the GPU rule lets go at once, and 60 is under the general 80.
        self.pool(GPU, "general")
        wait_until(lambda: self.stack.labelled() == [], 20, what="the mark removed after the relabel")
        # Out of every pool, with a value over both thresholds: no rule applies, no mark.
        self.pool(GPU, "none")
        self.push("pool_cpu", {GPU: 95})
        self.stack.wait_value('pool_cpu{node="%s"}' % GPU, 95)
        self.controller.wait_cycles(3)
        self.assertEqual(self.stack.labelled(), [])
        # Back into the GPU pool: marked again.
        self.pool(GPU, "gpu")
        wait_until(lambda: self.stack.labelled() == [GPU], 20, what="the GPU node marked again")

    def test_a_rule_with_an_interval_is_queried_a_third_as_often(self):
        # Prometheus's query log records every query it runs, with its expression.
        log = os.path.join(self.stack.dir, "query.log")
        cfg = os.path.join(self.stack.dir, "prometheus.yml")
        with open(cfg) as f:
            text = f.read()
        if "query_log_file" not in text:
            with open(cfg, "w") as f:
                f.write(text.replace("global:\n", "global:\n  query_log_file: '%s'\n" % log, 1))
            code, body = http("POST", self.stack.prom + "/-/reload", b"")
            self.assertEqual(code, 200, body)
        self.push("every_cycle_cpu", {GPU: 10})
        self.push("slow_cpu", {GENERAL: 90})
        self.stack.wait_value('slow_cpu{node="%s"}' % GENERAL, 90)
        self.controller = Controller(self.stack, INTERVAL_RULES, interval=1)
        self.controller.wait_ready()
        # Its answers reused between its queries still mark the node.
        wait_until(lambda: self.stack.labelled() == [GENERAL], 20, what="the slow rule's node marked")

        def counts():
            every = slow = 0
            with open(log) as f:
                for line in f:
                    q = json.loads(line).get("params", {}).get("query", "")
                    every += q == "every_cycle_cpu"
                    slow += q == "slow_cpu + 0"
            return every, slow

        wait_until(lambda: os.path.exists(log), 10, what="Prometheus's query log")
        every0, slow0 = counts()
        self.controller.wait_cycles(15, timeout=60)
        every1, slow1 = counts()
        every, slow = every1 - every0, slow1 - slow0
        print("queries over the window: every cycle %d, interval 3s %d" % (every, slow))
        self.assertGreaterEqual(every, 15)
        self.assertGreaterEqual(slow, every // 3 - 1)
        self.assertLessEqual(slow, every // 3 + 2)
        self.assertEqual(self.stack.labelled(), [GENERAL], "reused answers keep the mark")


if __name__ == "__main__":
    unittest.main()
