"""The replay's rebalancer estimate against the live controller's evictions, closed loop (issue 40):
the real binary relieves a hot node in the simulator, with real Prometheus and pushgateway and the
load generator (test_rebalance's stack); then `dynamic-scheduler replay` runs on the history that
run left, with the pods as they were saved before it (-pods_file), and must name the same pods in
the same order, each within a step of when the controller evicted it.

The hot node runs 4 pods of 0.85 cores (86.7 %); the rule's clear threshold (60 %) needs two of
them gone. perCycle 1 and a 3 s cool-down spread the two over cycles: the estimate's first plan is
cut short by perCycle, and it must go on where the controller does (the first version planned
once per episode and named one pod), from the cycle after the mark (mark first: the first version
relieved in the marking cycle) and after the cool-down."""
import datetime
import json
import os
import subprocess
import time
import unittest

from harness import CONTROLLER, wait_until
from test_rebalance import HOT, RebalanceStack

LIMITS = "{perCycle: 1, perHour: 50, perNodePerHour: 20, nodeCooldown: 3s, perWorkload: 5}"
STEP = 1  # the controller's -s and the replay's -step
# An eviction's time in the simulator's log is the controller's cycle plus its reads and the
# request; the estimate names the cycle's time on the replay's grid (whole seconds from -from).
TOLERANCE = STEP + 0.75
# After a cool-down one step more: the controller's cool-down runs from the eviction's own time, a
# moment after its cycle began, so the cycle a cool-down later is still inside it and the eviction
# waits one more cycle; on the replay's grid the cool-down ends exactly on a cycle.
TOLERANCE_AFTER_COOLDOWN = 2 * STEP + 0.75


class ReplayEvictionsIT(RebalanceStack):
    def test_the_estimate_names_the_pods_the_controller_evicted(self):
        hot = self.setup_hot(affinity=True)
        pods_file = os.path.join(self.stack.dir, "pods-%s.json" % self.ns)
        with open(pods_file, "w") as f:
            f.write(self.stack.kubectl("get", "pods", "-A", "-o", "json").stdout)
        start = time.time()
        c = self.start(LIMITS)
        self.wait_marked([HOT])
        wait_until(lambda: len(self.evicted()) >= 2, 30, what="two evictions")
        wait_until(lambda: self.stack.labelled() == [], 40, what="%s cooled and unmarked" % HOT)
        c.wait_cycles(2)
        end = time.time()
        c.stop()
        live = [(w["name"], w["time"]) for w in self.evicted()]
        self.assertEqual(len(live), 2, "the goal needs two: %s" % live)
        self.assertTrue(all(name.split("/", 1)[1] in hot for name, _ in live), live)

        out_dir = os.path.join(self.stack.dir, "replay-evictions")
        r = subprocess.run([CONTROLLER, "replay", "-r", c.rule_file, "-prom", self.stack.prom,
                            "-kubeconfig", self.stack.kubeconfig, "-from", str(int(start) - 2),
                            "-to", str(int(end) + 1), "-step", str(STEP), "-pods_file", pods_file,
                            "-out", out_dir], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out_dir, "replay.json")) as f:
            estimate = json.load(f)["rebalance"]
        self.assertNotIn("missing", estimate, estimate)
        episodes = [e for e in estimate["episodes"] if e["node"] == HOT]
        self.assertEqual(len(episodes), 1, estimate)
        estimated = [("%s/%s" % (e["namespace"], e["pod"]), e["at"]) for e in episodes[0]["evictions"]]
        detail = "live %s, estimated %s" % (live, estimated)
        self.assertEqual([n for n, _ in estimated], [n for n, _ in live], detail)
        self.assertEqual(estimate["evictions"], 2, detail)
        for k, ((_, live_at), (_, at)) in enumerate(zip(live, estimated)):
            bound = TOLERANCE if k == 0 else TOLERANCE_AFTER_COOLDOWN
            self.assertLessEqual(abs(live_at - rfc3339(at)), bound, detail)
        # Mark first: not in the cycle that set the mark (on the replay's own grid).
        self.assertGreater(rfc3339(estimated[0][1]), rfc3339(episodes[0]["start"]), (episodes[0], detail))
        self.assertLess(episodes[0]["load_after"], 60, episodes[0])


def rfc3339(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


if __name__ == "__main__":
    unittest.main()
