"""`predict:` end to end: real Prometheus holds 10 days of per-node CPU history, written with
promtool before it starts. Node A peaks at 90 every day from 10:00 to 14:00 UTC, node B at 40;
both sit at 30 the rest of the time and both read 30 now (pushed to the pushgateway). A predict
rule at threshold 80 marks A ahead of its peak and leaves B alone, where the ordinary rule on the
same series marks neither. Once the history is in, the controller asks Prometheus nothing more
for the rule until the next day ends."""
import json
import re
import time
import unittest

from harness import Controller, Stack, http, wait_until

A, B, OTHER = "node-00002", "node-00003", "node-00004"
METRIC = "pred_cpu"
DAYS = 8


def history(now):
    """OpenMetrics: every 5 min from 10 days back (at midnight UTC) until 2 h ago."""
    start, end = (int(now) // 86400 - 10) * 86400, int(now) - 2 * 3600
    lines = ["# TYPE %s gauge" % METRIC]
    for node, peak in ((A, 90), (B, 40), (OTHER, 30)):
        for t in range(start, end, 300):
            hour = (t % 86400) / 3600
            lines.append('%s{node="%s"} %s %d' % (METRIC, node, peak if 10 <= hour < 14 else 30, t))
    return "\n".join(lines) + "\n# EOF\n"


PREDICT_RULES = """rules:
  - name: cpu-peak
    query: %s
    threshold: 80
    predict: {days: %d, quantile: 0.95, halfLife: 2d}
""" % (METRIC, DAYS)

NOW_RULES = """rules:
  - name: cpu-now
    query: %s
    threshold: 80
""" % METRIC


def api_queries(stack):
    """Instant queries Prometheus has answered over its HTTP API (its own /metrics)."""
    text = http("GET", stack.prom + "/metrics")[1]
    m = re.search(r'^prometheus_http_requests_total\{code="200",handler="/api/v1/query"\} (\S+)$', text,
                  re.M)
    return float(m.group(1)) if m else 0.0


class PredictionIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # 4 managed nodes: the herd cap (half) is not what keeps B unmarked.
        cls.stack = Stack(nodes=5, control_plane=1, prom_history=history(time.time())).start()
        for node in (A, B, OTHER):
            cls.stack.push(METRIC, node, 30, {"node": node})
        cls.stack.wait_value('%s{node="%s"}' % (METRIC, OTHER), 30)

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def setUp(self):
        self.stack.reset_marks()
        self.controller = None

    def tearDown(self):
        if self.controller is not None:
            self.controller.stop()

    def test_ordinary_rule_marks_neither(self):
        self.controller = c = Controller(self.stack, NOW_RULES)
        c.wait_ready()
        c.wait_cycles(3)
        nodes = c.nodes()
        self.assertEqual(self.stack.labelled(), [])
        self.assertEqual(nodes["num"], 0)

    def test_predict_marks_the_node_that_peaks_and_then_asks_nothing(self):
        self.controller = c = Controller(self.stack, PREDICT_RULES)
        wait_until(lambda: self.stack.labelled() == [A], 30, what="A marked ahead of its peak")
        hold = c.holds(A)[0]
        self.assertEqual((hold["rule"], hold["threshold"]), ("cpu-peak", 80))
        self.assertAlmostEqual(hold["value"], 90, places=6)
        # Each of the 8 days was asked for once (at most 2 a cycle), then none again.
        fetched = re.findall(r"cpu-peak: predict: fetched day (\S+)", c.proc.output())
        self.assertEqual(len(fetched), DAYS, fetched)
        self.assertEqual(len(set(fetched)), DAYS)
        before = api_queries(self.stack)
        c.wait_cycles(5)
        self.assertEqual(api_queries(self.stack), before, "a steady cycle queried Prometheus")
        self.assertEqual(len(re.findall(r"predict: fetched day", c.proc.output())), DAYS)
        self.assertEqual(self.stack.labelled(), [A])

    def test_the_warm_up_is_said_in_the_state_and_on_status(self):
        # A long interval holds the warm-up (2 days a cycle, 8 days) for a while.
        self.controller = c = Controller(self.stack, PREDICT_RULES, interval=30)

        def rule():
            status, body = c.get("/api/v1/state")
            return json.loads(body)["rules"][0] if status == 200 and json.loads(body)["rules"] else {}
        wait_until(lambda: rule().get("warmingUp") == "2 of %d days" % DAYS, 30, what="the warm-up in the state")
        self.assertIn("2 of %d days of history fetched" % DAYS, rule()["error"])
        status, body = c.get("/status")
        self.assertEqual(status, 503, "the only rule cannot judge yet")
        self.assertIn("no rule can judge yet; rule cpu-peak warming up: 2 of %d days of history" % DAYS, body)
        self.assertNotIn("Prometheus unreachable", body)


if __name__ == "__main__":
    unittest.main()
