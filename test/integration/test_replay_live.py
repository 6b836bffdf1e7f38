"""Replay and the live controller agree: the same load, pushed to the pushgateway while the
controller runs at -s 1, then replayed from Prometheus' history at a 1 s step, gives the same marks
(same nodes, same count) with every start and end within one step (plus the write's latency)."""
import json
import os
import subprocess
import time
import unittest

from harness import CONTROLLER, Controller, Stack, removes_mark, touched

RULES = """rules:
  - {name: cpu, query: live_cpu, threshold: 80, clearThreshold: 60, for: 3s}
maxMarkedFraction: 1
missingDataGrace: 10s
"""

# Seconds from the start -> {node: value}: a hot spell with hysteresis, a second one, a third
# node that stays cold.
SCRIPT = [
    (0, {"node-00002": 20, "node-00003": 20, "node-00004": 20}),
    (4, {"node-00002": 90}),
    (12, {"node-00002": 70, "node-00003": 95}),  # node-00002 in the band: stays
    (18, {"node-00002": 40}),
    (26, {"node-00003": 30}),
    (30, {"node-00002": 85}),
    (40, {"node-00002": 20}),
]
END = 46
TOLERANCE = 1.0 + 0.5  # one step, and the cycle's jitter and the PATCH's latency


def live_marks(stack):
    """Per node, [start, end] of our label from the simulator's write log (end None: still on)."""
    marks = {}
    for w in stack.writes()["writes"]:
        if w["user"] != "dynamic-scheduler":
            continue
        t = touched(w)
        if ("labels", "status") not in t:
            continue
        spans = marks.setdefault(w["name"], [])
        if removes_mark(w):
            spans[-1][1] = w["arrived"]
        else:
            spans.append([w["arrived"], None])
    return marks


class ReplayAgreesWithLiveIT(unittest.TestCase):
    def test_same_marks_within_one_step(self):
        stack = Stack(nodes=4, control_plane=1).start()
        try:
            c = Controller(stack, RULES, interval=1)
            c.wait_ready()
            start = time.time()
            for at, values in SCRIPT:
                while time.time() < start + at:
                    time.sleep(0.05)
                for node, v in values.items():
                    stack.push("live_cpu", node, v, {"node": node})
            while time.time() < start + END:
                time.sleep(0.1)
            live = live_marks(stack)
            c.stop()
            out_dir = os.path.join(stack.dir, "replay-live")
            rule_file = os.path.join(stack.dir, "replay-live.yaml")
            with open(rule_file, "w") as f:
                f.write(RULES)
            r = subprocess.run([CONTROLLER, "replay", "-r", rule_file, "-prom", stack.prom,
                                "-kubeconfig", stack.kubeconfig, "-from", str(int(start) - 2),
                                "-to", str(int(start) + END - 2), "-step", "1", "-out", out_dir],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(out_dir, "replay.json")) as f:
                got = json.load(f)
            replayed = {n: [[m["start_unix"], m["end_unix"]] for m in v["marks"]]
                        for n, v in got["nodes"].items() if v["marks"]}
            self.assertEqual(sorted(live), sorted(replayed), (live, replayed))
            for node, spans in live.items():
                self.assertEqual(len(spans), len(replayed[node]), (node, spans, replayed[node]))
                for (ls, le), (rs, re_) in zip(spans, replayed[node]):
                    self.assertLessEqual(abs(ls - rs), TOLERANCE, (node, "start", ls, rs))
                    if le is None or re_ is None:
                        self.assertEqual(le is None, re_ is None, (node, "end", le, re_))
                    else:
                        self.assertLessEqual(abs(le - re_), TOLERANCE, (node, "end", le, re_))
        finally:
            stack.stop()


if __name__ == "__main__":
    unittest.main()
