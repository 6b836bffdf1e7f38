"""The web port under hostile load (issue 43): the real binary (`-s 1`, production web options,
`-probeaddr` on a port of its own) against real Prometheus + pushgateway and the simulator, loaded
by bench/web_load (DS_BUILD_DIR/web_load): idle half-sent requests, from one client address and
spread over many; a paced flood of 1,000 requests/s to /api/v1/history; both at once. Meanwhile
the kubelet's /healthz on the probe port and a Prometheus scrape of /metrics on the web port must
each answer within 1 s, every time, the `-s 1` reaction stays within its target and the resident
memory within its bound. Then the caps the load meets: a client address over
-web_max_connections_per_client is answered 503 at once while another address is served, and a
half-sent request is closed after about -web_header_timeout.

Each test prints its figures on a line starting with FIGURE.

  DS_BUILD_DIR=build python3 -m unittest -v test_web_port     (from test/integration)"""
import json
import os
import random
import socket
import struct
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
# Resident memory during the worst load (256 idle connections, 12,000 flood requests, the probes)
# over the RSS after start-up and a warm-up. Measured with the epoll server: 18.9 MB after the
# warm-up, +0.8 MB at most under that load (256 connections at a few KiB each, common/web_server.h,
# and the workers' malloc arenas). The bound is ten times that: room for an arena that grows when
# the workers render /metrics and the history at the same moment; a leak of 700 bytes per request
# (12,000 in the run) crosses it. Under a sanitizer RSS measures its shadow and quarantine, not the
# server: the bound is checked in the Release pass only.
RSS_GROWTH_BOUND_KB = 8 * 1024
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


def sanitized():
    """True when DS_BUILD_DIR was configured with ASan/UBSan or TSan (its CMakeCache.txt says)."""
    try:
        with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
            cache = f.read()
    except OSError:
        return False
    return "DS_SANITIZE:BOOL=ON" in cache or "DS_TSAN:BOOL=ON" in cache


def established(port, network):
    """Established TCP connections to 127.0.0.1:`port` from addresses in `network` (an IPv4 /24
    given as "127.0.4."), as the client side lists them in /proc/net/tcp."""
    n = 0
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            local, remote, state = line.split()[1:4]
            if state != "01" or int(remote.split(":")[1], 16) != port:
                continue
            addr = socket.inet_ntoa(struct.pack("<I", int(local.split(":")[0], 16)))
            n += addr.startswith(network)
    return n


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
                # The load was there: from one address the server held what it lets one client
                # have and refused the rest, again and again; from 64 it held all 256.
                idle = res["idle"]
                if name == "one address":
                    self.assertGreaterEqual(idle["open_at_end"], PER_CLIENT_CAP, idle)
                    self.assertGreaterEqual(idle["statuses"].get("503", 0), 256 - PER_CLIENT_CAP, idle)
                else:
                    self.assertEqual(idle["open_max"], 256, idle)
                    self.assertNotIn("503", idle["statuses"], idle)
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
            wait_until(lambda: established(self.c.port, "127.0.4.") == 256 and established(self.c.port, "127.0.1.") == 8,
                       5, interval=0.05, what="the idle connections and the flood's in place")
            flips = []
            for value in (95, 20):  # marked, then cleared
                # At a random phase of the -s 1 cycle and of the 1 s scrape, as bench/run_bench.py's flips.
                time.sleep(random.uniform(0, 1))
                flips.append(self.flip(node, value))
                self.assertEqual(self.stack.labelled(), [node] if value == 95 else [])
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
        if not sanitized():
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
