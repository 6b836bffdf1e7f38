"""VictoriaMetrics as the history store (issue 40, "long-term stores"): the real `victoria-metrics`
binary (Debian's package) in place of Prometheus, started on 127.0.0.1 and stopped by PID as the
harness' processes are; the samples written through its import API.

- `replay` on the two days of history test_replay.py writes into Prometheus: test_replay's tests run
  here unchanged (ReplayIT is inherited) against a VictoriaMetrics that reads gaps as Prometheus does
  (-search.minStalenessInterval=5m), and give the same marks. With VictoriaMetrics' own staleness
  the marks differ exactly where a gap shows sooner; a path prefix in -prom gives the same marks.
- The controller against VictoriaMetrics: a node whose current value is over the threshold is
  marked and one under it is not (-once, and the loop at -s 1, which also unmarks); -once judges
  `for` on VictoriaMetrics' history; with the default -search.latencyOffset (30 s) a pass reads
  the values of 30 s ago.
- With VictoriaMetrics' response cache on (its default), range queries of 50 points or more come
  back on multiples of the step whatever start was asked: the replay's grid and -once's history
  steps are put there (the first version read none of the points: every step an outage).

Every VictoriaMetrics here runs with -search.latencyOffset=0s, unless the test is about that flag."""
import json
import os
import subprocess
import tempfile
import time
import unittest
from unittest import mock

import test_replay
from harness import CONTROLLER, CPU_RULES, Controller, Process, Stack, free_port, http, wait_until
from test_replay import DAYS_MIN, MIN, RULES, history


class VictoriaStack(Stack):
    """The Kubernetes API simulator and real VictoriaMetrics, no Prometheus and no pushgateway:
    `prom` is the first VictoriaMetrics' URL. stop() stops them all by PID."""

    def _start(self):  # Stack.start stops what started if this fails
        self.dir = tempfile.mkdtemp(prefix="ds-it-")
        self.start_sim()
        return self

    def start_victoria(self, *flags, latency_offset="0s"):
        """One victoria-metrics with a data directory of its own; returns its URL.
        latency_offset None: VictoriaMetrics' default (30 s)."""
        port = free_port()
        url = "http://127.0.0.1:%d" % port
        n = sum(p.name.startswith("victoria-metrics") for p in self.procs)
        args = ["victoria-metrics", "-storageDataPath=" + os.path.join(self.dir, "vm-data-%d" % n),
                "-httpListenAddr=127.0.0.1:%d" % port, "-retentionPeriod=100y"]
        if latency_offset is not None:
            args.append("-search.latencyOffset=" + latency_offset)
        self.procs.append(Process("victoria-metrics-%d" % n, args + list(flags), self.dir))
        wait_until(lambda: http("GET", url + "/health")[0] == 200, 30, what="VictoriaMetrics /health at " + url)
        if n == 0:
            self.prom = url
        return url


def import_samples(url, samples):
    """Writes (series, value, Unix seconds) samples through /api/v1/import/prometheus (timestamps
    in milliseconds there) and flushes them, so that the next query sees them."""
    body = "".join("%s %s %d\n" % (s, v, round(t * 1000)) for s, v, t in samples)
    code, text = http("POST", url + "/api/v1/import/prometheus", body.encode(), timeout=60)
    assert code == 204, (code, text)
    code, text = http("GET", url + "/internal/force_flush")
    assert code == 200, (code, text)


def openmetrics_samples(text):
    """(series, value, Unix seconds) of test_replay's OpenMetrics history (comments and # EOF dropped)."""
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value, t = line.rsplit(" ", 2)
            yield series, value, int(t)


# A VictoriaMetrics that reads gaps as Prometheus does: the newest sample within 5 minutes.
LIKE_PROMETHEUS = ("-search.minStalenessInterval=5m",)
# Without -search.disableCache VictoriaMetrics moves a range query's start down to a multiple of
# the step (its response cache, from 50 points on), where the replay now puts its grid
# (test_a_from_off_the_step_reads_the_grid_with_the_cache_on). The other stores here have it off.
NO_CACHE = ("-search.disableCache",)
# VictoriaMetrics' own staleness window is the series' sample interval and an eighth of it (for
# intervals over 32 s): 67.5 s for test_replay's minute samples, so a replay step, 30 s after a
# sample, sees only the sample of its own minute -- test_replay's model with a one-minute lookback.
OWN_LOOKBACK_MIN = 1


class ReplayVictoriaIT(test_replay.ReplayIT):
    """test_replay's tests, unchanged, on the same history imported into VictoriaMetrics; then
    VictoriaMetrics' own staleness, a path prefix in -prom, and its response cache."""

    @classmethod
    def setUpClass(cls):
        # As ReplayIT.setUpClass, with VictoriaMetrics in place of Prometheus.
        cls.start = (int(time.time()) // 3600 - 50) * 3600
        cls.nodes = ["node-00002", "node-00003", "node-00004", "node-00005"]
        cls.stray = "gone-node"
        cls.stack = VictoriaStack(nodes=5, control_plane=1).start()
        try:
            samples = list(openmetrics_samples(history(cls.start - 30, cls.nodes, cls.stray)))
            cls.like_prometheus = cls.stack.start_victoria(*LIKE_PROMETHEUS, *NO_CACHE)  # stack.prom
            cls.own_staleness = cls.stack.start_victoria(*NO_CACHE)
            cls.cache_on = cls.stack.start_victoria()
            for url in (cls.like_prometheus, cls.own_staleness, cls.cache_on):
                import_samples(url, samples)
        except BaseException:
            cls.stack.stop()
            raise
        cls.rule_file = os.path.join(cls.stack.dir, "replay-rule.yaml")
        with open(cls.rule_file, "w") as f:
            f.write(RULES)
        # The samples at 30 s past each minute, the steps on the minute (the replay's grid is on
        # multiples of -step): each step reads the sample of 30 s before, never one on its edge.
        cls.first = cls.start
        cls.last = cls.start + (DAYS_MIN - 1) * MIN

    def replay_from(self, prom, out, shift=0, to_shift=None):
        """ReplayIT.replay with the nodes from the cluster, against another store; the window
        `shift` seconds later (its end `to_shift` seconds later, if given)."""
        out_dir = os.path.join(self.stack.dir, out)
        cmd = [CONTROLLER, "replay", "-r", self.rule_file, "-prom", prom, "-kubeconfig", self.stack.kubeconfig,
               "-from", str(self.first + shift), "-to", str(self.last + (shift if to_shift is None else to_shift)), "-step", "60", "-out", out_dir]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r, out_dir

    def test_a_path_prefix_in_the_url(self):
        # Single-node VictoriaMetrics serves the query API under /prometheus too (vmselect only
        # under /select/<accountID>/prometheus): the prefix must stay on every request.
        _, out_dir = self.replay_from(self.like_prometheus + "/prometheus", "prefix")
        self.check_marks(out_dir)

    def test_own_staleness_shows_a_gap_at_the_next_step(self):
        _, out_dir = self.replay_from(self.own_staleness, "own")
        # test_replay's expectations with a lookback of one minute instead of five: node-00003's
        # mark after its long gap ends 4 steps earlier (its last value is seen at step 1099, not
        # 1103), and the cluster-wide gap is 30 steps of Prometheus down instead of 26. Nothing
        # else moves: the short gap is within missingDataGrace on both stores.
        with mock.patch.object(test_replay, "LOOKBACK_MIN", OWN_LOOKBACK_MIN):
            got = self.check_marks(out_dir)
        self.assertEqual(got["totals"]["outage_steps"], 30)
        self.assertEqual(got["nodes"]["node-00003"]["marks"][1]["end_unix"],
                         self.first + (1099 + test_replay.GRACE_MIN + 1) * MIN)

    def test_a_from_off_the_step_reads_the_grid_with_the_cache_on(self):
        """VictoriaMetrics with its response cache on (its default) answers a range query of 50
        points or more at whole multiples of the step, its start rounded down to one (the query
        arg `nocache=1` or -search.disableCache turn that off). With -from 30 s past a minute the
        first version asked for steps 30 s off those, matched none of the points, and replayed the
        whole window as Prometheus down (no marks, exit 0). The replay's grid is on multiples of
        the step now (-from rounded up): the cached store replays as the uncached one from the
        next minute."""
        replayed = []
        for prom, out, shift in ((self.cache_on, "off-grid-cache", 30),
                                 (self.own_staleness, "next-minute-no-cache", 60)):
            _, out_dir = self.replay_from(prom, out, shift=shift, to_shift=60)
            with open(os.path.join(out_dir, "replay.json")) as f:
                got = json.load(f)
            replayed.append((got["from"], got["nodes"], got["totals"]))
        self.assertEqual(replayed[0], replayed[1])
        self.assertGreater(replayed[0][2]["marks"], 0)
        self.assertLess(replayed[0][2]["outage_steps"], 100)


class ControllerVictoriaIT(unittest.TestCase):
    """The controller against VictoriaMetrics, values written at the current time: its instant
    queries (response cache on, as deployed) and -once's history for `for` (range queries)."""

    @classmethod
    def setUpClass(cls):
        cls.stack = VictoriaStack(nodes=4, control_plane=1).start()
        try:
            cls.vm = cls.stack.start_victoria()
            cls.no_cache = cls.stack.start_victoria(*NO_CACHE)
        except BaseException:
            cls.stack.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def setUp(self):
        self.stack.reset_marks()
        self.metric = "it_" + self._testMethodName

    def rules(self, extra=""):
        return CPU_RULES.format(metric=self.metric) + extra + "maxMarkedFraction: 1\n"

    def put(self, values, url=None, at=None):
        """Writes {node: value} at time `at` into VictoriaMetrics; by default 2 s ago, which an
        instant query sees at once (without `time=`, VictoriaMetrics evaluates it at the current
        second rounded down: a sample of the current second shows a second later)."""
        at = time.time() - 2 if at is None else at
        import_samples(url or self.vm, [('%s{node="%s"}' % (self.metric, n), v, at) for n, v in values.items()])

    def once(self, prom=None, rules=None, interval=1):
        rule_file = os.path.join(self.stack.dir, self._testMethodName + "-rule.yaml")
        with open(rule_file, "w") as f:
            f.write(rules or self.rules())
        r = subprocess.run([CONTROLLER, "-once", "-prom", prom or self.vm, "-kubeconfig", self.stack.kubeconfig,
                            "-r", rule_file, "-s", str(interval)], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def test_once_marks_the_node_over_the_threshold_only(self):
        self.put({"node-00004": 95, "node-00002": 20})
        out = self.once()
        self.assertEqual(self.stack.labelled(), ["node-00004"], out)
        self.assertIn("marked node-00004 (cpu 95 > 80)", out)

    def test_the_loop_marks_and_unmarks(self):
        c = Controller(self.stack, self.rules(), prom=self.vm, interval=1)
        try:
            c.wait_ready()
            self.put({"node-00003": 95, "node-00002": 20})
            wait_until(lambda: self.stack.labelled() == ["node-00003"], 15, what="node-00003 marked")
            hold = c.holds("node-00003")[0]
            self.assertEqual((hold["rule"], hold["value"]), ("cpu", 95))
            self.put({"node-00003": 30})
            wait_until(lambda: self.stack.labelled() == [], 15, what="node-00003 unmarked")
        finally:
            c.stop()

    def test_the_default_latency_offset_reads_the_values_of_30_s_ago(self):
        # The same samples in two stores: 20 a minute ago, 95 two seconds ago. With the default
        # offset the instant query is answered as of 30 s ago: 20, and the node stays unmarked.
        lagging = self.stack.start_victoria(latency_offset=None)
        now = time.time()
        for url in (lagging, self.vm):
            self.put({"node-00004": 20}, url, at=now - 60)
            self.put({"node-00004": 95}, url, at=now - 2)
        self.assertIn("0 marked", self.once(prom=lagging))
        self.assertEqual(self.stack.labelled(), [])
        self.once()
        self.assertEqual(self.stack.labelled(), ["node-00004"])

    def test_an_instant_query_looks_back_5_minutes(self):
        # The controller's queries carry no step: VictoriaMetrics then looks back 5 minutes, as
        # Prometheus does. A series sampled every 30 s that stopped 4 minutes ago still counts
        # (a range query at a 60 s step would have shown the gap after a minute).
        now = time.time()
        import_samples(self.vm, [('%s{node="node-00004"}' % self.metric, 95, now - 240 - 30 * k) for k in range(20)])
        self.once()
        self.assertEqual(self.stack.labelled(), ["node-00004"])

    # -once judges `for` on the history: 61 cycles at -s 10 for `for: 10m` (deploy/base's
    # interval), one range query of 61 points. node-00003 has been at 95 for 12 minutes.
    FOR_RULES_EXTRA = "    for: 10m\n"

    def hot_for_12_minutes(self, url):
        now = time.time()
        import_samples(url, [('%s{node="node-00003"}' % self.metric, 95, now - 2 - 10 * k) for k in range(72)])

    def test_once_judges_for_on_the_history(self):
        self.hot_for_12_minutes(self.no_cache)
        out = self.once(prom=self.no_cache, rules=self.rules(self.FOR_RULES_EXTRA), interval=10)
        self.assertEqual(self.stack.labelled(), ["node-00003"], out)

    def test_once_judges_for_on_the_history_with_the_response_cache_on(self):
        """As ReplayVictoriaIT.test_a_from_off_the_step_reads_the_grid_with_the_cache_on: with VictoriaMetrics'
        response cache on, the range query of 61 points is answered at multiples of 10 s. The
        first version's steps were the time it started minus multiples of 10 s (with
        milliseconds): no point matched, `for` was never met, the node hot for 12 minutes was not
        marked, exit 0. PrimeSteps puts them on multiples of the interval now."""
        self.hot_for_12_minutes(self.vm)
        out = self.once(rules=self.rules(self.FOR_RULES_EXTRA), interval=10)
        self.assertEqual(self.stack.labelled(), ["node-00003"], out)


if __name__ == "__main__":
    unittest.main()
