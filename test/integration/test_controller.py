"""End-to-end tests of the real dynamic-scheduler binary against real Prometheus + pushgateway
and the Kubernetes API simulator."""
import json
import os
import re
import signal
import subprocess
import time
import unittest

from harness import CONTROLLER, CPU_RULES, Controller, Stack, free_port, http, removes_mark, touched, wait_until

ROOT_RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")

CURRENT_RULES = CPU_RULES


HELD_BY = "dynamic-scheduler.io/held-by"


def held_by(stack, node):
    """The node's ownership record, parsed, or None."""
    out = stack.kubectl("get", "node", node, "-o", "json").stdout
    text = json.loads(out)["metadata"].get("annotations", {}).get(HELD_BY)
    return json.loads(text) if text is not None else None


def controller_writes(stack):
    """PATCH requests the controller (user dynamic-scheduler) made."""
    return [w for w in stack.writes()["writes"] if w["user"] == "dynamic-scheduler"]


class ControllerBase(unittest.TestCase):
    """One stack per class; the tests are in two classes so that CTest runs them side by side
    (test/CMakeLists.txt): under ThreadSanitizer one class of all of them was the longest test."""

    @classmethod
    def setUpClass(cls):
        cls.stack = Stack(nodes=8, control_plane=1).start()

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def setUp(self):
        self.stack.reset_marks()
        self.stack.sim_admin("DELETE", "/sim/writes")
        self.controllers = []
        self.metric = "it_" + self._testMethodName

    def tearDown(self):
        for c in self.controllers:
            c.stop()

    def start(self, rule_yaml, **kw):
        c = Controller(self.stack, rule_yaml, **kw)
        self.controllers.append(c)
        return c

    def push(self, group, value, metric=None, **labels):
        """Pushes a sample for one node; by default labelled node=<group>."""
        labels = labels or {"node": group}
        self.stack.push(metric or self.metric, group, value, labels)

    def wait_labelled(self, nodes, timeout=20):
        wait_until(lambda: self.stack.labelled() == sorted(nodes), timeout, what="labelled == %s" % nodes)


class ControllerIT(ControllerBase):
    def test_hot_node_labelled_then_cleared_with_hysteresis(self):
        for n, v in [("node-00002", 95), ("node-00003", 20), ("node-00004", 20)]:
            self.push(n, v)
        c = self.start(CURRENT_RULES.format(metric=self.metric))
        self.wait_labelled(["node-00002"])
        c.wait_ready()
        # /nodes and kubectl agree, and /nodes says why.
        c.holds("node-00002")
        nodes = c.nodes()
        self.assertEqual(nodes["type"], "Label status=presure Nodes")
        self.assertEqual(nodes["num"], 1)
        self.assertEqual(nodes["node_names"], self.stack.labelled())
        hold = nodes["nodes"][0]["rules"][0]
        self.assertEqual((hold["rule"], hold["value"], hold["threshold"]), ("cpu", 95, 80))
        # Inside the hysteresis band the label stays.
        self.push("node-00002", 70)
        self.stack.wait_value('%s{node="node-00002"}' % self.metric, 70)
        c.wait_cycles(3)
        self.assertEqual(self.stack.labelled(), ["node-00002"])
        # Below the clear threshold it goes.
        self.push("node-00002", 40)
        self.wait_labelled([])
        self.assertEqual(c.nodes()["num"], 0)
        w = controller_writes(self.stack)
        self.assertEqual([x["name"] for x in w], ["node-00002", "node-00002"])
        # The mark and its record in one merge patch; the removal a JSON Patch that tests first.
        set_body = json.loads(w[0]["body"])
        self.assertEqual(w[0]["contentType"], "application/merge-patch+json")
        self.assertEqual(set_body["metadata"]["labels"], {"status": "presure"})
        record = json.loads(set_body["metadata"]["annotations"][HELD_BY])
        self.assertEqual((record["label"], record["value"], [r["rule"] for r in record["rules"]]),
                         ("status", "presure", ["cpu"]))
        self.assertEqual(w[1]["contentType"], "application/json-patch+json")
        self.assertEqual(json.loads(w[1]["body"]),
                         [{"op": "test", "path": "/metadata/labels/status", "value": "presure"},
                          {"op": "remove", "path": "/metadata/labels/status"},
                          {"op": "remove", "path": "/metadata/annotations/dynamic-scheduler.io~1held-by"}])
        self.assertIsNone(held_by(self.stack, "node-00002"), "the record went with the mark")

    def test_steady_cluster_sees_no_writes(self):
        self.push("node-00002", 99)
        self.push("node-00003", 99)
        self.push("node-00004", 10)
        c = self.start(CURRENT_RULES.format(metric=self.metric))
        self.wait_labelled(["node-00002", "node-00003"])
        before = len(controller_writes(self.stack))
        self.assertEqual(before, 2)
        c.wait_cycles(6)
        self.assertEqual(len(controller_writes(self.stack)), before, "a steady cluster gets zero writes")
        self.assertEqual(c.metric('dynamic_scheduler_label_writes_total{op="set"}'), 2)

    def test_prometheus_unreachable_reports_not_ready_and_writes_nothing(self):
        dead = "http://127.0.0.1:%d" % free_port()
        self.stack.kubectl("label", "node", "node-00002", "status=presure")
        self.stack.sim_admin("DELETE", "/sim/writes")
        c = self.start(CURRENT_RULES.format(metric=self.metric), prom=dead)
        wait_until(lambda: "Prometheus" in c.get("/status")[1], 20, what="/status naming Prometheus")
        code, body = c.get("/status")
        self.assertEqual(code, 503)
        self.assertEqual(c.get("/healthz")[0], 200)
        c.wait_cycles(4)
        self.assertEqual(controller_writes(self.stack), [], "an outage never removes labels")
        self.assertEqual(self.stack.labelled(), ["node-00002"])

    def test_on_prometheus_down_release_removes_the_marks_after_release_after(self):
        self.push("node-00004", 95)
        c = self.start("onPrometheusDown: release\nreleaseAfter: 3s\n" + CURRENT_RULES.format(metric=self.metric))
        self.wait_labelled(["node-00004"])
        args = self.stack.kill_prometheus()
        try:
            t0 = time.monotonic()
            self.wait_labelled([])
            held = time.monotonic() - t0
            self.assertGreaterEqual(held, 3, "held for releaseAfter first")
            # The cycle that removed the mark publishes its report after its writes.
            wait_until(lambda: c.metric("dynamic_scheduler_releasing_marks") == 1, 10, what="releasing reported")
            self.assertIn("releasing the marks", c.get("/status")[1])
            removal = [w for w in controller_writes(self.stack) if removes_mark(w)]
            self.assertEqual([w["name"] for w in removal], ["node-00004"])
        finally:
            self.stack.start_prometheus(args)
        # Prometheus is back and the node still hot: marked again, and the outage is over.
        self.wait_labelled(["node-00004"], timeout=40)
        wait_until(lambda: c.metric("dynamic_scheduler_releasing_marks") == 0, 10, what="outage over")

    def test_the_herd_cap_marks_the_hottest_and_reports_the_rest(self):
        # 7 managed nodes (node-00001 is the control plane): at most 3 marks. Six are hot.
        values = {"node-00002": 91, "node-00003": 99, "node-00004": 95, "node-00005": 85,
                  "node-00006": 97, "node-00007": 93, "node-00008": 10}
        for n, v in values.items():
            self.push(n, v)
        c = self.start(CURRENT_RULES.format(metric=self.metric))
        self.wait_labelled(["node-00003", "node-00004", "node-00006"])
        wait_until(lambda: c.metric("dynamic_scheduler_capped_nodes") == 3, 20, what="3 capped")
        nodes = c.nodes()
        self.assertEqual(nodes["mark_limit"], 3)
        self.assertEqual([n["name"] for n in nodes["capped"]], ["node-00007", "node-00002", "node-00005"],
                         "hottest first")
        self.assertEqual(nodes["capped"][0]["rules"][0]["value"], 93)
        self.assertIn("herd cap", c.proc.output())
        # One marked node cools: its place goes to the hottest capped node.
        self.push("node-00004", 20)
        self.wait_labelled(["node-00003", "node-00006", "node-00007"])
        wait_until(lambda: [n["name"] for n in c.nodes()["capped"]] == ["node-00002", "node-00005"], 10,
                   what="capped after the write's cycle is published")

    def test_rule_file_changes_take_effect_without_a_restart(self):
        self.push("node-00005", 75)
        c = self.start(CURRENT_RULES.format(metric=self.metric))
        c.wait_ready()
        c.wait_cycles(2)
        self.assertEqual(self.stack.labelled(), [])

        def edit(text):
            # As an editor or a ConfigMap update does: a new file renamed over the old one.
            with open(c.rule_file + ".new", "w") as f:
                f.write(text)
            os.rename(c.rule_file + ".new", c.rule_file)

        edit(CURRENT_RULES.format(metric=self.metric).replace("threshold: 80", "threshold: 70"))
        self.wait_labelled(["node-00005"])
        self.assertEqual(c.metric('dynamic_scheduler_rule_reloads_total{result="applied"}'), 1)
        # A broken file, then one that changes the label key (a restart's business): both refused,
        # the running rules stay, and /status says so while staying ready.
        edit("rules:\n  - {name: cpu, query: x, threshold: high}\n")
        wait_until(lambda: c.metric("dynamic_scheduler_rule_reload_last_success") == 0, 10, what="refused")
        code, body = c.get("/status")
        self.assertEqual(code, 200)
        self.assertIn('rule file change refused (the running rules are kept): %s:2:38: rule "cpu": threshold' % c.rule_file, body)
        edit("label: {key: pressure}\n" + CURRENT_RULES.format(metric=self.metric))
        wait_until(lambda: "label changed: that takes a restart" in c.get("/status")[1], 10, what="label refused")
        self.push("node-00005", 65)  # below 70 but above the clear threshold: still held
        self.stack.wait_value('%s{node="node-00005"}' % self.metric, 65)
        c.wait_cycles(2)
        self.assertEqual(self.stack.labelled(), ["node-00005"])
        self.assertEqual(c.metric('dynamic_scheduler_rule_reloads_total{result="refused"}'), 2)
        # SIGHUP reads the file at once, even one already refused (after fixing what it reads).
        with open(c.rule_file, "w") as f:
            f.write(CURRENT_RULES.format(metric=self.metric).replace("clearThreshold: 60", "clearThreshold: 66"))
        c.proc.proc.send_signal(signal.SIGHUP)
        self.wait_labelled([])
        self.assertEqual(c.metric("dynamic_scheduler_rule_reload_last_success"), 1)
        self.assertTrue(c.proc.alive(), "SIGHUP does not stop the controller")

    def test_token_auth_and_forbidden_writes(self):
        self.push("node-00006", 99)
        token_kc = os.path.join(self.stack.sim_dir, "kubeconfig-token")
        c = self.start(CURRENT_RULES.format(metric=self.metric), kubeconfig=token_kc)
        self.wait_labelled(["node-00006"])
        c.stop()
        self.stack.kubectl("label", "node", "node-00006", "status-")
        ro = self.start(CURRENT_RULES.format(metric=self.metric), name="readonly",
                        kubeconfig=os.path.join(self.stack.sim_dir, "kubeconfig-readonly"))
        ro.wait_ready()
        ro.wait_cycles(4)
        self.assertEqual(self.stack.labelled(), [])
        log = ro.proc.output()
        self.assertEqual(log.count('cannot patch resource \\"nodes\\"') + log.count('cannot patch resource "nodes"'), 1,
                         "a 403 is logged once, not every cycle:\n" + log)
        for secret in ("sim-token", "sim-readonly-token"):
            self.assertNotIn(secret, log + c.proc.output())

    def test_clean_shutdown(self):
        c = self.start(CURRENT_RULES.format(metric=self.metric))
        c.wait_ready()
        self.assertEqual(c.stop(), 0)

    def test_http_endpoints(self):
        c = self.start(CURRENT_RULES.format(metric=self.metric))
        c.wait_ready()
        self.assertEqual(c.get("/status"), (200, "ok\n"))
        self.assertEqual(c.get("/nope")[0], 404)
        self.assertEqual(http("POST", c.url + "/nodes", b"{}")[0], 405)
        metrics = c.get("/metrics")[1]
        self.assertIn("dynamic_scheduler_cycles_total", metrics)
        self.assertRegex(metrics, r'dynamic_scheduler_build_info\{commit="([0-9a-f]{12}(-dirty)?|unknown)",'
                                  r'compiler="(gcc|clang) [0-9]+\.[0-9]+\.[0-9]+",revision="([0-9a-f]{12}(-dirty)?|unknown)",'
                                  r'version="[0-9.]+"\} 1\n')
        # What Prometheus makes of the exposition: promtool's parser and linter, then a real scrape
        # whose cycle histogram gives a percentile.
        r = subprocess.run(["promtool", "check", "metrics"], input=metrics, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.scrape(c)
        p90 = 'histogram_quantile(0.9, rate(dynamic_scheduler_cycle_duration_seconds_bucket{job="it-controller"}[1m]))'
        wait_until(lambda: [v for v in self.stack.query(p90) if 0 < float(v["value"][1]) <= 30], 30,
                   what="Prometheus computing the cycles' 90th percentile from the controller's histogram")
        count = self.stack.query('dynamic_scheduler_query_duration_seconds_count{job="it-controller"}')
        self.assertEqual([q["metric"]["rule"] for q in count], ["cpu"])
        self.assertGreater(float(count[0]["value"][1]), 0)

    def scrape(self, c):
        """Makes the stack's Prometheus scrape `c` (job it-controller) until the test ends."""
        path = os.path.join(self.stack.dir, "prometheus.yml")
        with open(path) as f:
            config = f.read()
        with open(path, "w") as f:
            f.write(config + "  - job_name: it-controller\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
                    % c.port)

        def restore():
            with open(path, "w") as f:
                f.write(config)
            http("POST", self.stack.prom + "/-/reload")
        self.addCleanup(restore)
        code, text = http("POST", self.stack.prom + "/-/reload")
        self.assertEqual(code, 200, text)


class ControllerMoreIT(ControllerBase):
    def test_legacy_rule_file_and_instance_matching(self):
        legacy = ('PromJob:\n  Name: "k8s-nodes"\nRulename:\n  Node_cpu1:\n    Promsql: "%s"\n    Threshold: 70\n'
                  % self.metric)
        # The original project's push.sh style: instance is the node's IP with the exporter port.
        self.push("node-00005", 85, instance="10.0.0.5:9100")
        self.push("node-00006", 10, instance="10.0.0.6:9100")
        self.start(legacy)
        self.wait_labelled(["node-00005"])

    def test_relative_threshold_marks_the_node_that_stands_out(self):
        # 7 managed nodes, all at 90: nobody stands 20 over the mean, nobody is marked.
        nodes = ["node-%05d" % i for i in range(2, 9)]
        for n in nodes:
            self.push(n, 90)
        self.stack.wait_value('count(%s == 90)' % self.metric, 7)
        c = self.start("""
rules:
  - name: cpu-skew
    query: %s
    relativeTo: mean
    threshold: 20
    clearThreshold: 10
""" % self.metric)
        c.wait_ready()
        c.wait_cycles(2)
        self.assertEqual(self.stack.labelled(), [])
        self.assertEqual(c.metric('dynamic_scheduler_rule_mean{rule="cpu-skew"}'), 90)
        # The others cool to 55: mean 60, node-00002 at 90 is 30 over it, and only it is marked.
        for n in nodes[1:]:
            self.push(n, 55)
        self.wait_labelled(["node-00002"])
        self.stack.wait_value('count(%s == 55)' % self.metric, 6)
        # /nodes reads the controller's own watch of marked nodes, which may trail the API server's
        # label by a moment (seen under ThreadSanitizer): an empty list is "not yet".
        wait_until(lambda: [n for n in c.nodes()["nodes"] if n["rules"] and n["rules"][0].get("mean") == 60],
                   10, what="mean 60 in /nodes")
        hold = c.nodes()["nodes"][0]["rules"][0]
        self.assertEqual((hold["rule"], hold["value"], hold["threshold"], hold["clearThreshold"]),
                         ("cpu-skew", 90, 80, 70))

    def test_memory_available_less_than(self):
        rules = """
rules:
  - name: memory_available
    query: {m}
    operator: "<"
    threshold: 500000000
    clearThreshold: 800000000
""".format(m=self.metric)
        self.push("node-00006", 3e8, node="node-00006", ip="10.0.0.6")
        self.push("node-00007", 4e9, node="node-00007", ip="10.0.0.7")
        c = self.start(rules)
        self.wait_labelled(["node-00006"])
        self.push("node-00006", 6e8, node="node-00006", ip="10.0.0.6")
        self.stack.wait_value('%s{node="node-00006"}' % self.metric, 6e8)
        c.wait_cycles(3)
        self.assertEqual(self.stack.labelled(), ["node-00006"])
        self.push("node-00006", 9e8, node="node-00006", ip="10.0.0.6")
        self.wait_labelled([])

    def test_label_removed_by_hand_comes_back_and_foreign_labels_untouched(self):
        self.push("node-00003", 95)
        c = self.start(CURRENT_RULES.format(metric=self.metric))
        self.wait_labelled(["node-00003"])
        # Someone else edits the node: another label, an annotation, and removes ours.
        self.stack.kubectl("label", "node", "node-00003", "team=payments")
        self.stack.kubectl("annotate", "node", "node-00003", "example.com/owner=ops")
        self.stack.kubectl("label", "node", "node-00003", "status-")
        self.wait_labelled(["node-00003"])
        c.wait_cycles(2)
        labels = self.stack.node_labels("node-00003")
        self.assertEqual(labels["team"], "payments")
        self.assertEqual(labels["status"], "presure")
        for w in controller_writes(self.stack):
            self.assertEqual(set(touched(w)), {("labels", "status"), ("annotations", HELD_BY)}, w)
        annotations = json.loads(self.stack.kubectl("get", "node", "node-00003", "-o",
                                                    "jsonpath={.metadata.annotations}").stdout)
        self.assertEqual(annotations["example.com/owner"], "ops")
        self.stack.kubectl("label", "node", "node-00003", "team-")

    def test_webhook_triggers_immediate_evaluation(self):
        c = self.start(CURRENT_RULES.format(metric=self.metric), interval=3600)
        c.wait_ready()
        self.push("node-00004", 97)
        self.stack.wait_value('%s{node="node-00004"}' % self.metric, 97)
        self.assertEqual(self.stack.labelled(), [])
        payload = json.dumps({"receiver": "webhook", "status": "firing", "alerts": [{"status": "firing"}]})
        code, _ = http("POST", c.url + "/webhook", payload.encode(), {"Content-Type": "application/json"})
        self.assertEqual(code, 202)
        self.wait_labelled(["node-00004"], timeout=5)

    def test_watch_expired_relists_and_keeps_working(self):
        c = self.start(CURRENT_RULES.format(metric=self.metric))
        c.wait_ready()
        lists = c.metric("dynamic_scheduler_node_cache_lists_total")
        # An open watch gets an ERROR 410 event...
        self.stack.sim_admin("POST", "/sim/compact")
        wait_until(lambda: c.metric("dynamic_scheduler_node_cache_expired_relists_total") >= 1, 20,
                   what="a re-list after 410 Expired")
        # ...and a dropped watch that resumes from a compacted resourceVersion gets one too. Wait for
        # the relist to finish and a watch to be open first: a relist that ran after the next
        # compaction would start from a fresh resourceVersion and never see a 410.
        wait_until(lambda: c.metric("dynamic_scheduler_node_cache_lists_total") > lists, 20, what="relist done")
        wait_until(lambda: self.stack.sim_admin("GET", "/sim/stats")["watches"] >= 1, 20, what="watch open again")
        self.stack.sim_admin("POST", "/sim/drop-watches")
        self.stack.sim_admin("POST", "/sim/compact")
        wait_until(lambda: c.metric("dynamic_scheduler_node_cache_expired_relists_total") >= 2, 20,
                   what="a second re-list after a dropped stream and 410")
        self.assertGreater(c.metric("dynamic_scheduler_node_cache_lists_total"), lists)
        self.push("node-00005", 99)
        self.wait_labelled(["node-00005"])
        # A change made after the relist reaches the cache through the new watch.
        self.stack.kubectl("label", "node", "node-00005", "status-")
        self.wait_labelled(["node-00005"])

    def test_a_node_that_leaves_the_managed_set_loses_our_mark(self):
        self.push("node-00004", 95)
        self.push("node-00005", 95)
        self.start(CURRENT_RULES.format(metric=self.metric))
        self.wait_labelled(["node-00004", "node-00005"])
        wait_until(lambda: held_by(self.stack, "node-00004") is not None
                   and held_by(self.stack, "node-00005") is not None, what="records written")
        # An operator's value on a cold node, never ours.
        self.stack.kubectl("label", "node", "node-00006", "status=maintenance")
        # They become control-plane: the default nodeSelector excludes them, so the watch
        # (server-side selector) says DELETED.
        cp = "node-role.kubernetes.io/control-plane"
        leaving = ["node-00004", "node-00005", "node-00006"]
        try:
            self.stack.kubectl("label", "node", *leaving, cp + "=")
            wait_until(lambda: self.stack.labelled() == [], what="our mark off the nodes that left")
            wait_until(lambda: held_by(self.stack, "node-00004") is None
                       and held_by(self.stack, "node-00005") is None, what="records removed")
            self.assertEqual(self.stack.node_labels("node-00006")["status"], "maintenance",
                             "not ours: no record says so")
            removals = sorted(w["name"] for w in controller_writes(self.stack) if removes_mark(w))
            self.assertEqual(removals, ["node-00004", "node-00005"])
        finally:
            self.stack.kubectl("label", "node", *leaving, cp + "-", "status-")

    def test_cleanup_removes_what_is_ours_and_keeps_the_rest(self):
        self.push("node-00006", 95)
        c = self.start(CURRENT_RULES.format(metric=self.metric))
        self.wait_labelled(["node-00006"])
        wait_until(lambda: held_by(self.stack, "node-00006") is not None, what="node-00006's record")
        self.assertEqual(c.stop(), 0)
        # A foreign value with a stale record of ours, and the control-plane node (unmanaged) with
        # a mark an older version set.
        self.stack.kubectl("label", "node", "node-00007", "status=maintenance")
        self.stack.kubectl("annotate", "node", "node-00007",
                           HELD_BY + '={"label":"status","value":"presure","rules":[]}')
        self.stack.kubectl("label", "node", "node-00001", "status=presure")
        try:
            r = subprocess.run([CONTROLLER, "-cleanup", "-kubeconfig", self.stack.kubeconfig, "-r", c.rule_file],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("node node-00007: kept status=maintenance (not ours)", r.stdout)
            self.assertIn("cleanup: 8 nodes, 2 marks removed, 1 records removed, 1 foreign values kept, "
                          "0 changed meanwhile, 0 failed", r.stdout)
            self.assertEqual(self.stack.labelled(), [])
            self.assertEqual(self.stack.node_labels("node-00007")["status"], "maintenance")
            for n in ("node-00001", "node-00006", "node-00007"):
                self.assertIsNone(held_by(self.stack, n), n)
            again = subprocess.run([CONTROLLER, "-cleanup", "-kubeconfig", self.stack.kubeconfig, "-r",
                                    c.rule_file], capture_output=True, text=True, timeout=60)
            self.assertIn("cleanup: 8 nodes, 0 marks removed, 0 records removed", again.stdout)
        finally:
            self.stack.kubectl("label", "node", "node-00007", "status-")

    def test_control_plane_nodes_are_not_managed(self):
        self.push("node-00001", 99)  # node-00001 is the control-plane node
        self.push("node-00002", 99)
        self.start(CURRENT_RULES.format(metric=self.metric))
        self.wait_labelled(["node-00002"])

    def test_nodes_lists_an_unmanaged_node_carrying_the_label(self):
        # node-00001, the control-plane node, is outside the managed set; someone labelled it.
        self.stack.kubectl("label", "node", "node-00001", "status=presure")
        self.push("node-00002", 99)
        c = self.start(CURRENT_RULES.format(metric=self.metric))
        self.wait_labelled(["node-00001", "node-00002"])
        wait_until(lambda: c.nodes()["node_names"] == ["node-00001", "node-00002"], 20,
                   what="/nodes lists the unmanaged node too")
        nodes = {n["name"]: n for n in c.nodes()["nodes"]}
        self.assertIs(nodes["node-00001"]["managed"], False)
        self.assertEqual(nodes["node-00001"]["rules"], [])
        self.assertNotIn("managed", nodes["node-00002"])
        # Taken off by hand, it leaves /nodes as the watch says so; the controller never wrote it.
        self.stack.kubectl("label", "node", "node-00001", "status-")
        wait_until(lambda: c.nodes()["node_names"] == ["node-00002"], 20, what="/nodes follows the label")
        self.assertNotIn("node-00001", [w["name"] for w in controller_writes(self.stack)])


class StartupErrorsIT(unittest.TestCase):
    """Bad configuration stops start-up with exit code 2 and one clear message."""

    def run_bin(self, args, rule_text="rules:\n  - {name: a, query: up, threshold: 5}\n"):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            rule = os.path.join(d, "rule.yaml")
            with open(rule, "w") as f:
                f.write(rule_text)
            kc = os.path.join(d, "kubeconfig")
            with open(kc, "w") as f:
                f.write("apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\n"
                        "users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                        "current-context: x\n")
            full = [a.replace("RULE", rule).replace("KC", kc) for a in args]
            r = subprocess.run([CONTROLLER, *full], capture_output=True, text=True, timeout=20)
            return r.returncode, r.stderr.replace(d, "<dir>")

    def test_cases(self):
        base = ["-r", "RULE", "-kubeconfig", "KC", "-webaddr", "127.0.0.1:0"]
        cases = [
            (base, "rules:\n  - name: a\n    query: up\n    threshold: high\n",
             'rule.yaml:4:16: rule "a": threshold: "high" is not a number'),
            (base + ["-prom", "http://p:9090"], "rules: [a, b\n", "rule.yaml:2:1: not valid YAML"),
            (base, None, "-prom is required"),
            (base + ["-prom", "prom:9090"], None, '-prom: Prometheus URL "prom:9090" must start with http://'),
            (base + ["-prom", "http://p:9090", "-s", "0"], None, "-s must be a number of seconds > 0"),
            (base + ["-prom", "http://p:9090", "-s", "-3"], None, "-s must be a number of seconds > 0"),
            (base + ["-prom", "http://p:9090", "-webaddr", "nonsense"], None, "-webaddr"),
            (["-r", "RULE", "-prom", "http://p:9090", "-kubeconfig", "/nonexistent/kc"], None,
             'kubeconfig: cannot read file "/nonexistent/kc"'),
            (["-r", "/nonexistent/rule.yaml", "-prom", "http://p:9090"], None, "/nonexistent/rule.yaml: cannot open"),
        ]
        for args, rule_text, want in cases:
            kw = {"rule_text": rule_text} if rule_text else {}
            code, err = self.run_bin(args, **kw)
            self.assertEqual(code, 2, (args, err))
            self.assertIn(want, err, args)
            self.assertEqual(len(err.strip().splitlines()), 1, "one clear line: " + err)

    def test_help_explains_every_flag(self):
        r = subprocess.run([CONTROLLER, "--help"], capture_output=True, text=True)
        out = r.stdout + r.stderr
        for flag in ("-prom", "-kubeconfig", "-r ", "-s ", "-webaddr", "-dry_run", "-write_qps"):
            self.assertIn(flag, out)

    def test_version_names_the_release_and_the_commit(self):
        r = subprocess.run([CONTROLLER, "--version"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        with open(os.path.join(root, "CMakeLists.txt")) as f:
            version = re.search(r"project\(dynamic_scheduler VERSION ([0-9.]+)", f.read()).group(1)
        git = subprocess.run(["git", "-C", root, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
        # The commit CMake saw when it configured (this checkout's, unless committed to since).
        commit = git.stdout.strip() if git.returncode == 0 else "unknown"
        self.assertRegex(r.stdout, r"^dynamic-scheduler version %s \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)" %
                         re.escape(version))
        if os.environ.get("CI") and git.returncode == 0:
            self.assertIn("(commit %s)" % commit, r.stdout, "a clean clone builds with its own commit")



class KubeconfigRuntimeErrorsIT(unittest.TestCase):
    """Credentials that parse but cannot work: the controller starts, reports not-ready on /status
    with the TLS problem, keeps retrying, and never writes."""

    @classmethod
    def setUpClass(cls):
        cls.stack = Stack(nodes=3).start()

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def kubeconfig(self, name, ca, cert, key):
        import base64
        b64 = lambda p: base64.b64encode(open(p, "rb").read()).decode()
        path = os.path.join(self.stack.dir, name)
        with open(path, "w") as f:
            f.write("apiVersion: v1\nclusters:\n- name: c\n  cluster:\n    server: %s\n    certificate-authority-data: %s\n"
                    "users:\n- name: u\n  user:\n    client-certificate-data: %s\n    client-key-data: %s\n"
                    "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
                    % (self.stack.sim_url, b64(ca), b64(cert), b64(key)))
        return path

    def openssl(self, *args):
        subprocess.run(["openssl", *args], cwd=self.stack.dir, check=True, capture_output=True)

    def test_cases(self):
        d = self.stack.sim_dir
        self.openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", "other-ca.key", "-out", "other-ca.crt", "-days", "10", "-subj", "/CN=other")
        self.openssl("x509", "-req", "-in", os.path.join(d, "client.csr"), "-CA", os.path.join(d, "ca.crt"),
                     "-CAkey", os.path.join(d, "ca.key"), "-CAcreateserial", "-out", "expired.crt", "-days", "-1")
        ca, crt, key = os.path.join(d, "ca.crt"), os.path.join(d, "client.crt"), os.path.join(d, "client.key")
        # Checked at start-up: exit 2 with the field named.
        for what, kc, want in [
                ("mismatched key and cert", self.kubeconfig("kc-mismatch", ca, crt, os.path.join(d, "admin.key")),
                 "users[u].user.client-key: does not match client-certificate"),
                ("expired client certificate", self.kubeconfig("kc-expired", ca, os.path.join(self.stack.dir, "expired.crt"), key),
                 "users[u].user.client-certificate: expired on ")]:
            r = subprocess.run([CONTROLLER, "-kubeconfig", kc, "-prom", self.stack.prom, "-r", os.path.join(
                ROOT_RULES, "rule-memory-available.yaml")], capture_output=True, text=True, timeout=20)
            self.assertEqual(r.returncode, 2, what)
            self.assertIn(want, r.stderr, what)
            print("\n%s -> exit 2: %s" % (what, r.stderr.strip()))
        # Only the server can tell: the controller runs, is not ready, and says why.
        cases = [
            ("wrong CA", self.kubeconfig("kc-wrong-ca", os.path.join(self.stack.dir, "other-ca.crt"), crt, key),
             ["SSL certificate problem"]),
        ]
        # A server whose own certificate has expired (a second simulator, same everything else).
        expired = Stack(nodes=3)
        expired.dir = os.path.join(self.stack.dir, "expired-server")
        os.makedirs(expired.dir)
        expired.start_sim(extra=["-server_cert_days", "-1"])
        self.addCleanup(expired.stop)
        cases.append(("expired server certificate", expired.kubeconfig, ["certificate has expired"]))
        for what, kc, wants in cases:
            c = Controller(self.stack, CURRENT_RULES.format(metric="kc_metric"), kubeconfig=kc, name="kc")
            try:
                body = wait_until(lambda: (lambda r: r[1] if r[0] == 503 and "node cache not synced:" in r[1] else None)(
                    c.get("/status")), 20, what=what + ": not ready with a reason")
                self.assertTrue(any(w in body for w in wants), "%s: %s" % (what, body))
                self.assertEqual(c.get("/healthz")[0], 200)
                print("\n%s -> /status 503: %s" % (what, body.strip()))
            finally:
                c.stop()


if __name__ == "__main__":
    unittest.main()
