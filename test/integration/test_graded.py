"""Graded marks end to end: a node's value pushed to the real pushgateway, scraped by real
Prometheus, moves the real controller's label on the simulator through status=warm and
status=presure and back, one PATCH a step; a restart while the node is warm keeps it warm without a
write; /nodes shows the level."""
import json
import unittest

from harness import Controller, StackTestCase, removes_mark, touched, wait_until

NODE, COOL = "node-00002", "node-00003"
METRIC = "graded_cpu"

# examples/rule-graded.yaml's shape, on a pushed metric.
RULES = """levels: [{name: warm, value: warm}, {name: hot}]
maxMarkedFraction: 1
rules:
  - name: cpu
    query: %s
    threshold: 90
    clearThreshold: 80
    levels: {warm: {threshold: 70, clearThreshold: 60}}
""" % METRIC


class GradedIT(StackTestCase):
    STACK = {"nodes": 4, "control_plane": 1}

    def setUp(self):
        self.stack.wipe_pushgateway()
        self.stack.reset_marks()
        self.controller = None

    def tearDown(self):
        if self.controller is not None:
            self.controller.stop()

    def set_value(self, value):
        for node, v in ((NODE, value), (COOL, 10)):
            self.stack.push(METRIC, node, v, {"node": node})
        self.stack.wait_value('%s{node="%s"}' % (METRIC, NODE), value)

    def value(self):
        return self.stack.node_labels(NODE).get("status")

    def wait_value(self, want, what):
        try:
            wait_until(lambda: self.value() == want, 30, what=what)
        except AssertionError:
            print(self.controller.proc.output()[-3000:])
            raise

    def our_writes(self):
        return [w for w in self.stack.writes()["writes"]
                if w["user"] == "dynamic-scheduler" and w["name"] == NODE]

    def test_levels_one_write_a_step_and_a_restart_keeps_the_level(self):
        self.set_value(50)
        self.controller = Controller(self.stack, RULES)
        self.controller.wait_ready()
        self.controller.wait_cycles(2)
        self.assertIsNone(self.value())

        self.set_value(75)
        self.wait_value("warm", "%s warm" % NODE)
        nodes = self.controller.nodes()
        self.assertEqual(nodes["node_names"], [NODE])
        self.assertEqual(nodes["nodes"][0]["level"], "warm")
        state = json.loads(self.controller.get("/api/v1/state")[1])
        self.assertEqual(state["markLevels"], [{"name": "warm", "value": "warm"},
                                               {"name": "hot", "value": "presure"}])
        self.assertEqual([n[1] for n in state["nodes"] if n[0] == NODE], ["warm"])
        self.assertEqual(state["markedNodes"], 1)

        self.stack.sim_admin("DELETE", "/sim/writes")
        self.set_value(95)
        self.wait_value("presure", "%s hot" % NODE)
        self.controller.wait_cycles(2)
        writes = self.our_writes()
        self.assertEqual(len(writes), 1, "warm to hot is one PATCH: %s" % writes)
        self.assertEqual(touched(writes[0])[("labels", "status")], "presure")

        self.stack.sim_admin("DELETE", "/sim/writes")
        self.set_value(75)  # hot clears at 80; warm holds down to 60
        self.wait_value("warm", "%s back to warm" % NODE)
        self.controller.wait_cycles(2)
        writes = self.our_writes()
        self.assertEqual(len(writes), 1, "hot to warm is one PATCH, never unmarked on the way")
        self.assertFalse(removes_mark(writes[0]))

        # A restart while warm, the value in warm's band (below the threshold that would mark it
        # afresh): the new controller adopts the level from the label and its record.
        self.controller.stop()
        self.set_value(65)
        self.stack.sim_admin("DELETE", "/sim/writes")
        self.controller = Controller(self.stack, RULES)
        self.controller.wait_ready()
        self.controller.wait_cycles(3)
        self.assertEqual(self.value(), "warm")
        self.assertEqual(self.our_writes(), [], "no write after the restart")
        self.assertEqual(self.controller.nodes()["nodes"][0]["level"], "warm")

        self.set_value(55)
        self.wait_value(None, "%s unmarked" % NODE)
        self.assertNotIn("dynamic-scheduler.io/held-by",
                         self.stack.kubectl("get", "node", NODE, "-o",
                                            "jsonpath={.metadata.annotations}").stdout)
        self.assertIsNone(self.stack.node_labels(COOL).get("status"))

        # /nodes also lists unmanaged nodes carrying any level's value (the control plane here):
        # they come from a watch with the selector "status in (warm,presure)".
        self.stack.kubectl("label", "node", "node-00001", "status=warm")
        def listed():
            n = self.controller.nodes()
            return n["node_names"] == ["node-00001"] and n["nodes"][0].get("managed") is False \
                and n["nodes"][0]["level"] == "warm"
        wait_until(listed, 20, what="the unmanaged warm node in /nodes")


if __name__ == "__main__":
    unittest.main()
