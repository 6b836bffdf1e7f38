"""Taint mode end to end: the real binary against real Prometheus + pushgateway and the Kubernetes
API simulator. A hot node gets our PreferNoSchedule taint beside its own taints, a taint another
client adds between the controller's read and its write is kept (the simulator answers the stale
edit with 409, the controller reads the node again), the taint goes when the node cools, a
restarted controller recognises its taint by its record, and a taint it did not set is never
removed (nor adopted, when the node it is on turns hot); a foreign taint's timeAdded survives our
writes."""
import json
import unittest

from harness import CPU_RULES, Controller, StackTestCase, wait_until

KEY = "dynamic-scheduler.io/pressure"
OURS = {"key": KEY, "value": "presure", "effect": "PreferNoSchedule"}
GPU = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
DRAIN = {"key": "drain", "value": "1", "effect": "NoSchedule"}

RULES = """
maxMarkedFraction: 1   # no herd cap: two of the three managed nodes are hot at once here
mark: taint
taint: {key: %s, value: presure, effect: PreferNoSchedule}""" % KEY + CPU_RULES


class TaintModeIT(StackTestCase):
    STACK = {"nodes": 4, "control_plane": 1}

    def setUp(self):
        self.controllers = []
        self.metric = "it_" + self._testMethodName

    def tearDown(self):
        for c in self.controllers:
            c.stop()

    def start(self, name="controller"):
        c = Controller(self.stack, RULES.replace("{metric}", self.metric), name=name)
        self.controllers.append(c)
        return c

    def push(self, node, value):
        self.stack.push(self.metric, node, value, {"node": node})

    def node(self, name):
        return json.loads(self.stack.kubectl("get", "node", name, "-o", "json").stdout)

    def taints(self, name):
        return [{k: t[k] for k in ("key", "value", "effect") if k in t}
                for t in self.node(name)["spec"].get("taints", [])]

    def record(self, name):
        text = self.node(name)["metadata"].get("annotations", {}).get("dynamic-scheduler.io/held-by")
        return json.loads(text) if text is not None else None

    def wait_taints(self, name, want, timeout=30):
        wait_until(lambda: self.taints(name) == want, timeout, what="%s taints == %s" % (name, want))

    def patches_received(self):
        return self.stack.sim_admin("GET", "/sim/stats")["requests"].get("PATCH node", 0)

    def test_taint_mode_end_to_end(self):
        st = self.stack
        st.kubectl("taint", "nodes", "node-00002", "gpu=yes:NoSchedule")
        # Our taint, put there by hand: no record of ours names it, so it is never removed.
        st.kubectl("taint", "nodes", "node-00004", "%s=presure:PreferNoSchedule" % KEY)
        for n, v in [("node-00002", 95), ("node-00003", 20), ("node-00004", 20)]:
            self.push(n, v)
        c = self.start()
        c.wait_ready()

        # A hot node gets our taint after its own, which is kept; no label is written.
        self.wait_taints("node-00002", [GPU, OURS])
        self.assertEqual(self.record("node-00002")["taint"], OURS)
        self.assertNotIn("label", self.record("node-00002"))
        self.assertEqual(st.labelled(), [], "taint mode sets no label")
        # /nodes lists the nodes that carry the mark, whoever put it there (it steers pods either way).
        wait_until(lambda: c.nodes()["node_names"] == ["node-00002", "node-00004"], 10,
                   what="/nodes lists the tainted nodes")
        self.assertEqual(c.metric('dynamic_scheduler_taint_writes_total{op="set"}'), 1)

        # Another client taints node-00003 while our PATCH is on its way: the simulator holds our
        # PATCH for 3 s, and kubectl's write lands first. Our edit of the stale list is refused
        # (409); the controller reads the node again and writes ours beside theirs.
        st.sim_admin("POST", "/sim/faults", {"match": "patch", "latencyMs": 3000, "count": 1})
        before = self.patches_received()
        self.push("node-00003", 95)
        wait_until(lambda: self.patches_received() > before, 30, what="the controller's PATCH arrived")
        st.kubectl("taint", "nodes", "node-00003", "drain=1:NoSchedule")
        self.wait_taints("node-00003", [DRAIN, OURS])
        wait_until(lambda: c.metric('dynamic_scheduler_taint_writes_total{op="conflict"}') >= 1, 10,
                   what="the 409 counted")

        # A restart: the new process finds its taints and records, writes nothing while the nodes
        # stay hot, and removes only its own taint when they cool.
        self.assertEqual(c.stop(), 0)
        self.controllers.remove(c)
        st.sim_admin("DELETE", "/sim/writes")
        c = self.start(name="restarted")
        c.wait_ready()
        c.wait_cycles(3)
        self.assertEqual([w for w in st.writes()["writes"] if w["user"] == "dynamic-scheduler"], [],
                         "adopted: nothing to write")
        for n in ("node-00002", "node-00003"):
            self.push(n, 10)
        self.wait_taints("node-00002", [GPU])
        self.wait_taints("node-00003", [DRAIN])
        self.assertIsNone(self.record("node-00002"))
        self.assertIsNone(self.record("node-00003"))
        c.wait_cycles(2)
        self.assertEqual(self.taints("node-00004"), [OURS], "a taint we did not set stays")
        self.assertEqual(c.metric('dynamic_scheduler_taint_writes_total{op="remove"}'), 2)

    def test_nodes_lists_an_unmanaged_node_carrying_our_taint(self):
        # node-00001, the control-plane node, is outside the managed set; someone put our taint on
        # it. No selector finds a taint: the second watch sees every node and keeps only those.
        st = self.stack
        st.kubectl("taint", "nodes", "node-00001", "%s=presure:PreferNoSchedule" % KEY)
        self.push("node-00002", 95)
        c = self.start()
        c.wait_ready()
        self.wait_taints("node-00002", [OURS])
        wait_until(lambda: c.nodes()["node_names"] == ["node-00001", "node-00002"], 20,
                   what="/nodes lists the unmanaged tainted node too")
        nodes = {n["name"]: n for n in c.nodes()["nodes"]}
        self.assertIs(nodes["node-00001"]["managed"], False)
        self.assertEqual(nodes["node-00001"]["rules"], [])
        self.assertNotIn("managed", nodes["node-00002"])
        # Our label on an unmanaged node means nothing in taint mode; our taint taken off by hand
        # leaves /nodes as the watch says so; put back, it comes in again.
        st.kubectl("label", "node", "node-00003", "status=presure")
        st.kubectl("taint", "nodes", "node-00001", "%s:PreferNoSchedule-" % KEY)
        wait_until(lambda: c.nodes()["node_names"] == ["node-00002"], 20, what="/nodes follows the taint")
        st.kubectl("taint", "nodes", "node-00001", "%s=presure:PreferNoSchedule" % KEY)
        wait_until(lambda: c.nodes()["node_names"] == ["node-00001", "node-00002"], 20,
                   what="/nodes sees the taint come back")
        self.assertNotIn("node-00001", [w["name"] for w in st.writes()["writes"] if w["user"] == "dynamic-scheduler"])
        st.kubectl("taint", "nodes", "node-00001", "%s:PreferNoSchedule-" % KEY)
        st.kubectl("label", "node", "node-00003", "status-")
        self.push("node-00002", 10)  # leave the nodes as they were for the other tests
        self.wait_taints("node-00002", [])

    def test_a_foreign_taints_time_added_survives_our_writes(self):
        # The node lifecycle controller stamps its NoExecute taints with timeAdded. Our edit
        # replaces the whole list, so each foreign taint must go back exactly as it was read:
        # compared as whole dicts, not only key, value and effect.
        st = self.stack
        unreachable = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
                       "timeAdded": "2026-11-26T01:02:03Z"}
        st.kubectl("patch", "node", "node-00003", "--type=merge",
                   "-p", json.dumps({"spec": {"taints": [unreachable]}}))
        self.push("node-00003", 95)
        c = self.start()
        c.wait_ready()
        wait_until(lambda: self.node("node-00003")["spec"].get("taints", []) == [unreachable, OURS], 30,
                   what="our taint beside the stamped one, which is unchanged")
        self.push("node-00003", 10)
        wait_until(lambda: self.node("node-00003")["spec"].get("taints", []) == [unreachable], 30,
                   what="our taint gone, the stamped one unchanged")
        self.assertIsNone(self.record("node-00003"))
        st.kubectl("taint", "nodes", "node-00003", "node.kubernetes.io/unreachable:NoExecute-")

    def test_a_hand_set_taint_on_a_hot_node_is_not_adopted(self):
        # A copy of our taint put there by hand: the hot node counts as marked, its record says the
        # taint is not ours, and the taint stays when the node cools (only the record goes).
        st = self.stack
        st.kubectl("taint", "nodes", "node-00003", "%s=presure:PreferNoSchedule" % KEY)
        self.push("node-00003", 95)
        c = self.start()
        c.wait_ready()
        wait_until(lambda: (self.record("node-00003") or {}).get("taintNotOurs") is True, 30,
                   what="a record that does not adopt the taint")
        self.assertEqual(self.taints("node-00003"), [OURS])
        self.push("node-00003", 10)
        wait_until(lambda: self.record("node-00003") is None, 30, what="the record gone")
        c.wait_cycles(2)
        self.assertEqual(self.taints("node-00003"), [OURS], "not ours: never removed")
        st.kubectl("taint", "nodes", "node-00003", "%s:PreferNoSchedule-" % KEY)


if __name__ == "__main__":
    unittest.main()
