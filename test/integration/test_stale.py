"""A rule's maxAge end to end: deploy/base/push.sh pushes two nodes' memory.available to the real
pushgateway, real Prometheus scrapes it, and the real controller marks both. Then one push.sh dies.
The pushgateway serves its last value for ever and Prometheus keeps scraping it with a fresh
timestamp, so only push_time_seconds (the rule's ageQuery) shows the node went silent."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from harness import Controller, Stack, http, removes_mark, wait_until

DEPLOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy")
PUSH = os.path.join(DEPLOY, "base", "push.sh")

MAX_AGE = 6  # seconds; push.sh pushes every second here
GRACE = 3
STALE, CONTROL = "node-00002", "node-00003"

# examples/rule-memory-available.yaml with short times.
RULES = """missingDataGrace: %ds
rules:
  - name: memory_available
    query: k8s_node_memory_available_bytes
    operator: "<"
    threshold: 1073741824
    clearThreshold: 1610612736
""" % GRACE
MAX_AGE_RULES = RULES + """    maxAge: %ds
    ageQuery: push_time_seconds{job="CollectK8sCgroupsMem"}
""" % MAX_AGE

CAPACITY = 4000000 * 1024
AVAILABLE = 400_000_000  # below the 1 GiB threshold: both nodes are hot


class StalePushIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # 5 managed nodes: the herd cap (half of them) allows the two marks the tests need.
        cls.stack = Stack(nodes=6, control_plane=1).start()
        # A cgroup v1 tree and meminfo that give AVAILABLE bytes of memory.available.
        cls.tmp = tempfile.mkdtemp(prefix="ds-stale-")
        with open(os.path.join(cls.tmp, "meminfo"), "w") as f:
            f.write("MemTotal:        4000000 kB\nMemFree:          500000 kB\n")
        os.makedirs(os.path.join(cls.tmp, "cgroup", "memory"))
        with open(os.path.join(cls.tmp, "cgroup", "memory", "memory.usage_in_bytes"), "w") as f:
            f.write("%d\n" % (CAPACITY - AVAILABLE))
        with open(os.path.join(cls.tmp, "cgroup", "memory", "memory.stat"), "w") as f:
            f.write("total_inactive_file 0\n")

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.stack.wipe_pushgateway()
        self.stack.reset_marks()
        self.stack.sim_admin("DELETE", "/sim/writes")
        self.pushers = {}
        self.controller = None

    def tearDown(self):
        if self.controller is not None:
            self.controller.stop()
        for node in list(self.pushers):
            self.kill_pusher(node)

    def start_pusher(self, node):
        """push.sh as the DaemonSet runs it (PUSH_INTERVAL), in a process group of its own."""
        env = {"PATH": os.environ["PATH"], "PUSHGATEWAY_URL": self.stack.pgw, "NODE_NAME": node,
               "CGROUP_ROOT": os.path.join(self.tmp, "cgroup"), "MEMINFO": os.path.join(self.tmp, "meminfo"),
               "PUSH_INTERVAL": "1"}
        self.pushers[node] = subprocess.Popen(["sh", PUSH], env=env, stdin=subprocess.DEVNULL,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                              start_new_session=True)

    def kill_pusher(self, node):
        """SIGKILL to push.sh and its curl or sleep: a node that died does not clean up."""
        p = self.pushers.pop(node)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(10)

    def push_age(self, node):
        """Seconds since node's last push, by Prometheus' clock (None before its first)."""
        res = self.stack.query('time() - push_time_seconds{job="CollectK8sCgroupsMem",instance="%s"}' % node)
        return float(res[0]["value"][1]) if res else None

    def value_in_prometheus(self, node):
        res = self.stack.query('k8s_node_memory_available_bytes{node="%s"}' % node)
        return float(res[0]["value"][1]) if res else None

    def start_both_marked(self, rules):
        for node in (STALE, CONTROL):
            self.start_pusher(node)
        for node in (STALE, CONTROL):
            wait_until(lambda: self.value_in_prometheus(node) == AVAILABLE, 20, what="%s pushed" % node)
        self.controller = Controller(self.stack, rules)
        wait_until(lambda: self.stack.labelled() == [STALE, CONTROL], 30, what="both nodes marked")
        self.controller.wait_ready()

    def stale_values(self):
        return self.controller.metric('dynamic_scheduler_rule_stale_values{rule="memory_available"}')

    def test_a_dead_pusher_loses_the_mark_after_max_age_and_grace(self):
        self.start_both_marked(MAX_AGE_RULES)
        self.assertEqual(self.stale_values(), 0)
        killed = time.monotonic()
        self.kill_pusher(STALE)

        wait_until(lambda: self.stack.labelled() == [CONTROL], MAX_AGE + GRACE + 20,
                   what="%s unmarked after maxAge + grace" % STALE)
        took = time.monotonic() - killed
        # The last push may precede the kill by a push interval (more on a loaded machine), and the
        # decider's grace counts from the last cycle that saw a fresh value, which may precede the
        # age limit by a cycle: a bound with room for both, which an early drop still breaks.
        self.assertGreaterEqual(took, MAX_AGE + GRACE - 4, "unmarked before its value was maxAge + grace old")
        # Its value is still there, as hot as ever: the age alone took the mark off.
        self.assertEqual(self.value_in_prometheus(STALE), AVAILABLE)
        self.assertGreater(self.push_age(STALE), MAX_AGE)
        self.assertLess(self.push_age(CONTROL), MAX_AGE)
        self.assertEqual(self.stale_values(), 1)
        removals = [w["name"] for w in self.stack.writes()["writes"]
                    if w["user"] == "dynamic-scheduler" and removes_mark(w)]
        self.assertEqual(removals, [STALE], "the node pushed all along kept its mark throughout")
        log = self.controller.proc.output()
        self.assertRegex(log, r"1 node value\(s\) older than maxAge 6 s count as "
                              r"missing data .*: node-00002 \(\d+ s\) \{rule=\"memory_available\"\}")

        # push.sh back: a fresh value holds again at once.
        self.start_pusher(STALE)
        wait_until(lambda: self.stack.labelled() == [STALE, CONTROL], 30, what="%s marked again" % STALE)
        wait_until(lambda: self.stale_values() == 0, 10, what="no stale values")

    def test_without_max_age_the_last_push_holds_the_mark_for_ever(self):
        # The problem maxAge solves, shown against the same stack.
        self.start_both_marked(RULES)
        self.kill_pusher(STALE)
        # (None while a query finds no sample, as under load between scrapes: not old enough yet.)
        wait_until(lambda: (self.push_age(STALE) or 0) > MAX_AGE + GRACE + 3, MAX_AGE + GRACE + 20,
                   what="the dead pusher's value older than maxAge + grace + 3 s")
        self.controller.wait_cycles(2)
        self.assertEqual(self.stack.labelled(), [STALE, CONTROL])
        self.assertEqual(self.stale_values(), 0)
        code, body = http("GET", self.stack.pgw + "/api/v1/metrics")
        self.assertEqual(code, 200)
        self.assertIn('"instance":"%s"' % STALE, body.replace(" ", ""), "the pushgateway still serves it")


if __name__ == "__main__":
    unittest.main()
