"""`dynamic-scheduler replay` against a real Prometheus whose two days of history are written with
promtool before it starts. Each node follows a known pattern at minute resolution; the marks the
replay reports (start, end, count, the rules that set them) are derived here from the rule file's
semantics, independently of the code: `for`, hysteresis, a data gap shorter and one longer than
missingDataGrace, maxAge with an ageQuery (a pusher that died), the herd cap binding, and a
cluster-wide gap (Prometheus down: marks held)."""
import json
import os
import subprocess
import time
import unittest

from harness import CONTROLLER, Stack

MIN = 60
DAYS_MIN = 2 * 24 * 60  # minutes of history
FOR_MIN = 5             # the cpu rule's `for`, in minutes
GRACE_MIN = 10          # missingDataGrace
MAX_AGE_S = 300         # the mem rule's maxAge
LOOKBACK_MIN = 5        # Prometheus' default lookback: a step sees the newest sample in it

RULES = """rules:
  - name: cpu
    query: replay_cpu
    threshold: 80
    clearThreshold: 60
    for: %dm
  - name: mem
    query: replay_mem
    threshold: 90
    maxAge: %ds
    ageQuery: replay_push_time
missingDataGrace: %dm
maxMarked: 2
""" % (FOR_MIN, MAX_AGE_S, GRACE_MIN)


def scenario(nodes):
    """Per node and metric, {minute: value} overrides of the base (cpu 20, mem 20), the minutes
    without any sample, and the minute after which a node's pusher died (push time frozen)."""
    n1, n2, n3, n4 = nodes
    cpu = {n: {} for n in nodes}
    mem = {n: {} for n in nodes}

    def put(series, node, lo, hi, v):
        for m in range(lo, hi):
            series[node][m] = v
    put(cpu, n1, 100, 103, 90)    # over the threshold for 3 minutes: `for` (5m) is not met
    put(cpu, n1, 200, 300, 90)    # hot: marked after `for`
    put(cpu, n1, 300, 400, 70)    # in the hysteresis band: stays marked
    put(cpu, n1, 400, 420, 50)    # cleared
    put(cpu, n2, 600, 900, 90)    # hot, with a gap of 8 minutes in it (shorter than the grace)
    put(cpu, n2, 1000, 1100, 90)  # hot, then no data for 100 minutes (longer than the grace)
    put(mem, n3, 1500, 1700, 95)  # hot by mem, its pusher dies at minute 1600 (maxAge)
    put(cpu, n1, 2000, 2050, 95)  # three nodes hot at once, the herd cap allows two
    put(cpu, n2, 2000, 2100, 90)
    put(cpu, n4, 2000, 2100, 85)
    put(cpu, n4, 2500, 2600, 90)  # hot across a cluster-wide gap (Prometheus down)
    put(mem, n3, 2850, DAYS_MIN, 95)  # hot at the end of the window: an open mark
    gaps = {n2: set(range(700, 708)) | set(range(1100, 1200))}
    outage = set(range(2550, 2580))  # no series at all
    frozen = {n3: (1600, 1700)}  # push time stays at minute 1600 during these minutes
    return cpu, mem, gaps, outage, frozen


def history(start, nodes, stray):
    cpu, mem, gaps, outage, frozen = scenario(nodes)
    lines = ["# TYPE replay_cpu gauge"]
    for n in nodes + [stray]:
        for m in range(DAYS_MIN):
            if m in outage or m in gaps.get(n, ()):
                continue
            lines.append('replay_cpu{node="%s"} %s %d' % (n, cpu.get(n, {}).get(m, 20), start + m * MIN))
    lines.append("# TYPE replay_mem gauge")
    for n in nodes:
        for m in range(DAYS_MIN):
            if m not in outage and m not in gaps.get(n, ()):
                lines.append('replay_mem{node="%s"} %s %d' % (n, mem[n].get(m, 20), start + m * MIN))
    lines.append("# TYPE replay_push_time gauge")
    for n in nodes:
        lo, hi = frozen.get(n, (None, None))
        for m in range(DAYS_MIN):
            if m in outage or m in gaps.get(n, ()):
                continue
            pushed = lo if lo is not None and lo <= m < hi else m
            lines.append('replay_push_time{node="%s"} %d %d' % (n, start + pushed * MIN, start + m * MIN))
    return "\n".join(lines) + "\n# EOF\n"


def expected(nodes):
    """The marks, in steps (a step k is at start + 30 s + k minutes and sees minute k's sample, or
    the newest of the 4 before it when k has none: the lookback)."""
    n1, n2, n3, n4 = nodes
    grace = GRACE_MIN + 1  # the state goes once the last value is more than the grace old
    last_before_long_gap = 1100 - 1 + (LOOKBACK_MIN - 1)  # step 1103 still sees minute 1099
    # The dead pusher: at step k its update is 30 s + (k - 1600) minutes old; fresh while <= maxAge.
    last_fresh = 1600 + (MAX_AGE_S - 30) // MIN
    return {
        n1: [(200 + FOR_MIN, 400, ["cpu"]), (2000 + FOR_MIN, 2050, ["cpu"])],
        n2: [(600 + FOR_MIN, 900, ["cpu"]), (1000 + FOR_MIN, last_before_long_gap + grace, ["cpu"]),
             (2000 + FOR_MIN, 2100, ["cpu"])],
        n3: [(1500, last_fresh + grace, ["mem"]), (2850, None, ["mem"])],
        # Capped until n1 cools at 2050, which frees its place in that same cycle.
        n4: [(2050, 2100, ["cpu"]), (2500 + FOR_MIN, 2600, ["cpu"])],
    }


class ReplayIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        now = time.time()
        cls.start = (int(now) // 3600 - 50) * 3600
        # The simulator names its nodes node-00001..; node-00001 is the control plane, not managed.
        cls.nodes = ["node-00002", "node-00003", "node-00004", "node-00005"]
        cls.stray = "gone-node"
        cls.stack = Stack(nodes=5, control_plane=1,
                          prom_history=history(cls.start - 30, cls.nodes, cls.stray)).start()
        cls.rule_file = os.path.join(cls.stack.dir, "replay-rule.yaml")
        with open(cls.rule_file, "w") as f:
            f.write(RULES)
        # The samples at 30 s past each minute, the steps on the minute (the replay's grid is on
        # multiples of -step): each step reads the sample of 30 s before, never one on its edge.
        cls.first = cls.start
        cls.last = cls.start + (DAYS_MIN - 1) * MIN

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def replay(self, *args, out="out"):
        out_dir = os.path.join(self.stack.dir, out)
        cmd = [CONTROLLER, "replay", "-r", self.rule_file, "-prom", self.stack.prom,
               "-from", str(self.first), "-to", str(self.last), "-step", "60", "-out", out_dir, *args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        return r, out_dir

    def check_marks(self, out_dir):
        with open(os.path.join(out_dir, "replay.json")) as f:
            got = json.load(f)
        to_time = lambda k: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.first + k * MIN))
        want = expected(self.nodes)
        for node in self.nodes:
            marks = [(m["start"], m["end"], m["rules"]) for m in got["nodes"][node]["marks"]]
            self.assertEqual(marks, [(to_time(s), None if e is None else to_time(e), r)
                                     for s, e, r in want[node]], node)
            closed = sum(((e if e is not None else (self.last - self.first) // MIN) - s) * MIN
                         for s, e, _ in want[node])
            self.assertEqual(got["nodes"][node]["marked_seconds"], closed, node)
        t = got["totals"]
        self.assertEqual(t["marks"], sum(len(v) for v in want.values()))
        self.assertEqual(t["max_marked_at_once"], 2)
        self.assertEqual(t["capped_node_seconds"], (2050 - 2005) * MIN)
        self.assertEqual(got["nodes"][self.nodes[3]]["cap_hits"], 2050 - 2005)
        self.assertEqual(t["unmatched_series"], 1)  # gone-node's
        self.assertEqual(t["outage_steps"], 2580 - (2550 + LOOKBACK_MIN - 1))
        self.assertEqual(got["step_seconds"], 60)
        self.assertEqual(got["rules"], ["cpu", "mem"])
        return got

    def test_marks_from_the_cluster_nodes(self):
        r, out_dir = self.replay("-kubeconfig", self.stack.kubeconfig)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("marks: 9", r.stdout)
        self.check_marks(out_dir)

    def test_compare_a_tuned_file_on_the_same_history(self):
        # Without `for`, n1's 3-minute spike is marked too, and every cpu mark starts 5 steps
        # earlier; marked time grows by exactly that.
        tuned = os.path.join(self.stack.dir, "tuned.yaml")
        with open(tuned, "w") as f:
            f.write(RULES.replace("for: %dm" % FOR_MIN, "for: 0s"))
        r, out_dir = self.replay("-kubeconfig", self.stack.kubeconfig, "-compare", tuned, out="cmp")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out_dir, "replay.json")) as f:
            got = json.load(f)
        cmp = got["compare"]
        self.assertEqual(cmp["files"], [self.rule_file, tuned])
        self.assertEqual(cmp["totals"]["marks"], [9, 10])
        # The cpu marks that start after `for`: n1 x2, n2 x3, n4's second (its first waits for the cap).
        earlier = 6 * FOR_MIN * MIN + 3 * MIN
        self.assertEqual(cmp["totals"]["marked_node_seconds"][1] - cmp["totals"]["marked_node_seconds"][0],
                         earlier)
        with open(os.path.join(out_dir, "report.html")) as f:
            page = f.read()
        self.assertIn("<svg", page)
        self.assertNotIn("<script", page)
        self.assertNotIn("http://", page.replace("http://www.w3.org/2000/svg", ""))

    def test_marks_from_a_saved_node_list_without_the_cluster(self):
        nodes = self.stack.kubectl("get", "nodes", "-o", "json")
        path = os.path.join(self.stack.dir, "nodes.json")
        with open(path, "w") as f:
            f.write(nodes if isinstance(nodes, str) else nodes.stdout)
        # A kubeconfig that points nowhere: the node list must come from the file alone.
        r, out_dir = self.replay("-nodes_file", path, "-kubeconfig", "/nonexistent", out="offline")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.check_marks(out_dir)

    def test_bad_input_is_named(self):
        bad_nodes = os.path.join(self.stack.dir, "bad-nodes.json")
        with open(bad_nodes, "w") as f:
            f.write("{not json")
        bad_pods = os.path.join(self.stack.dir, "bad-pods.json")
        with open(bad_pods, "w") as f:
            f.write('{"kind": "List", "items": {}}')
        bad_rule = os.path.join(self.stack.dir, "bad-query.yaml")
        with open(bad_rule, "w") as f:
            f.write("rules:\n  - name: broken\n    query: 'rate(x[5m]'\n    threshold: 1\n")
        for args, says in (
                (["-from", "yesterday"], "-from \"yesterday\""),
                (["-to", str(self.first - 60)], "must be after -from"),
                (["-nodes_file", bad_nodes], "bad-nodes.json: not a node list"),
                (["-nodes_file", "/nonexistent/nodes.json"], "cannot read /nonexistent/nodes.json"),
                (["-pods_file", bad_pods, "-kubeconfig", self.stack.kubeconfig],
                 "-pods_file: %s: not a pod list" % bad_pods),
                (["-pods_file", "/nonexistent/pods.json", "-kubeconfig", self.stack.kubeconfig],
                 "-pods_file: cannot read /nonexistent/pods.json"),
                (["-step", "-5"], "-step"),
                (["-r", bad_rule, "-kubeconfig", self.stack.kubeconfig], "rule \"broken\": query from")):
            r, _ = self.replay(*args, out="bad")
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            self.assertIn(says, r.stderr, args)


if __name__ == "__main__":
    unittest.main()
