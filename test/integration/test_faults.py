"""Reliability under faults: the API simulator's fault switches and a real Prometheus killed and
restarted. Each scenario asserts the invariants and prints the figure it measured.
DS_LONG=1 runs the full durations (60 s storms, 2 min Prometheus outage); CI runs shortened ones."""
import json
import os
import random
import re
import signal
import threading
import time
import unittest

from harness import Controller, Stack, http, removes_mark, touched, wait_until

LONG = os.environ.get("DS_LONG") == "1"
HELD_BY = "dynamic-scheduler.io/held-by"
# The scenarios mark most of the cluster at once to load the writes and the cache: no herd cap
# (its own test is in test_controller).
RULES = """
missingDataGrace: 4s
maxMarkedFraction: 1
rules:
  - {name: cpu, query: "max by (node) (%s)", operator: ">", threshold: 80, clearThreshold: 60}
"""
FAILING_RULES = """
rules:
  - {name: broken, query: "vector(", threshold: 1}
"""


def report(name, **figures):
    print("\nFIGURE %s: %s" % (name, json.dumps(figures)), flush=True)


class FaultsBase(unittest.TestCase):
    """One stack (Prometheus, pushgateway, simulator) per subclass; the subclasses run as separate
    CTest tests, in parallel."""
    @classmethod
    def setUpClass(cls):
        cls.stack = Stack(nodes=1000 if LONG else 40, control_plane=0).start()

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def setUp(self):
        self.stack.clear_faults()
        self.stack.reset_marks("team")
        self.stack.sim_admin("DELETE", "/sim/writes")
        self.metric = "f_" + self._testMethodName
        self.controllers = []

    def tearDown(self):
        # Controllers first: if the simulator cannot be reached, they must not be left running.
        for c in self.controllers:
            c.stop()
        self.stack.clear_faults()

    def start(self, rules=None, args=(), name="controller", interval=1):
        c = Controller(self.stack, rules or RULES % self.metric, args=list(args), name=name + self._testMethodName,
                       interval=interval)
        self.controllers.append(c)
        return c

    def hot(self, nodes, value=95):
        for n in nodes:
            self.stack.push(self.metric, n, value, {"node": n})

    def our_writes(self):
        return [w for w in self.stack.writes()["writes"] if w["user"] == "dynamic-scheduler"]

    def sim_labelled(self):
        return self.stack.labelled()


class ApiFaultsIT(FaultsBase):
    # 1. Watch streams cut every 2 s and forced 410s while others edit the cluster.
    def test_watch_drops_and_forced_410_converge(self):
        c = self.start(FAILING_RULES)  # never writes: its cache must mirror the cluster on its own
        wait_until(lambda: c.metric("dynamic_scheduler_node_cache_lists_total") >= 1, 20, what="first list")
        self.stack.fault(match="watch", dropWatchSeconds=2)
        rng = random.Random(1)
        names = ["node-%05d" % i for i in range(1, 41)]
        end = time.monotonic() + (120 if LONG else 15)
        i = 0
        while time.monotonic() < end:
            n = rng.choice(names)
            self.stack.kubectl("label", "node", n, "status=presure" if rng.random() < 0.5 else "status-",
                               "--overwrite", check=False)
            i += 1
            if i % 5 == 0:
                self.stack.sim_admin("POST", "/sim/compact")
        self.stack.clear_faults()
        t0 = time.monotonic()
        truth = self.sim_labelled()
        # Watches that brought nothing and 410s right after a re-list grow the cache's backoff
        # (kube/node_cache.cc), up to 30 s plus 50 % jitter; the bound leaves room for the longest
        # wait and one more re-list on a loaded machine.
        wait_until(lambda: sorted(c.nodes()["node_names"]) == truth, 60, what="cache == cluster")
        report("watch drops + forced 410", edits=i, converge_seconds=round(time.monotonic() - t0, 2),
               relists_410=c.metric("dynamic_scheduler_node_cache_expired_relists_total"),
               watch_restarts=c.metric("dynamic_scheduler_node_cache_watch_restarts_total"),
               lists=c.metric("dynamic_scheduler_node_cache_lists_total"))
        self.assertGreaterEqual(c.metric("dynamic_scheduler_node_cache_expired_relists_total"), 1)

    # 2. The API server answers 503 (then 429) to every PATCH with Retry-After for a while.
    def storm(self, status):
        seconds = 60 if LONG else 12
        nodes = ["node-%05d" % i for i in range(2, 12)]
        c = self.start(args=["-write_burst", "20"])
        c.wait_ready()
        self.stack.fault(match="patch", status=status, retryAfter=2, seconds=seconds)
        storm_end = time.monotonic() + seconds
        self.hot(nodes)
        time.sleep(max(0, storm_end - time.monotonic()))
        t0 = time.monotonic()
        wait_until(lambda: self.sim_labelled() == nodes, 60, what="all labelled after the storm")
        w = self.our_writes()
        ok = [x for x in w if x["code"] == 200]
        self.assertEqual(sorted(x["name"] for x in ok), nodes, "exactly one successful write per changed node")
        gaps = []
        by_node = {}
        for x in w:
            by_node.setdefault(x["name"], []).append(x["time"])
        for times in by_node.values():
            gaps += [b - a for a, b in zip(times, times[1:])]
        self.assertGreaterEqual(min(gaps), 1.9, "Retry-After: 2 honoured between attempts on a node")
        report("API %d storm" % status, storm_seconds=seconds, attempts=len(w), successful=len(ok),
               min_gap_between_attempts=round(min(gaps), 2), converge_after_storm_seconds=round(time.monotonic() - t0, 2))

    def test_api_503_storm(self):
        self.storm(503)

    def test_api_429_storm(self):
        self.storm(429)

    def test_list_and_watch_unavailable_at_start(self):
        self.stack.fault(match="list", status=503, retryAfter=1, seconds=6)
        c = self.start()
        wait_until(lambda: c.get("/status")[0] == 503, 10, what="not ready while LIST fails")
        t0 = time.monotonic()
        c.wait_ready(40)
        report("LIST 503 at start-up", ready_after_seconds=round(time.monotonic() - t0, 2))

    # 3. Every request is slow; a wave of flips stays within the write rate limit and nothing is lost.
    def test_api_latency_and_rate_limit(self):
        # Long form: 2 s per request and 1,000 nodes flipping hot, then cold, under a 20/s write limit.
        latency, count, qps = (2000, 1000, 20) if LONG else (300, 20, 5)
        nodes = ["node-%05d" % i for i in range(1, count + 1)] if LONG else ["node-%05d" % i for i in range(2, 22)]
        c = self.start(args=["-write_qps", str(qps), "-write_burst", "1", "-write_concurrency", "64"])
        c.wait_ready()
        self.stack.fault(match="all", latencyMs=latency)
        figures = {}
        for phase, value, want in (("hot", 95, sorted(nodes)), ("cold", 20, [])):
            t0 = time.monotonic()
            self.hot(nodes, value)
            wait_until(lambda: self.sim_labelled() == want, 60 + 3 * count / qps, interval=1,
                       what="all %s nodes converged under latency" % phase)
            figures[phase + "_seconds"] = round(time.monotonic() - t0, 1)
        self.stack.clear_faults()
        w = self.our_writes()
        # Arrival times (before the injected latency) are the client's send times, give or take the
        # scheduling of the simulator's threads; a token bucket allows qps * T + burst in any T seconds.
        times = sorted(x["arrived"] for x in w)

        def most_in(seconds):
            return max(sum(1 for t in times[i:i + qps * seconds + 10] if t < s + seconds) for i, s in enumerate(times))
        worst, worst5 = most_in(1), most_in(5)
        self.assertLessEqual(worst5, 5 * qps + 1 + 1, "writes within %d QPS over 5 s (burst 1, one of jitter)" % qps)
        self.assertLessEqual(worst, qps + 1 + 1, "writes within %d QPS in any second (burst 1, one of jitter)" % qps)
        ok = [x for x in w if x["code"] == 200]
        self.assertEqual(len(ok), 2 * len(nodes), "one set and one removal per node: nothing lost, nothing twice")
        report("API latency %d ms" % latency, nodes=len(nodes), write_qps=qps, writes=len(w),
               max_writes_in_any_second=worst, max_writes_in_any_5_seconds=worst5, **figures)

    # 9. The API server refuses connections for a while (the listening socket is gone).
    def test_api_refuses_connections(self):
        nodes = ["node-%05d" % i for i in range(12, 16)]
        c = self.start()
        c.wait_ready()
        refuse = 20 if LONG else 6
        t_refuse = time.monotonic()
        self.stack.sim_admin("POST", "/sim/refuse?seconds=%d" % refuse)
        wait_until(lambda: "Couldn't connect" in c.proc.output(), 10, what="the controller meeting a refused connection")
        self.hot(nodes)  # changes arrive while nobody can write

        def sim_back():
            try:
                return self.stack.sim_admin("GET", "/sim/stats") is not None
            except OSError:
                return False
        wait_until(sim_back, refuse + 30, what="the simulator listening again")
        back = time.monotonic()
        wait_until(lambda: self.sim_labelled() == nodes, 60, what="labelled once the API server is back")
        converge = time.monotonic() - back
        ok = [w for w in self.our_writes() if w["code"] == 200]
        self.assertEqual(sorted(w["name"] for w in ok), nodes, "one write per changed node, no storm")
        self.assertEqual(len(self.our_writes()), len(nodes), "no failed attempt reached the server")
        wait_until(lambda: c.get("/status")[0] == 200, 30, what="ready again")
        self.assertGreater(back - t_refuse, refuse - 1, "the simulator really refused for the whole window")
        report("API refusing connections %d s" % refuse, refused_seconds=round(back - t_refuse, 1),
               converge_after_back_seconds=round(converge, 2),
               writes=len(ok), watch_restarts=c.metric("dynamic_scheduler_node_cache_watch_restarts_total"))


class DataFaultsIT(FaultsBase):
    # 4. Prometheus killed (a real process) and restarted.
    def test_prometheus_killed_and_restarted(self):
        down = 120 if LONG else 20
        self.hot(["node-00003"])
        c = self.start()
        wait_until(lambda: self.sim_labelled() == ["node-00003"], 30, what="node-00003 labelled")
        killer = threading.Thread(target=lambda: setattr(self, "prom", self.stack.restart_prometheus(down)))
        killer.start()
        time.sleep(2)
        before = len(self.our_writes())
        self.hot(["node-00004"])  # becomes hot while Prometheus is down
        time.sleep(1)
        during = []
        deadline = time.monotonic() + down - 5
        while time.monotonic() < deadline:
            during.append(c.get("/status")[0])
            time.sleep(1)
        self.assertEqual(len(self.our_writes()), before, "no label added or removed during the outage")
        self.assertIn(503, during)
        killer.join()
        wait_until(lambda: self.sim_labelled() == ["node-00003", "node-00004"], 40, what="reconciled after restart")
        removals = [w for w in self.our_writes() if removes_mark(w)]
        self.assertEqual(removals, [], "flaps: node-00003 was never unlabelled")
        report("Prometheus down %d s" % down, writes_during_outage=0, flaps=len(removals),
               status_during_outage=sorted(set(during)))

    # 5. Prometheus data edge cases, each handled as documented.
    def test_prometheus_data_edge_cases(self):
        m = self.metric
        rules = """
missingDataGrace: 4s
rules:
  - {name: cpu, query: "max by (node) (%s)", operator: ">", threshold: 80, clearThreshold: 60}
  - {name: failing, query: "%s + on() %s", threshold: 1}
""" % (m, m, m)  # many-to-many: Prometheus answers 422 execution error every cycle
        push = self.stack.push
        push(m, "node-00002", "NaN", {"node": "node-00002"})
        push(m, "node-00003", "+Inf", {"node": "node-00003"})
        push(m, "node-00004", 50, {"node": "node-00004", "src": "a"})
        push(m, "node-00004b", 95, {"node": "node-00004", "src": "b"})  # duplicate series: worst wins
        push(m, "ghost", 99, {"node": "node-99999"})  # no such node
        push(m, "node-00005", 95, {"node": "node-00005"})
        c = self.start(rules)
        wait_until(lambda: self.sim_labelled() == ["node-00003", "node-00004", "node-00005"], 30, what="labels")
        self.assertEqual(c.nodes()["num"], 3)
        # The cycle that wrote the labels publishes its report after its writes: wait for it.
        wait_until(lambda: 'dynamic_scheduler_rule_unmatched_series{rule="cpu"} 1\n' in c.get("/metrics")[1], 20,
                   what="the ghost node counted as unmatched")
        metrics = c.get("/metrics")[1]
        self.assertRegex(metrics, r'dynamic_scheduler_query_errors_total\{rule="failing"\} [1-9]')
        # The series of node-00005 disappears: kept for the grace time, then dropped.
        http("DELETE", "%s/metrics/job/it/instance/node-00005" % self.stack.pgw)
        t0 = time.monotonic()
        wait_until(lambda: "node-00005" not in self.sim_labelled(), 30, what="dropped after grace")
        after = time.monotonic() - t0
        # The grace runs from the last cycle that saw the value. That cycle may come up to one
        # interval (-s 1) before the deletion when the next scrape already misses the series (seen
        # once in CI: dropped 3.62 s after the deletion), so the mark may not go before 4 - 1 s.
        self.assertGreaterEqual(after, 4 - 1 - 0.2, "kept for the whole grace time")
        report("series disappearing", unlabelled_after_seconds=round(after, 1), grace_seconds=4)

    # 6. Someone else edits the same nodes meanwhile.
    def test_concurrent_editors(self):
        nodes = ["node-%05d" % i for i in range(20, 26)]
        c = self.start()
        c.wait_ready()
        rng = random.Random(7)
        intent = {n: {} for n in nodes}
        stop = time.monotonic() + (60 if LONG else 12)
        flip = True
        while time.monotonic() < stop:
            self.hot(nodes, 95 if flip else 20)
            flip = not flip
            for n in rng.sample(nodes, 3):
                team = rng.choice(["a", "b"])
                self.stack.kubectl("label", "node", n, "team=" + team, "--overwrite")
                self.stack.kubectl("annotate", "node", n, "example.com/note=%d" % rng.randrange(100), "--overwrite")
                intent[n]["team"] = team
                if rng.random() < 0.3:
                    self.stack.kubectl("label", "node", n, "status-", check=False)  # ours, removed by hand
        self.hot(nodes, 95)
        wait_until(lambda: self.sim_labelled() == nodes, 30, what="ours restored while hot")
        for n in nodes:
            labels = self.stack.node_labels(n)
            if "team" in intent[n]:
                self.assertEqual(labels.get("team"), intent[n]["team"], n)
        for w in self.our_writes():
            self.assertLessEqual(set(touched(w)), {("labels", "status"), ("annotations", HELD_BY)}, w)
        report("concurrent editors", our_writes=len(self.our_writes()),
               retries=c.metric("dynamic_scheduler_label_write_retries_total"))

    # 7. SIGKILL mid-cycle, then a new controller.
    # 10. Huge answers end to end: a 50 MB Prometheus response (real Prometheus, built by PromQL
    # label_replace), one over the 64 MB cap, and 10 MB / 20 MB watch lines from the simulator.
    def test_huge_responses_end_to_end(self):
        def big(node, mult):  # one series for `node` with a label of 10 * 1000 * mult bytes
            inner = ('label_replace(label_replace(label_replace(vector(97), "node", "%s", "", ""), "seed", '
                     '"0123456789", "", ""), "a", "%s", "seed", "(.*)")' % (node, "$1" * 1000))
            return 'label_replace(%s, "pad", "%s", "a", "(.*)")' % (inner, "$1" * mult)
        rules = "rules:\n  - {name: big50, query: '%s', threshold: 80}\n  - {name: big70, query: '%s', threshold: 80}\n" % (
            big("node-00005", 5000), big("node-00006", 7000))
        c = self.start(rules, args=["-query_timeout", "30"], interval=3)
        wait_until(lambda: self.sim_labelled() == ["node-00005"], 60, what="the 50 MB answer decoded and acted on")
        # Published after the cycle's writes: wait for it.
        wait_until(lambda: re.search(r'dynamic_scheduler_query_errors_total\{rule="big70"\} [1-9]', c.get("/metrics")[1]),
                   20, what="the 70 MB answer counted as a query error")
        self.assertIn("response body exceeds", c.proc.output())
        rss_mb = c.metric("process_resident_memory_bytes") / 1e6
        # Watch lines of 10 MB are taken; 20 MB (over the 16 MB line limit) drop the stream, and the
        # re-watch from the last resourceVersion still delivers the change.
        figures = {}
        for pad, node in ((10 << 20, "node-00007"), (20 << 20, "node-00008")):
            restarts = c.metric("dynamic_scheduler_node_cache_watch_restarts_total")
            self.stack.fault(match="watch", padBytes=pad, count=1, selectorContains="node-role")  # the managed nodes
            self.stack.sim_admin("POST", "/sim/drop-watches")
            wait_until(lambda: c.metric("dynamic_scheduler_node_cache_watch_restarts_total") > restarts, 20,
                       what="re-watch")
            time.sleep(0.5)
            t0 = time.monotonic()
            self.stack.kubectl("label", "node", node, "status=presure")  # by hand: kept (no data for it)
            wait_until(lambda: node in c.nodes()["node_names"], 60, what="%s seen through a %d MB line" % (node, pad >> 20))
            figures["seen_after_%d_mb_line_seconds" % (pad >> 20)] = round(time.monotonic() - t0, 2)
        self.assertIn("an event line exceeds the size limit", c.proc.output())
        self.assertTrue(c.proc.alive())
        report("huge responses", prometheus_body_mb=50, over_cap_body_mb=70, rss_mb_after=round(rss_mb, 1), **figures)


class ProcessFaultsIT(FaultsBase):
    # 7. SIGKILL mid-cycle, then a new controller.
    def test_sigkill_mid_cycle_and_restart(self):
        nodes = ["node-%05d" % i for i in range(2, 32)]
        self.hot(nodes)
        c = self.start(args=["-write_qps", "10", "-write_burst", "1"], name="first")
        wait_until(lambda: len(self.sim_labelled()) >= 8, 30, what="some nodes labelled")
        c.proc.stop(signal.SIGKILL)
        done_before = len(self.sim_labelled())
        c2 = self.start(name="second")
        wait_until(lambda: self.sim_labelled() == nodes, 30, what="all labelled after restart")
        w = self.our_writes()
        self.assertEqual([x for x in w if removes_mark(x)], [], "no hot node unlabelled on start-up")
        per_node = {}
        for x in w:
            per_node[x["name"]] = per_node.get(x["name"], 0) + 1
        self.assertLessEqual(max(per_node.values()), 1, "no duplicate writes")
        c2.wait_ready()
        report("SIGKILL mid-cycle", labelled_before_kill=done_before, writes_total=len(w), nodes=len(nodes))

    # 8. Two replicas with leader election: one writer at a time, failover within the lease.
    def test_two_replicas_leader_election(self):
        lease, renew, retry = (15, 10, 2) if LONG else (4, 3, 1)
        ns = "ha-" + ("long" if LONG else "short")
        nodes = ["node-%05d" % i for i in range(30, 40)]
        common = ["-leader_elect", "-leader_elect_namespace", ns, "-leader_elect_lease_duration", str(lease),
                  "-leader_elect_renew_deadline", str(renew), "-leader_elect_retry_period", str(retry),
                  "-write_qps", "4", "-write_burst", "1"]
        reps = {name: self.start(args=common + ["-leader_elect_identity", "replica-" + name], name="rep-" + name)
                for name in ("a", "b")}

        def holder():
            return self.stack.kubectl("get", "lease", "-n", ns, "dynamic-scheduler", "-o",
                                      "jsonpath={.spec.holderIdentity}", check=False).stdout.strip()

        def leader_of():
            got = [n for n, c in reps.items() if c.proc.alive() and c.metric("dynamic_scheduler_leader") == 1]
            return got[0] if len(got) == 1 else None

        def writer(w):  # "dynamic-scheduler/0.2.0+3549a1a0c2f4 (replica-a)" -> "a"
            ua = w.get("userAgent", "")
            return ua[ua.find("(replica-") + 9:ua.find(")")] if "(replica-" in ua else "?"

        first = wait_until(leader_of, 20, what="one leader")
        other = "b" if first == "a" else "a"
        self.assertEqual(holder(), "replica-" + first)
        wait_until(lambda: reps[other].get("/status") == (200, "ok: standby, the lease is held by replica-%s\n" % first),
                   10, what="standby /status naming the leader")

        # Nodes flip hot/cold all the time, so that the leader always has writes in its queue.
        stop_flipping = threading.Event()

        def flipper():
            hot = True
            while not stop_flipping.is_set():
                self.hot(nodes, 95 if hot else 20)
                hot = not hot
                stop_flipping.wait(3)
        t = threading.Thread(target=flipper)
        t.start()
        try:
            wait_until(lambda: len(self.our_writes()) >= 8, 30, what="the leader writing")
            self.assertEqual({writer(w) for w in self.our_writes()}, {first}, "only the leader writes")

            # Freeze the leader mid-cycle (SIGSTOP: a long GC pause or a partitioned node), let the
            # standby take over, then thaw the old leader: it must not write another label.
            reps[first].proc.proc.send_signal(signal.SIGSTOP)
            t_stop = time.monotonic()
            wait_until(lambda: reps[other].metric("dynamic_scheduler_leader") == 1, lease + 3 * retry + 10,
                       interval=0.05, what="standby takes over")
            takeover = time.monotonic() - t_stop
            wait_until(lambda: any(writer(w) == other for w in self.our_writes()), 20, what="new leader writing")
            first_new = min(w["time"] for w in self.our_writes() if writer(w) == other)
            reps[first].proc.proc.send_signal(signal.SIGCONT)
            wait_until(lambda: reps[first].get("/status")[1].startswith("ok: standby"), 20,
                       what="old leader sees it is standby")
            time.sleep(3)
            late = [w for w in self.our_writes() if writer(w) == first and w["time"] >= first_new]
            self.assertEqual(late, [], "the thawed old leader wrote after the new one started")
            self.assertEqual(holder(), "replica-" + other)

            # Now kill the new leader outright (SIGKILL: no release); the old one comes back.
            n_before = len(self.our_writes())
            reps[other].proc.stop(signal.SIGKILL)
            t_kill = time.monotonic()
            wait_until(lambda: reps[first].metric("dynamic_scheduler_leader") == 1, lease + 3 * retry + 10,
                       interval=0.05, what="failover after SIGKILL")
            kill_failover = time.monotonic() - t_kill
            wait_until(lambda: len(self.our_writes()) > n_before, 20, what="writes resume")

            # A clean stop releases the lease: a fresh replica takes over within about one retry.
            reps["c"] = self.start(args=common + ["-leader_elect_identity", "replica-c"], name="rep-c")
            wait_until(lambda: reps["c"].get("/status")[0] == 200, 20, what="replica c standby")
            t_term = time.monotonic()
            reps[first].proc.proc.send_signal(signal.SIGTERM)
            wait_until(lambda: reps["c"].metric("dynamic_scheduler_leader") == 1, lease + 10, interval=0.05,
                       what="handover after SIGTERM")
            release_failover = time.monotonic() - t_term
            self.assertEqual(reps[first].proc.stop(), 0)
            self.assertIn("released lease", reps[first].proc.output())
        finally:
            stop_flipping.set()
            t.join()
        writes = self.our_writes()
        # Writers in time order: a run per leadership term, never interleaved.
        runs = []
        for w in sorted(writes, key=lambda w: w["time"]):
            if not runs or runs[-1] != writer(w):
                runs.append(writer(w))
        self.assertIn(runs, ([first, other, first], [first, other, first, "c"]), "one writer per term, in order")
        self.assertLessEqual(takeover, lease + 1.2 * retry + 1.5, "freeze failover within lease + one retry")
        self.assertLessEqual(kill_failover, lease + 1.2 * retry + 1.5, "kill failover within lease + one retry")
        self.assertLessEqual(release_failover, 1.2 * retry + 1.5, "a released lease is taken within a retry")
        report("two replicas, leader election", lease_seconds=lease, renew_deadline_seconds=renew,
               retry_seconds=retry, writes=len(writes), writer_runs=runs,
               sigstop_takeover_seconds=round(takeover, 2), sigkill_failover_seconds=round(kill_failover, 2),
               sigterm_handover_seconds=round(release_failover, 2), late_writes_by_old_leader=0)

    # 12. SIGTERM while the leader's PATCHes hang: the lease is released within 2 s (not after the
    # 30 s PATCH timeout, which outlives a pod's termination grace), and the process exits 0.
    def test_sigterm_during_hung_patch_releases_the_lease_at_once(self):
        ns = "term-hang"
        c = self.start(args=["-leader_elect", "-leader_elect_namespace", ns, "-leader_elect_identity", "replica-t",
                             "-leader_elect_lease_duration", "15", "-leader_elect_renew_deadline", "10",
                             "-leader_elect_retry_period", "2"], name="rep-t")
        holder = lambda: self.stack.kubectl("get", "lease", "-n", ns, "dynamic-scheduler", "-o",
                                            "jsonpath={.spec.holderIdentity}", check=False).stdout.strip()
        wait_until(lambda: c.metric("dynamic_scheduler_leader") == 1, 20, what="leader")
        patches = lambda: self.stack.sim_admin("GET", "/sim/stats")["requests"].get("PATCH node", 0)
        before = patches()
        self.stack.fault(match="patch", hang=True)
        self.hot(["node-00040"])
        wait_until(lambda: patches() > before, 20, what="a PATCH hanging")
        time.sleep(0.5)
        t_term = time.monotonic()
        c.proc.proc.send_signal(signal.SIGTERM)
        wait_until(lambda: holder() == "", 5, interval=0.05, what="the lease released")
        released = time.monotonic() - t_term
        code = c.proc.stop()
        exited = time.monotonic() - t_term
        self.stack.clear_faults()
        self.assertEqual(code, 0)
        self.assertLessEqual(released, 2.0, "released within 2 s of SIGTERM")
        self.assertLess(exited, 15, "the hung PATCH was abandoned, not waited out (30 s)")
        report("SIGTERM during a hung PATCH", lease_released_after_seconds=round(released, 2),
               exited_after_seconds=round(exited, 2))

    # 11. Hung answers: PATCHes that never return, and a watch that never sends a byte.
    def test_hung_patches_and_hung_watch(self):
        hang = 20 if LONG else 8
        nodes = ["node-%05d" % i for i in range(16, 20)]
        c = self.start(args=["-watch_idle_timeout", "3"])
        c.wait_ready()
        # PATCHes hang until the fault is cleared (then the server closes them without an answer).
        patches = lambda: self.stack.sim_admin("GET", "/sim/stats")["requests"].get("PATCH node", 0)
        before = patches()
        self.stack.fault(match="patch", hang=True)
        self.hot(nodes)
        wait_until(lambda: patches() > before, 20, what="the controller's PATCHes hanging")
        time.sleep(hang)
        self.assertEqual(self.sim_labelled(), [], "nothing written while every PATCH hangs")
        cycles_during = c.metric("dynamic_scheduler_cycles_total")
        self.stack.clear_faults()
        released = time.monotonic()
        wait_until(lambda: self.sim_labelled() == nodes, 60, what="labelled after the hang")
        patch_converge = time.monotonic() - released
        ok = [w for w in self.our_writes() if w["code"] == 200]
        self.assertEqual(sorted(w["name"] for w in ok), nodes, "one successful write per node")
        # A watch that hangs before sending anything: cut after -watch_idle_timeout, re-opened.
        restarts = c.metric("dynamic_scheduler_node_cache_watch_restarts_total")
        # The managed nodes' watch (its selector names node-role), not the one of the nodes carrying
        # our label, which the controller also keeps.
        self.stack.fault(match="watch", hang=True, count=1, selectorContains="node-role")
        self.stack.sim_admin("POST", "/sim/drop-watches")
        time.sleep(1)
        t1 = time.monotonic()
        # Our mark by hand on a node with no data: the controller takes it off, which it can only do
        # once its cache has seen it (a window too short to catch on /nodes under a sanitizer).
        self.stack.kubectl("label", "node", "node-00021", "status=presure")
        wait_until(lambda: any(w["name"] == "node-00021" and removes_mark(w) for w in self.our_writes()), 60,
                   what="change seen after the hung watch")
        watch_recovery = time.monotonic() - t1
        # The drop ends one watch; only the idle timeout can end the hung one that follows it.
        self.assertGreaterEqual(c.metric("dynamic_scheduler_node_cache_watch_restarts_total"), restarts + 2,
                                "the dropped watch, then the hung one cut by -watch_idle_timeout")
        self.assertGreaterEqual(watch_recovery, 3 - 1 - 0.5, "not seen before the hung watch was cut (3 s idle)")
        self.stack.clear_faults()
        report("hung answers", patch_hang_seconds=hang, labelled_after_release_seconds=round(patch_converge, 2),
               cycles_during_hang=cycles_during, hung_watch_change_seen_after_seconds=round(watch_recovery, 2),
               watch_idle_timeout_seconds=3)


class HttpAbuseIT(unittest.TestCase):
    """The endpoints under bad clients, while the controller keeps evaluating."""

    @classmethod
    def setUpClass(cls):
        cls.stack = Stack(nodes=6).start()

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def test_big_bodies_slow_clients_and_many_clients(self):
        import socket
        c = Controller(self.stack, RULES % "abuse_metric", name="abuse")
        try:
            c.wait_ready()
            code, _ = http("POST", c.url + "/webhook", b"x" * (2 << 20))
            self.assertEqual(code, 413)
            self.assertEqual(http("POST", c.url + "/webhook", b"x" * (1 << 20))[0], 202)
            slow = []
            for _ in range(5):  # clients that send half a request and stall
                s = socket.create_connection(("127.0.0.1", c.port))
                s.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n")
                slow.append(s)
            c0 = c.metric("dynamic_scheduler_cycles_total")
            errors, done = [], [0]

            def client():
                for _ in range(10):
                    code, _ = http("GET", c.url + random.choice(["/status", "/nodes", "/metrics", "/healthz", "/api/v1/state"]), timeout=30)
                    if code not in (200, 503):
                        errors.append(code)
                    done[0] += 1
            threads = [threading.Thread(target=client) for _ in range(200)]
            t0 = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - t0
            time.sleep(2)
            cycles = c.metric("dynamic_scheduler_cycles_total") - c0
            self.assertEqual(errors, [])
            self.assertGreaterEqual(cycles, int(elapsed), "evaluation continued at ~1 cycle/s")
            for s in slow:
                s.close()
            report("HTTP abuse", requests=done[0], seconds=round(elapsed, 1), cycles_meanwhile=cycles)
        finally:
            c.stop()

    def test_no_secrets_in_any_output(self):
        token_kc = os.path.join(self.stack.sim_dir, "kubeconfig-token")
        c = Controller(self.stack, RULES % "sec_metric", kubeconfig=token_kc, args=["-v", "2"], name="secrets")
        c2 = Controller(self.stack, RULES % "sec_metric", name="secrets-cert")  # client certificate
        try:
            c.wait_ready()
            c2.wait_ready()
            outputs = [c.get(p)[1] + c2.get(p)[1] for p in ("/status", "/nodes", "/metrics", "/healthz", "/api/v1/state")]
            outputs += [c.proc.output(), c2.proc.output()]
            key = open(os.path.join(self.stack.sim_dir, "client.key")).read().splitlines()[1]
            for secret in ("sim-token", key, "Authorization", "Bearer"):
                for o in outputs:
                    self.assertNotIn(secret, o)
        finally:
            c.stop()
            c2.stop()


if __name__ == "__main__":
    unittest.main()
