"""The web port under hostile load (issue 43): the real binary (`-s 1`, production web options,
`-probeaddr` on a port of its own) against real Prometheus + pushgateway and the simulator, loaded
by bench/web_load (DS_BUILD_DIR/web_load): idle half-sent requests, from one client address and
spread over many; a paced flood of 1,000 requests/s to /api/v1/history; both at once. Meanwhile
the kubelet's /healthz on the probe port and a Prometheus scrape of /metrics on the web port must
each answer within 1 s, every time, the `-s 1` reaction stays within its target and the resident
memory within its bound. Then the caps the load meets: a client address over
-web_max_connections_per_client is answered 503 at once while another address is served, and a
half-sent request is closed after about -web_header_timeout.

Each test prints its figures on a line starting with FIGURE (bench/README.md keeps them)."""
import json
import os
import subprocess
import time
import unittest

from harness import BUILD_DIR, CPU_RULES, Controller, Stack, free_port, http, wait_until

WEB_LOAD = os.path.join(BUILD_DIR, "web_load")
METRIC = "it_web_port_cpu"
NODES = ["node-%05d" % i for i in range(2, 6)]  # node-00001 is the control plane
HISTORY = "/api/v1/history?nodes=" + ",".join(NODES)

# The acceptance: the probe and a scrape answer within this, every time.
PROBE_BOUND_S = 1.0
# `-s 1` reaction, push to mark: p99 <= 2.5 s (bench/RESULTS.md). Of it, Prometheus's own part
# (push until an instant query returns the value: one 1 s scrape, p99 ~1 s in bench/RESULTS.md)
# is not under test; the controller's share (reaction - that floor) is one -s 1 interval plus the
# cycle's own work: p99 0.45 s at 1,000 nodes, 1.37 s at 10,000 (bench/RESULTS.md).
REACTION_TARGET_S = 2.5
CONTROLLER_SHARE_S = 1.5
# Resident memory during the worst load (256 idle connections, the flood and the probes) over the
# RSS after start-up and a warm-up. What the server may hold for it: a head buffer per idle
# connection (256 x at most 16 KiB = 4 MiB, common/web_server.h: "a few KiB until a request is
# complete"), the requests waiting for a worker (256 x a request and its answer, under 20 KiB
# each for these paths: 5 MiB), and the workers' malloc arenas (4 workers, about 1-2 MiB each once
# they have rendered /metrics). A leak (a buffer per request: 1,000 requests/s x 12 s) goes over.
RSS_GROWTH_BOUND_KB = 16 * 1024
# The defaults of -web_max_connections_per_client and -web_header_timeout (app/options.cc).
PER_CLIENT_CAP = 64
HEADER_TIMEOUT_S = 3.0

# Source addresses, one range per test, so that no test meets another's connections in the
# server's per-client count: 127.0.0.1 is the probes' and the harness's own.
FLOOD_FROM = ["--flood_from=127.0.1.1", "--flood_sources=4"]


def figure(name, res):
    """One line of the run's figures: per probe p50/p99/max and failures, the flood's rate and
    statuses, the idle connections, the controller's RSS."""
    out = {"probes": {p["target"]: {"n": p["count"], "failures": p["failure_reasons"],
                                    "p50": p["latency_s"]["p50"], "p99": p["latency_s"]["p99"],
                                    "max": p["latency_s"]["max"]} for p in res["probes"]}}
    if "flood" in res:
        f = res["flood"]
        out["flood"] = {"rps": round(f["achieved_rps"]), "statuses": f["statuses"], "errors": f["errors"],
                        "not_sent": f["not_sent"], "p99": f["latency_s"]["p99"]}
    if "idle" in res:
        i = res["idle"]
        out["idle"] = {"open_max": i["open_max"], "reconnects": i["reconnects"], "statuses": i["statuses"],
                       "life_p50": i["life_s"]["p50"], "errors": i["connect_errors"]}
    if "process" in res:
        out["rss_kb_max"] = res["process"]["rss_kb_max"]
        out["controller_cpu_s"] = res["process"]["cpu_s"]
    out["web_load_cpu_s"] = res["tool_cpu_s"]
    print("\nFIGURE web port %s: %s" % (name, json.dumps(out)), flush=True)


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


class WebPortIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = Stack(nodes=5, control_plane=1).start()
        try:
            for n in NODES:
                cls.stack.push(METRIC, n, 20, {"node": n})
            cls.probe_port = free_port()
            cls.c = Controller(cls.stack, CPU_RULES.format(metric=METRIC), name="webport",
                               args=["-probeaddr", "127.0.0.1:%d" % cls.probe_port])
            cls.c.wait_ready()
            wait_until(lambda: json.loads(cls.c.get(HISTORY)[1]).get("nodes"), 20,
                       what="/api/v1/history with the nodes' series")
            # Warm: every path rendered a few times, so the RSS to compare with holds what
            # serving them costs in steady state.
            for _ in range(5):
                for path in ("/metrics", "/api/v1/state", HISTORY, "/nodes", "/status"):
                    cls.c.get(path)
            cls.rss_start_kb = rss_kb(cls.c.proc.proc.pid)
        except BaseException:
            cls.stack.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        cls.stack.stop()

    def setUp(self):
        self.assertTrue(self.c.proc.alive(), "the controller is running:\n" + self.c.proc.output()[-3000:])

    def tearDown(self):
        self.assertTrue(self.c.proc.alive(), "the controller survived the load:\n" + self.c.proc.output()[-3000:])

    # --- helpers ---

    def probes(self, every=0.2):
        """The kubelet's liveness probe on the probe port and a scrape on the web port."""
        return ["--probe=127.0.0.1:%d/healthz" % self.probe_port, "--probe=127.0.0.1:%d/metrics" % self.c.port,
                "--probe_every=%g" % every, "--probe_timeout=5", "--probe_slo=%g" % PROBE_BOUND_S]

    def load_cmd(self, controller, *flags):
        return [WEB_LOAD, "--target=127.0.0.1:%d" % controller.port, "--watch_pid=%d" % controller.proc.proc.pid,
                "--json", *flags]

    def load(self, *flags, controller=None):
        r = subprocess.run(self.load_cmd(controller or self.c, *flags), capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def assert_probes_answered(self, res, min_count):
        """Every probe answered 200 within PROBE_BOUND_S."""
        for p in res["probes"]:
            self.assertGreaterEqual(p["count"], min_count, p)
            self.assertEqual(p["failures"], 0, "%s failed: %s" % (p["target"], p["failure_reasons"]))
            self.assertLess(p["latency_s"]["max"], PROBE_BOUND_S,
                            "%s: slowest answer %.3f s (p50 %.3f s)" % (p["target"], p["latency_s"]["max"],
                                                                         p["latency_s"]["p50"]))

    def assert_flood_delivered(self, res, seconds):
        """The flood really loaded the port: most of it sent and answered (200, or 503 when the
        handlers' queue is full), none of it lost."""
        f = res["flood"]
        answered = sum(f["statuses"].values())
        self.assertGreaterEqual(answered, 0.8 * f["target_rps"] * seconds, f)
        self.assertEqual(set(f["statuses"]) - {"200", "503"}, set(), f)
        self.assertLessEqual(sum(f["errors"].values()), 0.01 * answered, f)

    def flip(self, node, value):
        """Pushes `node` to `value`. Returns (floor, reaction) in seconds: from the push until
        Prometheus answers the value, and until the controller's PATCH of the node reached the
        simulator (its write log's time)."""
        t0 = time.time()
        self.stack.push(METRIC, node, value, {"node": node})
        expr = '%s{node="%s"}' % (METRIC, node)
        seen = wait_until(lambda: (lambda r: r and float(r[0]["value"][1]) == value and [time.time()])(
            self.stack.query(expr)), 10, interval=0.05, what="%s == %s in Prometheus" % (expr, value))
        written = wait_until(lambda: [w["time"] for w in self.stack.writes()["writes"]
                                      if w["user"] == "dynamic-scheduler" and w["name"] == node and w["time"] >= t0],
                             10, interval=0.1, what="the controller's write to %s" % node)
        return seen[0] - t0, written[0] - t0

    # --- the load ---

    def test_idle_half_sent_requests_from_one_address_and_from_many(self):
        for name, flags in [("one address", ["--idle_from=127.0.2.1", "--idle_sources=1"]),
                            ("64 addresses", ["--idle_from=127.0.3.1", "--idle_sources=64"])]:
            res = self.load("--idle=256", *flags, "--duration=5", "--warmup=1", *self.probes())
            figure("256 idle connections, " + name, res)
            with self.subTest(name):
                # They were there: the server took as many as it lets one client have, or all.
                want = PER_CLIENT_CAP if name == "one address" else 256
                self.assertGreaterEqual(res["idle"]["open_max"], want, res["idle"])
                self.assert_probes_answered(res, min_count=10)

    def test_flood_of_history_requests(self):
        res = self.load("--flood_rps=1000", "--flood_conns=8", "--flood_path=" + HISTORY, *FLOOD_FROM,
                        "--duration=5", "--warmup=1", *self.probes())
        figure("1000 requests/s to /api/v1/history", res)
        self.assert_flood_delivered(res, 5)
        self.assert_probes_answered(res, min_count=10)

    def test_idle_connections_and_flood_at_once(self):
        duration = 12
        node = NODES[1]
        self.stack.sim_admin("DELETE", "/sim/writes")
        self.assertEqual(self.stack.labelled(), [])
        load = subprocess.Popen(
            self.load_cmd(self.c, "--idle=256", "--idle_from=127.0.4.1", "--idle_sources=64",
                          "--flood_rps=1000", "--flood_conns=8", "--flood_path=" + HISTORY, *FLOOD_FROM,
                          "--duration=%d" % duration, "--warmup=1", *self.probes()),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            t_start = time.monotonic()
            time.sleep(2)  # condition: the load in place (connections open, the flood paced)
            flips = [self.flip(node, 95)]
            self.assertEqual(self.stack.labelled(), [node])
            flips.append(self.flip(node, 20))
            under_load = time.monotonic() - t_start < duration
        finally:
            out, err = load.communicate(timeout=duration + 60)
        self.assertEqual(load.returncode, 0, err)
        res = json.loads(out)
        figure("256 idle connections and 1000 requests/s at once", res)
        print("FIGURE web port reaction under load: %s" % json.dumps(
            [{"floor": round(f, 3), "reaction": round(r, 3), "share": round(r - f, 3)} for f, r in flips]), flush=True)
        print("FIGURE web port RSS: %s" % json.dumps({"start_kb": self.rss_start_kb, "max_kb": res["process"]["rss_kb_max"],
                                                      "end_kb": res["process"]["rss_kb_end"]}), flush=True)
        self.assertEqual(res["idle"]["open_max"], 256, res["idle"])
        self.assert_flood_delivered(res, duration)
        self.assert_probes_answered(res, min_count=30)
        self.assertTrue(under_load, "both flips happened while the load ran")
        for (floor, reaction), what in zip(flips, ("mark", "unmark")):
            self.assertLessEqual(reaction - floor, CONTROLLER_SHARE_S,
                                 "%s: controller's share %.2f s (reaction %.2f s, floor %.2f s)" % (
                                     what, reaction - floor, reaction, floor))
            self.assertLessEqual(reaction, max(REACTION_TARGET_S, floor + CONTROLLER_SHARE_S),
                                 "%s: reaction %.2f s (floor %.2f s)" % (what, reaction, floor))
        self.assertTrue(res["process"]["alive_at_end"])
        self.assertLessEqual(res["process"]["rss_kb_max"], self.rss_start_kb + RSS_GROWTH_BOUND_KB,
                             "RSS %d KiB at most, %d KiB after start-up" % (res["process"]["rss_kb_max"],
                                                                           self.rss_start_kb))

    # --- the caps ---

    def test_per_client_cap_answers_the_excess_503_at_once(self):
        excess = 16
        # Within the header deadline, so that every close the server makes is a refusal.
        res = self.load("--idle=%d" % (PER_CLIENT_CAP + excess), "--idle_from=127.0.5.1", "--idle_sources=1",
                        "--idle_min_cycle=1", "--duration=2", "--warmup=0.5", *self.probes(every=0.1))
        figure("%d connections from one address" % (PER_CLIENT_CAP + excess), res)
        idle = res["idle"]
        self.assertGreaterEqual(idle["statuses"].get("503", 0), excess, idle)
        self.assertEqual(set(idle["statuses"]), {"503"}, idle)
        self.assertEqual(idle["closed_by_server"], idle["statuses"]["503"],
                         "each connection the server closed was refused with its 503; it held the others")
        self.assertLess(idle["answer_s"]["max"], 0.5, "refused at once, not queued: %s" % idle["answer_s"])
        self.assertGreaterEqual(idle["open_at_end"], PER_CLIENT_CAP, idle)
        # Another address meanwhile: served.
        self.assert_probes_answered(res, min_count=10)

    def test_half_sent_request_closed_after_the_header_timeout(self):
        res = self.load("--idle=4", "--idle_from=127.0.6.1", "--idle_min_cycle=100", "--duration=%g" % (
            HEADER_TIMEOUT_S + 1.5), "--probe=127.0.0.1:%d/healthz" % self.probe_port)
        figure("half-sent requests, default -web_header_timeout", res)
        self.assert_closed_after(res["idle"], HEADER_TIMEOUT_S)
        # The flag is the controller's: a second one with a shorter deadline.
        short = Controller(self.stack, CPU_RULES.format(metric=METRIC), name="webport-short",
                           args=["-web_header_timeout", "1"])
        try:
            short.wait_ready()
            res = self.load("--idle=4", "--idle_from=127.0.6.2", "--idle_min_cycle=100", "--duration=2.5",
                            "--probe=127.0.0.1:%d/healthz" % short.port, controller=short)
            figure("half-sent requests, -web_header_timeout 1", res)
            self.assert_closed_after(res["idle"], 1.0)
        finally:
            short.stop()

    def assert_closed_after(self, idle, timeout):
        self.assertEqual(idle["closed_by_server"], 4, idle)
        self.assertGreaterEqual(idle["life_s"]["p50"], timeout - 0.3, idle["life_s"])
        self.assertLessEqual(idle["life_s"]["max"], timeout + 1.0, idle["life_s"])

    # --- the probe listener ---

    def test_probe_listener_serves_only_the_probes(self):
        probe = "http://127.0.0.1:%d" % self.probe_port
        self.assertEqual(http("GET", probe + "/healthz")[0], 200)
        self.assertEqual(http("GET", probe + "/status"), self.c.get("/status"))
        for path in ("/metrics", "/nodes", "/api/v1/state", HISTORY, "/"):
            self.assertEqual(http("GET", probe + path)[0], 404, path)
        self.assertNotEqual(http("POST", probe + "/webhook", b"{}")[0], 202, "no webhook on the probe port")


if __name__ == "__main__":
    unittest.main()
