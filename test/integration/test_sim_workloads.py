"""The simulator's "other disruptors", checked with real clients (kubectl and the official Python
client): apps/v1 Deployments, ReplicaSets, StatefulSets and DaemonSets whose status follows their
pods, rollouts frozen in progress through the admin API, autoscaling/v2 HorizontalPodAutoscalers,
and KubeVirt's background eviction of VM launcher pods (a 429 that starts a live migration)."""
import json
import os
import tempfile
import unittest

import kubernetes
from kubernetes import dynamic
from kubernetes.client.rest import ApiException

from harness import Stack, wait_until

RBAC = {"users": {"dynamic-scheduler": [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
    {"apiGroups": ["apps"], "resources": ["deployments", "replicasets", "statefulsets", "daemonsets"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["get", "list", "watch"]},
]}}

WEBHOOK = 'admission webhook "virt-launcher-eviction-interceptor.kubevirt.io" denied the request: '
IN_PROGRESS = "descheduler.alpha.kubernetes.io/eviction-in-progress"


def template(labels, annotations=None, cpu="100m"):
    meta = {"labels": labels}
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": {"containers": [
        {"name": "app", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": {"cpu": cpu}}}]}}


class SimWorkloadsIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ds-simwl-")
        rbac_file = os.path.join(cls.tmp, "rbac.json")
        with open(rbac_file, "w") as f:
            json.dump(RBAC, f)
        # 4 nodes, the first a control plane: DaemonSets run on the 3 workers.
        cls.stack = Stack(nodes=4, control_plane=1, sim_args=[
            "-rbac", rbac_file, "-pod_grace_seconds", "1", "-pod_start_seconds", "0.5",
            "-vm_migration_seconds", "2"])
        cls.stack.dir = cls.tmp
        cls.stack.start_sim()

        def client(kubeconfig):
            cfg = kubernetes.client.Configuration()
            kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
            return kubernetes.client.ApiClient(cfg)
        admin = client(cls.stack.admin_kubeconfig)
        cls.core = kubernetes.client.CoreV1Api(admin)
        cls.apps = kubernetes.client.AppsV1Api(admin)
        cls.restricted_apps = kubernetes.client.AppsV1Api(client(cls.stack.kubeconfig))
        cls.restricted_core = kubernetes.client.CoreV1Api(client(cls.stack.kubeconfig))
        # Debian's python3-kubernetes (22.6) predates AutoscalingV2Api; its dynamic client reads
        # autoscaling/v2 from the server's discovery.
        cls.autoscaling_v2 = getattr(kubernetes.client, "AutoscalingV2Api", None)
        cls.autoscaling_v2 = cls.autoscaling_v2(admin) if cls.autoscaling_v2 else None
        cls.hpa = dynamic.DynamicClient(admin).resources.get(
            api_version="autoscaling/v2", kind="HorizontalPodAutoscaler")
        cls.restricted_hpa = dynamic.DynamicClient(client(cls.stack.kubeconfig)).resources.get(
            api_version="autoscaling/v2", kind="HorizontalPodAutoscaler")

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    # --- helpers ---
    def kubectl(self, *args, **kw):
        return self.stack.kubectl(*args, **kw)

    def admin(self, path, body):
        return self.stack.sim_admin("POST", path, body)

    def workload(self, ns, replicas, tmpl, **extra):
        return self.admin("/sim/workloads", dict(namespace=ns, replicas=replicas, template=tmpl, **extra))

    def live_pods(self, ns, selector=None):
        return [p for p in self.core.list_namespaced_pod(ns, label_selector=selector).items
                if p.metadata.deletion_timestamp is None]

    def running(self, ns, selector, count):
        def ok():
            ps = self.live_pods(ns, selector)
            ready = [p for p in ps if p.status.phase == "Running"]
            return ready if len(ready) == count and len(ps) == count else None
        return wait_until(ok, 20, what="%d running pods %s in %s" % (count, selector, ns))

    def evict(self, ns, name, dry_run=False):
        opts = kubernetes.client.V1DeleteOptions(dry_run=["All"]) if dry_run else None
        body = kubernetes.client.V1Eviction(metadata=kubernetes.client.V1ObjectMeta(name=name, namespace=ns),
                                            delete_options=opts)
        return self.core.create_namespaced_pod_eviction(name, ns, body)

    def refused(self, fn, *args, **kw):
        with self.assertRaises(ApiException) as cm:
            fn(*args, **kw)
        return cm.exception.status, json.loads(cm.exception.body)

    # --- apps/v1 ---
    def test_deployment_owns_its_replicaset_and_status_follows_pods(self):
        out = self.workload("web", 3, template({"app": "web"}), deployment="web")
        rs_name = out["name"]
        self.assertEqual(rs_name, "web-" + out["podTemplateHash"])
        pods = self.running("web", "app=web", 3)
        for p in pods:
            ref = p.metadata.owner_references[0]
            self.assertEqual((ref.kind, ref.name, ref.controller), ("ReplicaSet", rs_name, True))
            self.assertEqual(p.metadata.labels["pod-template-hash"], out["podTemplateHash"])
        rs = wait_until(lambda: (lambda r: r if r.status.ready_replicas == 3 else None)(
            self.apps.read_namespaced_replica_set(rs_name, "web")), 10, what="ReplicaSet ready")
        ref = rs.metadata.owner_references[0]
        dep = self.apps.read_namespaced_deployment("web", "web")
        self.assertEqual((ref.api_version, ref.kind, ref.name, ref.uid, ref.controller),
                         ("apps/v1", "Deployment", "web", dep.metadata.uid, True))
        self.assertEqual(pods[0].metadata.owner_references[0].uid, rs.metadata.uid)
        self.assertEqual((rs.spec.replicas, rs.status.replicas, rs.status.available_replicas), (3, 3, 3))
        self.assertEqual(rs.spec.selector.match_labels, {"app": "web", "pod-template-hash": out["podTemplateHash"]})
        dep = wait_until(lambda: (lambda d: d if d.status.available_replicas == 3 else None)(
            self.apps.read_namespaced_deployment("web", "web")), 10, what="Deployment available")
        st = dep.status
        self.assertEqual((dep.spec.replicas, st.replicas, st.updated_replicas, st.ready_replicas),
                         (3, 3, 3, 3))
        self.assertEqual(st.observed_generation, dep.metadata.generation)
        self.assertIn(("Available", "True"), [(c.type, c.status) for c in st.conditions])
        self.assertTrue(dep.metadata.resource_version.isdigit())
        # A scale up.
        self.workload("web", 4, template({"app": "web"}), deployment="web")
        self.running("web", "app=web", 4)
        dep = wait_until(lambda: (lambda d: d if d.status.ready_replicas == 4 else None)(
            self.apps.read_namespaced_deployment("web", "web")), 10, what="scaled to 4")
        self.assertEqual(dep.spec.replicas, 4)
        self.assertEqual(dep.metadata.generation, 2, "a scale is a spec change")
        self.assertEqual(dep.status.observed_generation, 2)
        # Lists: namespaced, across namespaces, with a label selector, and for the restricted user.
        self.assertEqual([d.metadata.name for d in self.apps.list_namespaced_deployment("web").items], ["web"])
        self.assertIn(("web", "web"), [(d.metadata.namespace, d.metadata.name)
                                       for d in self.apps.list_deployment_for_all_namespaces().items])
        self.assertEqual(self.apps.list_replica_set_for_all_namespaces(label_selector="app=nothing").items, [])
        self.assertIn(rs_name, [r.metadata.name for r in self.restricted_apps.list_namespaced_replica_set("web").items])
        # kubectl reads them with server-side tables.
        r = self.kubectl("get", "deploy,rs", "-n", "web")
        self.assertRegex(r.stdout, r"deployment.apps/web\s+4/4\s+4\s+4")
        self.assertRegex(r.stdout, r"replicaset.apps/%s\s+4\s+4\s+4" % rs_name)
        r = self.kubectl("rollout", "status", "deployment/web", "-n", "web", "--timeout=20s")
        self.assertIn('deployment "web" successfully rolled out', r.stdout)

    def test_not_found_as_the_api_server_words_it(self):
        for fn, resource in ((self.apps.read_namespaced_deployment, "deployments"),
                             (self.apps.read_namespaced_replica_set, "replicasets"),
                             (self.apps.read_namespaced_stateful_set, "statefulsets"),
                             (self.apps.read_namespaced_daemon_set, "daemonsets")):
            code, st = self.refused(fn, "nope", "default")
            self.assertEqual(code, 404)
            self.assertEqual((st["kind"], st["status"], st["reason"]), ("Status", "Failure", "NotFound"))
            self.assertEqual(st["message"], '%s.apps "nope" not found' % resource)
            self.assertEqual(st["details"], {"name": "nope", "group": "apps", "kind": resource})
        r = self.kubectl("get", "deploy", "nope", "-n", "default", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('deployments.apps "nope" not found', r.stderr)
        # An HPA that is not there either.
        code, st = self.refused(self.hpa.get, name="nope", namespace="default")
        self.assertEqual(st["message"], 'horizontalpodautoscalers.autoscaling "nope" not found')

    def test_rollout_in_progress_and_done(self):
        self.workload("ro", 3, template({"app": "ro"}), deployment="ro")
        self.running("ro", "app=ro", 3)
        wait_until(lambda: self.apps.read_namespaced_deployment("ro", "ro").status.available_replicas == 3, 10,
                   what="ro available")
        dep = self.admin("/sim/rollouts", {"kind": "Deployment", "namespace": "ro", "name": "ro",
                                           "updatedReplicas": 1})
        self.assertEqual(dep["metadata"]["generation"], 2)
        dep = self.apps.read_namespaced_deployment("ro", "ro")
        self.assertEqual((dep.metadata.generation, dep.status.observed_generation), (2, 2))
        self.assertEqual((dep.spec.replicas, dep.status.updated_replicas, dep.status.replicas), (3, 1, 3))
        r = self.kubectl("rollout", "status", "deployment/ro", "-n", "ro", "--timeout=2s", check=False, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("1 out of 3 new replicas have been updated", r.stdout)
        # Not yet observed: the controller has not seen the new generation.
        self.admin("/sim/rollouts", {"kind": "Deployment", "namespace": "ro", "name": "ro", "observed": False})
        dep = self.apps.read_namespaced_deployment("ro", "ro")
        self.assertEqual((dep.metadata.generation, dep.status.observed_generation), (2, 1))
        self.admin("/sim/rollouts", {"kind": "Deployment", "namespace": "ro", "name": "ro", "done": True})
        dep = self.apps.read_namespaced_deployment("ro", "ro")
        self.assertEqual((dep.metadata.generation, dep.status.observed_generation), (2, 2))
        self.assertEqual(dep.status.updated_replicas, 3)
        self.assertIn("successfully rolled out",
                      self.kubectl("rollout", "status", "deployment/ro", "-n", "ro", "--timeout=10s").stdout)
        # StatefulSet and DaemonSet rollouts.
        self.workload("ro", 2, template({"app": "ro-db"}), kind="StatefulSet", name="ro-db")
        self.running("ro", "app=ro-db", 2)
        self.admin("/sim/rollouts", {"kind": "StatefulSet", "namespace": "ro", "name": "ro-db", "updatedReplicas": 1})
        sts = self.apps.read_namespaced_stateful_set("ro-db", "ro")
        self.assertNotEqual(sts.status.update_revision, sts.status.current_revision)
        self.assertEqual((sts.status.updated_replicas, sts.status.current_replicas), (1, 1))
        self.admin("/sim/rollouts", {"kind": "StatefulSet", "namespace": "ro", "name": "ro-db", "done": True})
        sts = self.apps.read_namespaced_stateful_set("ro-db", "ro")
        self.assertEqual(sts.status.update_revision, sts.status.current_revision)
        self.workload("ro", 0, template({"app": "ro-agent"}), kind="DaemonSet", name="ro-agent")
        self.running("ro", "app=ro-agent", 3)
        self.admin("/sim/rollouts", {"kind": "DaemonSet", "namespace": "ro", "name": "ro-agent"})
        ds = self.apps.read_namespaced_daemon_set("ro-agent", "ro")
        self.assertEqual(ds.status.desired_number_scheduled, 3)
        self.assertIn(ds.status.updated_number_scheduled, (None, 0), "omitempty: 0 is left out")
        r = self.kubectl("rollout", "status", "ds/ro-agent", "-n", "ro", "--timeout=2s", check=False, timeout=30)
        self.assertIn("0 out of 3 new pods have been updated", r.stdout)
        self.admin("/sim/rollouts", {"kind": "DaemonSet", "namespace": "ro", "name": "ro-agent", "done": True})
        self.assertEqual(self.apps.read_namespaced_daemon_set("ro-agent", "ro").status.updated_number_scheduled, 3)
        with self.assertRaises(Exception) as cm:
            self.admin("/sim/rollouts", {"kind": "Deployment", "namespace": "ro", "name": "missing"})
        self.assertEqual(getattr(cm.exception, "code", None), 404)

    def test_statefulset_and_daemonset_pods(self):
        self.workload("st", 2, template({"app": "pg"}), kind="StatefulSet", name="pg")
        pods = self.running("st", "app=pg", 2)
        self.assertEqual(sorted(p.metadata.name for p in pods), ["pg-0", "pg-1"])
        sts = self.apps.read_namespaced_stateful_set("pg", "st")
        for p in pods:
            ref = p.metadata.owner_references[0]
            self.assertEqual((ref.kind, ref.name, ref.uid, ref.controller), ("StatefulSet", "pg", sts.metadata.uid, True))
            self.assertEqual(p.metadata.labels["statefulset.kubernetes.io/pod-name"], p.metadata.name)
        old_uid = [p for p in pods if p.metadata.name == "pg-0"][0].metadata.uid
        self.core.delete_namespaced_pod("pg-0", "st")
        again = wait_until(lambda: [p for p in self.running("st", "app=pg", 2)
                                    if p.metadata.name == "pg-0" and p.metadata.uid != old_uid], 20,
                           what="pg-0 back under its name")
        self.assertEqual(again[0].metadata.name, "pg-0")
        sts = wait_until(lambda: (lambda s: s if s.status.ready_replicas == 2 else None)(
            self.apps.read_namespaced_stateful_set("pg", "st")), 10, what="sts ready")
        self.assertEqual((sts.spec.replicas, sts.status.replicas, sts.status.available_replicas), (2, 2, 2))
        self.assertEqual(sts.status.current_revision, sts.status.update_revision)
        # A DaemonSet: one pod on each worker, pinned there.
        self.workload("st", 0, template({"app": "agent"}), kind="DaemonSet", name="agent")
        pods = self.running("st", "app=agent", 3)
        self.assertEqual(sorted(p.spec.node_name for p in pods), ["node-00002", "node-00003", "node-00004"])
        for p in pods:
            self.assertEqual(p.metadata.owner_references[0].kind, "DaemonSet")
            term = p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms[0]
            self.assertEqual((term.match_fields[0].key, term.match_fields[0].values), ("metadata.name", [p.spec.node_name]))
        ds = wait_until(lambda: (lambda d: d if d.status.number_ready == 3 else None)(
            self.apps.read_namespaced_daemon_set("agent", "st")), 10, what="ds ready")
        self.assertEqual((ds.status.desired_number_scheduled, ds.status.current_number_scheduled,
                          ds.status.number_available, ds.status.number_misscheduled), (3, 3, 3, 0))
        out = self.kubectl("get", "deploy,rs,sts,ds", "-A").stdout
        self.assertRegex(out, r"st\s+statefulset.apps/pg\s+2/2")
        self.assertRegex(out, r"st\s+daemonset.apps/agent\s+3\s+3\s+3\s+3\s+3")
        # Deleting the workload takes its pods.
        self.stack.sim_admin("DELETE", "/sim/workloads/st/agent")
        wait_until(lambda: not self.live_pods("st", "app=agent"), 10, what="agent pods gone")
        code, _ = self.refused(self.apps.read_namespaced_daemon_set, "agent", "st")
        self.assertEqual(code, 404)

    # --- autoscaling/v2 ---
    def test_hpa_create_status_list_delete(self):
        body = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
                "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                         "maxReplicas": 10}}
        if self.autoscaling_v2 is not None:
            created = self.autoscaling_v2.create_namespaced_horizontal_pod_autoscaler("hpa", body).to_dict()
            created = {"spec": {"minReplicas": created["spec"]["min_replicas"]},
                       "status": {"desiredReplicas": created["status"]["desired_replicas"]}}
        else:
            created = self.hpa.create(body=body, namespace="hpa").to_dict()
        self.assertEqual(created["spec"]["minReplicas"], 1, "defaulted")
        self.assertEqual(created["status"]["desiredReplicas"], 0)
        got = self.hpa.get(name="web", namespace="hpa")
        self.assertEqual(got.spec.metrics[0].resource.target.averageUtilization, 80)
        # The autoscaler scales down: currentReplicas 6, desiredReplicas 3.
        patched = self.hpa.subresources["status"].patch(
            body={"status": {"currentReplicas": 6, "desiredReplicas": 3}}, name="web", namespace="hpa",
            content_type="application/merge-patch+json")
        self.assertEqual((patched.status.currentReplicas, patched.status.desiredReplicas), (6, 3))
        self.assertEqual(patched.spec.maxReplicas, 10, "the status subresource leaves the spec")
        self.assertGreater(int(patched.metadata.resourceVersion), int(got.metadata.resourceVersion))
        whole = patched.to_dict()
        whole["status"] = {"currentReplicas": 3, "desiredReplicas": 3}
        whole["spec"]["maxReplicas"] = 99
        replaced = self.hpa.subresources["status"].replace(body=whole, name="web", namespace="hpa")
        self.assertEqual((replaced.status.currentReplicas, replaced.spec.maxReplicas), (3, 10))
        code, st = self.refused(self.hpa.subresources["status"].replace, body=whole, name="web", namespace="hpa")
        self.assertEqual((code, st["reason"]), (409, "Conflict"))
        # The admin API creates one with its status in one call.
        admin = self.admin("/sim/hpas", {"namespace": "hpa", "name": "api", "target": {"kind": "Deployment",
                           "name": "api"}, "minReplicas": 2, "maxReplicas": 8, "currentReplicas": 6,
                           "desiredReplicas": 3})
        self.assertEqual(admin["spec"]["scaleTargetRef"], {"kind": "Deployment", "name": "api", "apiVersion": "apps/v1"})
        self.assertEqual((admin["status"]["currentReplicas"], admin["status"]["desiredReplicas"]), (6, 3))
        self.assertEqual(sorted(h.metadata.name for h in self.hpa.get(namespace="hpa").items), ["api", "web"])
        self.assertIn(("hpa", "api"), [(h.metadata.namespace, h.metadata.name) for h in self.hpa.get().items])
        self.assertEqual([h.metadata.name for h in self.restricted_hpa.get(namespace="hpa").items], ["api", "web"])
        out = self.kubectl("get", "hpa", "-A").stdout
        self.assertRegex(out, r"hpa\s+api\s+Deployment/api\s+\S+: <unknown>/80%\s+2\s+8\s+6")
        # Validation and RBAC.
        bad = dict(body, metadata={"name": "bad"}, spec=dict(body["spec"], minReplicas=5, maxReplicas=2))
        code, st = self.refused(self.hpa.create, body=bad, namespace="hpa")
        self.assertEqual((code, st["reason"]), (422, "Invalid"))
        self.assertEqual(st["message"], 'HorizontalPodAutoscaler.autoscaling "bad" is invalid: spec.maxReplicas: '
                                        'Invalid value: 2: must be greater than or equal to `minReplicas`')
        code, st = self.refused(self.restricted_hpa.create, body=dict(body, metadata={"name": "x"}), namespace="hpa")
        self.assertEqual(code, 403)
        self.hpa.delete(name="web", namespace="hpa")
        code, _ = self.refused(self.hpa.get, name="web", namespace="hpa")
        self.assertEqual(code, 404)

    # --- KubeVirt's background eviction ---
    def test_vm_launcher_eviction_starts_a_live_migration(self):
        launcher = template({"kubevirt.io": "virt-launcher"}, {
            "kubevirt.io/domain": "vm1", "descheduler.alpha.kubernetes.io/request-evict-only": ""})
        self.workload("vms", 1, launcher, name="virt-launcher-vm1")
        pod = self.running("vms", "kubevirt.io=virt-launcher", 1)[0]
        name = pod.metadata.name
        # A dry run answers as the real one does and starts nothing.
        code, st = self.refused(self.evict, "vms", name, dry_run=True)
        self.assertEqual(code, 429)
        self.assertNotIn(IN_PROGRESS, self.core.read_namespaced_pod(name, "vms").metadata.annotations)
        # The restricted user (create pods/eviction) sends what the descheduler sends.
        code, st = self.refused(self.restricted_core.create_namespaced_pod_eviction, name, "vms",
                                kubernetes.client.V1Eviction(metadata=kubernetes.client.V1ObjectMeta(
                                    name=name, namespace="vms")))
        self.assertEqual(code, 429)
        self.assertEqual(st, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": WEBHOOK + 'Eviction triggered evacuation of VMI "vms/vm1"', "code": 429})
        now = self.core.read_namespaced_pod(name, "vms")
        self.assertEqual(now.metadata.annotations[IN_PROGRESS], "true")
        self.assertIsNone(now.metadata.deletion_timestamp, "the pod stays while its VM migrates")
        code, st = self.refused(self.evict, "vms", name)
        self.assertEqual((code, st["message"]), (429, WEBHOOK + 'Evacuation in progress: Eviction triggered '
                                                 'evacuation of VMI "vms/vm1"'))
        # After the migration (2 s here) the source pod goes and the workload replaces it.
        wait_until(lambda: name not in [p.metadata.name for p in self.live_pods("vms")], 15, what="source pod gone")
        new = self.running("vms", "kubevirt.io=virt-launcher", 1)[0]
        self.assertNotEqual(new.metadata.name, name)
        self.assertNotIn(IN_PROGRESS, new.metadata.annotations)
        # The simulator's own opt-in, with its time, and the admin API ending a migration.
        slow = template({"app": "slow-vm"}, {"sim.dynamic-scheduler.io/live-migration-seconds": "600"})
        self.workload("vms", 2, slow, name="slow")
        a, b = [p.metadata.name for p in self.running("vms", "app=slow-vm", 2)]
        for p in (a, b):
            code, st = self.refused(self.evict, "vms", p)
            self.assertEqual(st["message"], WEBHOOK + 'Eviction triggered evacuation of VMI "vms/%s"' % p)
        self.admin("/sim/migrations", {"namespace": "vms", "name": a, "abort": True})
        self.assertNotIn(IN_PROGRESS, self.core.read_namespaced_pod(a, "vms").metadata.annotations)
        self.admin("/sim/migrations", {"namespace": "vms", "name": b})
        self.assertIsNotNone(self.core.read_namespaced_pod(b, "vms").metadata.deletion_timestamp)
        with self.assertRaises(Exception) as cm:
            self.admin("/sim/migrations", {"namespace": "vms", "name": a})
        self.assertEqual(getattr(cm.exception, "code", None), 404)
        # A pod that is no launcher is evicted as before.
        self.workload("vms", 1, template({"app": "plain"}), name="plain")
        plain = self.running("vms", "app=plain", 1)[0].metadata.name
        self.evict("vms", plain)
        self.assertIsNotNone(self.core.read_namespaced_pod(plain, "vms").metadata.deletion_timestamp)

    # --- discovery ---
    def test_discovery_lists_what_is_served(self):
        out = self.kubectl("api-resources", "--api-group=apps", "-o", "name").stdout.split()
        self.assertEqual(sorted(out), ["daemonsets.apps", "deployments.apps", "replicasets.apps",
                                       "statefulsets.apps"])
        out = self.kubectl("api-resources", "--api-group=autoscaling").stdout
        self.assertRegex(out, r"horizontalpodautoscalers\s+hpa\s+autoscaling/v2\s+true\s+HorizontalPodAutoscaler")
        groups = {g.name: g.preferred_version.version for g in kubernetes.client.ApisApi(
            self.apps.api_client).get_api_versions().groups}
        self.assertEqual((groups["apps"], groups["autoscaling"]), ("v1", "v2"))


if __name__ == "__main__":
    unittest.main()
