"""`dynamic-scheduler -once` (issue 39 item 4): the real binary, one pass at a time, against real
Prometheus + pushgateway and the Kubernetes API simulator. One test per sentence of the issue:
marks and exit 0; nothing written on a second pass; hysteresis across passes; a node hot for 4 s not
marked by a `for: 60s` rule (and marked by a `for: 2s` one: `for` is judged on Prometheus' history);
Prometheus or the API server down -> non-zero, the error named, nothing removed; -dry_run names the
node and writes nothing. Each pass must finish in seconds."""
import json
import os
import subprocess
import time
import unittest

from harness import CONTROLLER, Stack, free_port, wait_until

HELD_BY = "dynamic-scheduler.io/held-by"
RULES = """
rules:
  - name: cpu
    query: {metric}
    operator: ">"
    threshold: 80
    clearThreshold: 60{extra}
maxMarkedFraction: 1
"""
# A pass on a handful of nodes takes well under a second; the bound leaves room for a loaded
# 2-core machine.
PASS_SECONDS = 10


class OnceIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = Stack(nodes=4, control_plane=1).start()
        cls.wall_times = []

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()
        if cls.wall_times:
            print("\n-once wall time: min %.2f s, max %.2f s over %d passes" %
                  (min(cls.wall_times), max(cls.wall_times), len(cls.wall_times)))

    def setUp(self):
        self.stack.reset_marks()
        self.stack.sim_admin("DELETE", "/sim/writes")
        self.metric = "it_" + self._testMethodName

    def push(self, node, value):
        self.stack.push(self.metric, node, value, {"node": node})
        self.stack.wait_value('%s{node="%s"}' % (self.metric, node), value)

    def once(self, extra_rule="", args=(), prom=None, kubeconfig=None):
        """One pass of the real binary: (exit status, stdout, stderr)."""
        rule_file = os.path.join(self.stack.dir, self._testMethodName + "-rule.yaml")
        with open(rule_file, "w") as f:
            f.write(RULES.format(metric=self.metric, extra=extra_rule))
        cmd = [CONTROLLER, "-once", "-prom", prom or self.stack.prom, "-kubeconfig",
               kubeconfig or self.stack.kubeconfig, "-r", rule_file, "-s", "1", *args]
        start = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        took = time.monotonic() - start
        self.wall_times.append(took)
        self.assertLess(took, PASS_SECONDS, "a pass finishes in seconds:\n" + r.stderr)
        return r.returncode, r.stdout, r.stderr

    def writes(self):
        """The PATCHes the controller (user dynamic-scheduler) sent since setUp."""
        return [w for w in self.stack.writes()["writes"] if w["user"] == "dynamic-scheduler"
                and w["verb"] == "PATCH" and w["name"].startswith("node-")]

    def test_marks_the_hot_node_and_exits_zero(self):
        self.push("node-00004", 95)
        self.push("node-00002", 20)
        rc, out, err = self.once(args=["-o", "json"])
        self.assertEqual(rc, 0, out + err)
        summary = json.loads(out)
        self.assertEqual(summary["exit_code"], 0)
        self.assertEqual(summary["errors"], [])
        self.assertEqual([(c["node"], c["action"], c["written"]) for c in summary["changes"]],
                         [("node-00004", "mark", True)])
        self.assertEqual(summary["changes"][0]["rules"],
                         [{"rule": "cpu", "value": 95, "op": ">", "threshold": 80}])
        self.assertEqual(self.stack.labelled(), ["node-00004"])
        record = json.loads(self.stack.node_annotations("node-00004")[HELD_BY])
        self.assertEqual([r["rule"] for r in record["rules"]], ["cpu"])

    def test_a_second_pass_with_nothing_changed_writes_nothing(self):
        self.push("node-00004", 95)
        self.push("node-00002", 20)
        rc, out, err = self.once()
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(self.stack.labelled(), ["node-00004"])
        first = len(self.writes())
        self.assertGreater(first, 0)
        rc, out, err = self.once()
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(len(self.writes()), first, "nothing changed: nothing written\n" + out)
        self.assertIn("0 marked, 0 unmarked", out)
        self.assertEqual(self.stack.labelled(), ["node-00004"])

    def test_hysteresis_across_passes(self):
        self.push("node-00004", 95)
        self.push("node-00002", 20)
        self.assertEqual(self.once()[0], 0)
        self.assertEqual(self.stack.labelled(), ["node-00004"])
        # Both in the band (60, 80]: the marked node keeps its mark (its record says cpu held it),
        # the unmarked one stays unmarked.
        self.push("node-00004", 70)
        self.push("node-00002", 70)
        rc, out, err = self.once()
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(self.stack.labelled(), ["node-00004"], out)
        # At the clear threshold the mark goes, with its record.
        self.push("node-00004", 60)
        rc, out, err = self.once()
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(self.stack.labelled(), [], out)
        self.assertIn("unmarked node-00004 (cpu 60 <= 60)", out)
        self.assertNotIn(HELD_BY, self.stack.node_annotations("node-00004"))

    def test_for_is_judged_on_prometheus_history(self):
        self.push("node-00003", 20)
        self.push("node-00003", 95)
        visible = time.monotonic()
        # Hot for 4 s in Prometheus' history by the time the passes run.
        wait_until(lambda: time.monotonic() - visible >= 4, 10, what="4 s of the hot value")
        rc, out, err = self.once("\n    for: 60s")
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(self.stack.labelled(), [], "hot for 4 s: `for: 60s` has not passed\n" + out)
        self.assertIn("0 marked", out)
        # The same 4 s satisfy a `for: 2s` rule: the pass read them from the history, it did
        # not start `for` at its own start.
        rc, out, err = self.once("\n    for: 2s")
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(self.stack.labelled(), ["node-00003"], out + err)

    def test_prometheus_down_exits_non_zero_and_removes_nothing(self):
        self.push("node-00004", 95)
        self.assertEqual(self.once()[0], 0)
        self.assertEqual(self.stack.labelled(), ["node-00004"])
        before = len(self.writes())
        down = "http://127.0.0.1:%d" % free_port()  # nothing listens there
        for extra in ("", "\n    for: 30s"):  # the cycle's query, and the history for `for`
            with self.subTest(rule=extra.strip() or "no for"):
                rc, out, err = self.once(extra, prom=down)
                self.assertNotEqual(rc, 0, out + err)
                self.assertEqual(rc, 2)
                self.assertIn("Prometheus: rule cpu", err)
                self.assertEqual(self.stack.labelled(), ["node-00004"])
                self.assertEqual(len(self.writes()), before, "nothing written, nothing removed")

    def test_the_api_server_failing_exits_non_zero_and_names_it(self):
        self.push("node-00004", 95)
        self.stack.fault(match="list", status=403, count=1)
        try:
            rc, out, err = self.once()
        finally:
            self.stack.clear_faults()
        self.assertEqual(rc, 2, out + err)
        self.assertIn("the API server: listing the nodes", err)
        self.assertEqual(self.writes(), [])

    def test_dry_run_names_the_node_and_writes_nothing(self):
        self.push("node-00004", 95)
        self.push("node-00002", 20)
        rc, out, err = self.once(args=["-dry_run"])
        self.assertEqual(rc, 0, out + err)
        self.assertIn("would mark node-00004 (cpu 95 > 80)", out)
        self.assertNotIn("node-00002", out)
        self.assertEqual(self.writes(), [])
        self.assertEqual(self.stack.labelled(), [])

    def test_no_leader_election(self):
        self.push("node-00004", 95)
        rc, out, err = self.once(args=["-leader_elect"])
        self.assertEqual(rc, 0, out + err)
        self.assertIn("-once: no leader election (-leader_elect is ignored)", err)
        self.assertEqual(self.stack.labelled(), ["node-00004"])
        leases = self.stack.kubectl("get", "leases", "-A", "-o", "name").stdout.split()
        self.assertEqual([l for l in leases if l.endswith("/dynamic-scheduler")], [], leases)

    def test_unknown_output_format_is_refused(self):
        rc, out, err = self.once(args=["-o", "yaml"])
        self.assertEqual(rc, 2)
        self.assertIn('-o "yaml": expected text or json', err)


if __name__ == "__main__":
    unittest.main()
