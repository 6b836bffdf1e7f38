"""Pods, PodDisruptionBudgets, evictions and the scheduler model of the Kubernetes API simulator,
checked with real clients: kubectl (get, delete, drain) and the official Python client."""
import json
import os
import subprocess
import tempfile
import threading
import unittest

import kubernetes
from kubernetes.client.rest import ApiException

from harness import Stack, wait_until

RBAC = {"users": {"dynamic-scheduler": [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
]}}


def template(labels, cpu="100m", memory="128Mi", affinity=None, tolerations=None):
    spec = {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = tolerations
    return {"metadata": {"labels": labels}, "spec": spec}


class SimPodsIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ds-simpods-")
        rbac_file = os.path.join(cls.tmp, "rbac.json")
        with open(rbac_file, "w") as f:
            json.dump(RBAC, f)
        cls.stack = Stack(nodes=5, control_plane=1, sim_args=[
            "-rbac", rbac_file, "-pod_grace_seconds", "1", "-pod_start_seconds", "1.5"])
        cls.stack.dir = cls.tmp
        cls.stack.start_sim()

        def client(kubeconfig):
            cfg = kubernetes.client.Configuration()
            kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
            return kubernetes.client.ApiClient(cfg)
        admin = client(cls.stack.admin_kubeconfig)
        cls.core = kubernetes.client.CoreV1Api(admin)
        cls.policy = kubernetes.client.PolicyV1Api(admin)
        cls.restricted = kubernetes.client.CoreV1Api(client(cls.stack.kubeconfig))

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    # --- helpers ---
    def kubectl(self, *args, **kw):
        return self.stack.kubectl(*args, **kw)

    def workload(self, ns, name, replicas, tmpl):
        return self.stack.sim_admin("POST", "/sim/workloads", {
            "namespace": ns, "name": name, "replicas": replicas, "template": tmpl})

    def pods(self, ns, selector=None):
        return self.core.list_namespaced_pod(ns, label_selector=selector).items

    def running(self, ns, selector, count):
        def ok():
            ps = [p for p in self.pods(ns, selector) if p.metadata.deletion_timestamp is None]
            ready = [p for p in ps if p.status.phase == "Running" and
                     any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])]
            return ready if len(ready) == count and len(ps) == count else None
        return wait_until(ok, 20, what="%d running pods %s in %s" % (count, selector, ns))

    def pdb(self, ns, name, **spec):
        body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": name}, "spec": spec}
        return self.policy.create_namespaced_pod_disruption_budget(ns, body)

    def evict(self, ns, name, api=None, uid=None):
        opts = None
        if uid is not None:
            opts = kubernetes.client.V1DeleteOptions(preconditions=kubernetes.client.V1Preconditions(uid=uid))
        body = kubernetes.client.V1Eviction(metadata=kubernetes.client.V1ObjectMeta(name=name, namespace=ns),
                                            delete_options=opts)
        return (api or self.core).create_namespaced_pod_eviction(name, ns, body)

    def allowed(self, ns, name):
        return self.policy.read_namespaced_pod_disruption_budget(name, ns).status.disruptions_allowed

    # --- kubectl ---
    def test_kubectl_get_pods_wide_json_and_delete(self):
        self.workload("web", "web", 3, template({"app": "web"}))
        pods = self.running("web", "app=web", 3)
        out = self.kubectl("get", "pods", "-A", "-o", "wide").stdout.splitlines()
        self.assertEqual(out[0].split(), ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP",
                                          "NODE", "NOMINATED", "NODE", "READINESS", "GATES"])
        rows = [l.split() for l in out[1:] if l.startswith("web ")]
        self.assertEqual(len(rows), 3)
        for r in rows:
            self.assertEqual(r[2:5], ["1/1", "Running", "0"])
            self.assertTrue(r[1].startswith("web-"))
            self.assertNotEqual(r[7], "node-00001", "the control-plane taint keeps pods off")
        name = pods[0].metadata.name
        obj = json.loads(self.kubectl("get", "pod", "-n", "web", name, "-o", "json").stdout)
        self.assertEqual(obj["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet")
        self.assertTrue(obj["metadata"]["ownerReferences"][0]["controller"])
        self.assertEqual(obj["spec"]["schedulerName"], "default-scheduler")
        self.kubectl("delete", "pod", "-n", "web", name, "--timeout=20s")
        with self.assertRaises(ApiException) as cm:
            self.core.read_namespaced_pod(name, "web")
        self.assertEqual(cm.exception.status, 404)
        self.assertEqual(json.loads(cm.exception.body)["message"], 'pods "%s" not found' % name)
        after = self.running("web", "app=web", 3)
        self.assertNotIn(name, [p.metadata.name for p in after], "the ReplicaSet replaced it")

    def test_kubectl_get_pdb(self):
        self.workload("pdbns", "api", 2, template({"app": "api"}))
        self.running("pdbns", "app=api", 2)
        self.pdb("pdbns", "api", minAvailable=1, selector={"matchLabels": {"app": "api"}})
        out = self.kubectl("get", "pdb", "-A").stdout.splitlines()
        self.assertEqual(out[0].split(), ["NAMESPACE", "NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE",
                                          "ALLOWED", "DISRUPTIONS", "AGE"])
        rows = [l.split() for l in out[1:] if l.startswith("pdbns ")]
        self.assertEqual(rows[0][:5], ["pdbns", "api", "1", "N/A", "1"])

    # --- selectors and validation ---
    def test_field_and_label_selectors(self):
        self.workload("sel", "s", 2, template({"app": "s"}))
        pods = self.running("sel", "app=s", 2)
        node = pods[0].spec.node_name
        on = self.core.list_pod_for_all_namespaces(field_selector="spec.nodeName=" + node).items
        self.assertTrue(on and all(p.spec.node_name == node for p in on))
        # A pod no node can take stays Pending and unscheduled.
        self.core.create_namespaced_pod("sel", {"metadata": {"name": "stuck", "labels": {"app": "x"}}, "spec": {
            "nodeSelector": {"nowhere": "true"}, "containers": [{"name": "c", "image": "busybox:1"}]}})
        unscheduled = self.core.list_namespaced_pod("sel", field_selector="spec.nodeName=").items
        self.assertEqual([p.metadata.name for p in unscheduled], ["stuck"])
        st = wait_until(lambda: [c for c in self.core.read_namespaced_pod("stuck", "sel").status.conditions or []
                                 if c.reason == "Unschedulable"], 10, what="Unschedulable condition")
        self.assertIn("didn't match Pod's node affinity/selector", st[0].message)
        running = self.core.list_namespaced_pod("sel", field_selector="status.phase=Running,metadata.name!=x")
        self.assertEqual(len(running.items), 2)
        self.assertEqual(len(self.core.list_namespaced_pod("sel", label_selector="app in (s)").items), 2)
        with self.assertRaises(ApiException) as cm:
            self.core.list_namespaced_pod("sel", field_selector="spec.bogus=1")
        self.assertEqual(cm.exception.status, 400)
        self.assertIn("field label not supported: spec.bogus", cm.exception.body)
        page = self.core.list_pod_for_all_namespaces(limit=1)
        self.assertEqual(len(page.items), 1)
        self.assertTrue(page.metadata._continue)
        self.core.delete_namespaced_pod("stuck", "sel")
        self.assertEqual(self.core.list_namespaced_pod("sel", field_selector="spec.nodeName=").items, [])

    def test_validation_and_conflicts(self):
        with self.assertRaises(ApiException) as cm:
            self.core.create_namespaced_pod("val", {"metadata": {"name": "bad"}, "spec": {"containers": [{"name": "c"}]}})
        self.assertEqual(cm.exception.status, 422)
        st = json.loads(cm.exception.body)
        self.assertEqual(st["reason"], "Invalid")
        self.assertEqual(st["message"], 'Pod "bad" is invalid: spec.containers[0].image: Required value')
        self.assertEqual(st["details"]["causes"][0]["field"], "spec.containers[0].image")
        body = {"metadata": {"name": "one"}, "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}
        self.core.create_namespaced_pod("val", body)
        with self.assertRaises(ApiException) as cm:
            self.core.create_namespaced_pod("val", body)
        self.assertEqual(cm.exception.status, 409)
        self.assertEqual(json.loads(cm.exception.body)["message"], 'pods "one" already exists')
        with self.assertRaises(ApiException) as cm:
            self.pdb("val", "both", minAvailable=1, maxUnavailable=1, selector={"matchLabels": {"a": "b"}})
        self.assertEqual(cm.exception.status, 422)
        self.assertIn("minAvailable and maxUnavailable cannot be both set", cm.exception.body)

    # --- eviction ---
    def test_eviction_201_then_429_and_replacement(self):
        self.workload("ev", "ev", 3, template({"app": "ev"}))
        pods = self.running("ev", "app=ev", 3)
        self.pdb("ev", "ev", minAvailable=2, selector={"matchLabels": {"app": "ev"}})
        wait_until(lambda: self.allowed("ev", "ev") == 1, 10, what="disruptionsAllowed 1")
        self.assertEqual(self.policy.read_namespaced_pod_disruption_budget("ev", "ev").status.expected_pods, 3)
        victim = pods[0]
        # The RBAC user may evict but not delete.
        self.evict("ev", victim.metadata.name, api=self.restricted)
        pdb = self.policy.read_namespaced_pod_disruption_budget("ev", "ev")
        self.assertEqual(pdb.status.disruptions_allowed, 0)
        self.assertEqual(pdb.status.current_healthy, 2)
        self.assertEqual(pdb.status.desired_healthy, 2)
        # minAvailable as a number: expectedPods counts every matching pod, the terminating one and
        # the ReplicaSet's replacement included (disruption.go getExpectedPodCount).
        self.assertEqual(pdb.status.expected_pods, len(self.pods("ev", "app=ev")))
        gone = self.core.read_namespaced_pod(victim.metadata.name, "ev")
        self.assertIsNotNone(gone.metadata.deletion_timestamp)
        with self.assertRaises(ApiException) as cm:
            self.evict("ev", pods[1].metadata.name)
        self.assertEqual(cm.exception.status, 429)
        st = json.loads(cm.exception.body)
        self.assertEqual(st["reason"], "TooManyRequests")
        self.assertEqual(st["message"], "Cannot evict pod as it would violate the pod's disruption budget.")
        self.assertEqual(st["details"]["causes"], [{"reason": "DisruptionBudget", "message":
                         "The disruption budget ev needs 2 healthy pods and has 2 currently"}])
        # The ReplicaSet's replacement is bound and starts; the budget recovers.
        after = self.running("ev", "app=ev", 3)
        new = [p for p in after if p.metadata.name not in [q.metadata.name for q in pods]]
        self.assertEqual(len(new), 1)
        self.assertTrue(new[0].spec.node_name)
        wait_until(lambda: self.allowed("ev", "ev") == 1, 10, what="budget back to 1")
        with self.assertRaises(ApiException) as cm:
            self.restricted.delete_namespaced_pod(pods[1].metadata.name, "ev")
        self.assertEqual(cm.exception.status, 403)
        self.assertIn('cannot delete resource "pods"', json.loads(cm.exception.body)["message"])

    def test_eviction_uid_precondition_409(self):
        """deleteOptions.preconditions.uid, as the rebalancer sends it: another UID is a 409 and
        nothing is evicted; the pod's own UID evicts it."""
        self.workload("ev3", "pre", 1, template({"app": "pre"}))
        pod = self.running("ev3", "app=pre", 1)[0]
        with self.assertRaises(ApiException) as cm:
            self.evict("ev3", pod.metadata.name, uid="not-" + pod.metadata.uid)
        self.assertEqual(cm.exception.status, 409)
        st = json.loads(cm.exception.body)
        self.assertEqual(st["reason"], "Conflict")
        self.assertIn("Precondition failed: UID in precondition", st["message"])
        self.assertIsNone(self.core.read_namespaced_pod(pod.metadata.name, "ev3").metadata.deletion_timestamp)
        self.evict("ev3", pod.metadata.name, uid=pod.metadata.uid)
        self.assertIsNotNone(self.core.read_namespaced_pod(pod.metadata.name, "ev3").metadata.deletion_timestamp)

    def test_eviction_404_and_two_pdbs_500(self):
        with self.assertRaises(ApiException) as cm:
            self.evict("ev2", "nope")
        self.assertEqual(cm.exception.status, 404)
        self.workload("ev2", "two", 2, template({"app": "two", "tier": "x"}))
        pods = self.running("ev2", "app=two", 2)
        self.pdb("ev2", "a", maxUnavailable=1, selector={"matchLabels": {"app": "two"}})
        self.pdb("ev2", "b", maxUnavailable="50%", selector={"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["x"]}]})
        with self.assertRaises(ApiException) as cm:
            self.evict("ev2", pods[0].metadata.name)
        self.assertEqual(cm.exception.status, 500)
        self.assertEqual(json.loads(cm.exception.body)["message"],
                         "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                         "does not support.")
        b = self.policy.read_namespaced_pod_disruption_budget("b", "ev2").status
        self.assertEqual((b.expected_pods, b.desired_healthy, b.disruptions_allowed), (2, 1, 1))

    # --- kubectl drain ---
    def test_drain_succeeds_and_pods_move(self):
        self.workload("dr", "dr", 4, template({"app": "dr"}))
        pods = self.running("dr", "app=dr", 4)
        node = pods[0].spec.node_name
        self.pdb("dr", "dr", maxUnavailable=1, selector={"matchLabels": {"app": "dr"}})
        try:
            r = self.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s",
                             timeout=90)
            # "node/N drained" since kubectl 1.23 or so, "node/N evicted" before (Debian 12's 1.20).
            self.assertRegex(r.stdout, r"node/%s (drained|evicted)" % node)
            after = self.running("dr", "app=dr", 4)
            self.assertTrue(all(p.spec.node_name != node for p in after), [p.spec.node_name for p in after])
        finally:
            self.kubectl("uncordon", node)

    def test_drain_blocked_by_budget(self):
        self.workload("blk", "blk", 2, template({"app": "blk"}))
        pods = self.running("blk", "app=blk", 2)
        node = pods[0].spec.node_name
        self.pdb("blk", "blk", maxUnavailable=0, selector={"matchLabels": {"app": "blk"}})
        try:
            r = self.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=8s",
                             check=False, timeout=60)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("Cannot evict pod as it would violate the pod's disruption budget", r.stderr)
            self.assertIn("global timeout reached", r.stderr)
            self.assertEqual(len(self.running("blk", "app=blk", 2)), 2)
        finally:
            self.kubectl("uncordon", node)

    # --- scheduler model ---
    def test_preferred_affinity_and_scores(self):
        affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "preference": {"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-00005"]}]}}]}}
        tmpl = template({"app": "pref"}, affinity=affinity)
        verdict = self.stack.sim_admin("POST", "/sim/schedule", tmpl)
        self.assertEqual(verdict["node"], "node-00005")
        self.assertNotIn("node-00001", [s["node"] for s in verdict["scores"]])
        for s in verdict["scores"]:
            self.assertEqual(s["total"], 3 * s["TaintToleration"] + 2 * s["NodeAffinity"] +
                             s["NodeResourcesFit"] + s["NodeResourcesBalancedAllocation"])
            self.assertEqual(s["NodeAffinity"], 100 if s["node"] == "node-00005" else 0)
        self.workload("pref", "pref", 1, tmpl)
        self.assertEqual(self.running("pref", "app=pref", 1)[0].spec.node_name, "node-00005")
        # Too big for any node: Pending with the scheduler's reasons.
        self.workload("pref", "huge", 1, template({"app": "huge"}, cpu="64"))
        msg = wait_until(lambda: [c.message for c in (self.pods("pref", "app=huge")[0].status.conditions or [])
                                  if c.reason == "Unschedulable"], 10, what="unschedulable")
        self.assertIn("Insufficient cpu", msg[0])
        self.stack.sim_admin("DELETE", "/sim/workloads/pref/huge")

    def test_schedule_what_if_with_the_pods_given(self):
        """POST /sim/schedule {"pod", "bound"}: the verdict as if the bound pods given were the
        pods on the nodes (the demo replays its evictions with it)."""
        workers = ["node-0000%d" % i for i in range(2, 6)]

        def on(node, cpu):
            return {"metadata": {"namespace": "x", "name": "p-" + node}, "spec": dict(
                template({"app": "w"}, cpu=cpu)["spec"], nodeName=node)}
        tmpl = template({"app": "what-if"})
        # Every worker but one full by requests: that one, whatever the simulator holds.
        for free in (workers[0], workers[-1]):
            bound = [on(n, "3") for n in workers if n != free] + [on(free, "100m")]
            self.assertEqual(self.stack.sim_admin("POST", "/sim/schedule", {"pod": tmpl, "bound": bound})["node"],
                             free)
        # Unbound pods in the list hold nothing.
        unbound = [{"metadata": {"name": "u"}, "spec": template({}, cpu="3")["spec"]}]
        verdict = self.stack.sim_admin("POST", "/sim/schedule", {"pod": tmpl, "bound": unbound})
        self.assertEqual(verdict["node"], self.stack.sim_admin("POST", "/sim/schedule",
                                                               {"pod": tmpl, "bound": []})["node"])

    # --- watch ---
    def test_watch_events(self):
        w = kubernetes.watch.Watch()
        events = []

        def run():
            for ev in w.stream(self.core.list_namespaced_pod, "wat", timeout_seconds=20):
                events.append((ev["type"], ev["object"].metadata.name,
                               ev["object"].metadata.deletion_timestamp is not None))
        t = threading.Thread(target=run)
        t.start()
        try:
            wait_until(lambda: self.stack.sim_admin("GET", "/sim/stats")["watches"] >= 1, 10, what="watch open")
            self.core.create_namespaced_pod("wat", {"metadata": {"name": "w1"}, "spec": {
                "containers": [{"name": "c", "image": "busybox:1"}]}})
            self.running("wat", None, 1)
            self.core.delete_namespaced_pod("w1", "wat")
            wait_until(lambda: ("DELETED", "w1", True) in events, 10, what="DELETED event")
        finally:
            w.stop()
            t.join(30)
        types = [e[0] for e in events if e[1] == "w1"]
        self.assertEqual(types[0], "ADDED")
        self.assertIn(("MODIFIED", "w1", True), events, "graceful deletion shows up first")
        self.assertEqual(types[-1], "DELETED")
        # kubectl's table watch works too.
        env = dict(os.environ, KUBECONFIG=self.stack.admin_kubeconfig)
        p = subprocess.run(["kubectl", "get", "pods", "-n", "wat", "-w", "--request-timeout=3s"], env=env,
                           capture_output=True, text=True, timeout=30)
        self.assertNotIn("error", p.stderr.lower().replace("timeout", ""), p.stderr)


if __name__ == "__main__":
    unittest.main()
