"""PersistentVolumeClaims and PersistentVolumes in the Kubernetes API simulator, and the scheduler
model's VolumeBinding filter, checked with real clients: kubectl (create -f, get, delete) and the
official Python client. A pod whose claim is bound to a volume pinned to one node by its node
affinity must land on that node."""
import json
import os
import tempfile
import unittest

import kubernetes
from kubernetes.client.rest import ApiException

from harness import Stack, wait_until

# The controller's user may read claims in "vol" (a Role) and volumes by name (a ClusterRole with
# get only), as the rebalancer will; nothing else about volumes.
RBAC = {"users": {"dynamic-scheduler": [
    {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get", "list"],
     "namespace": "vol"},
    {"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list", "watch"]},
]}}

MANIFEST = """apiVersion: v1
kind: PersistentVolume
metadata:
  name: local-{node}
  labels:
    tier: local
spec:
  capacity:
    storage: 10Gi
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: local
  volumeMode: Filesystem
  local:
    path: /mnt/disks/ssd1
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - key: kubernetes.io/hostname
          operator: In
          values: [{node}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: vol
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local
  volumeName: local-{node}
  resources:
    requests:
      storage: 10Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: db
  namespace: vol
spec:
  containers:
  - name: db
    image: registry.k8s.io/pause:3.9
    resources:
      requests: {{cpu: 100m, memory: 128Mi}}
    volumeMounts:
    - name: data
      mountPath: /data
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: data
"""


def pod(name, claim):
    return {"metadata": {"name": name}, "spec": {
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}],
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]}}


def claim(name, volume=None):
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if volume:
        spec["volumeName"] = volume
    return {"metadata": {"name": name}, "spec": spec}


class SimVolumesIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ds-simvol-")
        rbac_file = os.path.join(cls.tmp, "rbac.json")
        with open(rbac_file, "w") as f:
            json.dump(RBAC, f)
        cls.stack = Stack(nodes=4, control_plane=1, sim_args=["-rbac", rbac_file, "-pod_start_seconds", "0.5"])
        cls.stack.dir = cls.tmp
        cls.stack.start_sim()

        def client(kubeconfig):
            cfg = kubernetes.client.Configuration()
            kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
            return kubernetes.client.ApiClient(cfg)
        cls.core = kubernetes.client.CoreV1Api(client(cls.stack.admin_kubeconfig))
        cls.restricted = kubernetes.client.CoreV1Api(client(cls.stack.kubeconfig))
        # The last worker: the model's tie-break (first node in order) would never pick it alone.
        workers = [n for n in cls.core.list_node().items
                   if not any(t.effect == "NoSchedule" for t in n.spec.taints or [])]
        cls.node = workers[-1].metadata.labels["kubernetes.io/hostname"]
        cls.first_worker = workers[0].metadata.name

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def kubectl(self, *args, **kw):
        return self.stack.kubectl(*args, **kw)

    def scheduled(self, ns, name):
        """The pod's node once bound, else None."""
        p = self.core.read_namespaced_pod(name, ns)
        return p.spec.node_name

    def unschedulable_message(self, ns, name):
        def msg():
            p = self.core.read_namespaced_pod(name, ns)
            for c in p.status.conditions or []:
                if c.type == "PodScheduled" and c.status == "False":
                    return c.message
            return None
        return wait_until(msg, 10, what="PodScheduled=False on %s/%s" % (ns, name))

    def test_pod_follows_its_volume_node_affinity(self):
        path = os.path.join(self.tmp, "db.yaml")
        with open(path, "w") as f:
            f.write(MANIFEST.format(node=self.node))
        out = self.kubectl("create", "-f", path, "--validate=false").stdout
        self.assertIn("persistentvolume/local-%s created" % self.node, out)
        self.assertIn("persistentvolumeclaim/data created", out)
        self.assertIn("pod/db created", out)
        node = wait_until(lambda: self.scheduled("vol", "db"), 10, what="pod vol/db bound")
        self.assertEqual(node, self.node)
        self.assertNotEqual(node, self.first_worker)
        # The PV controller's part: both sides Bound, the claim annotated and given the capacity.
        pvc = self.core.read_namespaced_persistent_volume_claim("data", "vol")
        self.assertEqual(pvc.status.phase, "Bound")
        self.assertEqual(pvc.metadata.annotations["pv.kubernetes.io/bind-completed"], "yes")
        self.assertEqual(pvc.status.capacity, {"storage": "10Gi"})
        self.assertTrue(pvc.metadata.uid and pvc.metadata.creation_timestamp and pvc.metadata.resource_version)
        pv = self.core.read_persistent_volume("local-" + self.node)
        self.assertEqual(pv.status.phase, "Bound")
        self.assertEqual((pv.spec.claim_ref.namespace, pv.spec.claim_ref.name), ("vol", "data"))
        # The spec is kept as given: the node affinity the rebalancer will read.
        term = pv.spec.node_affinity.required.node_selector_terms[0].match_expressions[0]
        self.assertEqual((term.key, term.operator, term.values), ("kubernetes.io/hostname", "In", [self.node]))
        self.assertGreater(int(pv.metadata.resource_version), 0)

        # kubectl get pv,pvc: the API server's columns, through short names.
        lines = self.kubectl("get", "pv,pvc", "-n", "vol").stdout.splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY", "STATUS",
                                            "CLAIM", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"])
        row = [l for l in lines if l.startswith("persistentvolume/local-")][0].split()
        self.assertEqual(row[:7], ["persistentvolume/local-" + self.node, "10Gi", "RWO", "Retain", "Bound",
                                   "vol/data", "local"])
        pvc_header = [l for l in lines if l.startswith("NAME") and "VOLUME " in l + " "][0].split()
        self.assertEqual(pvc_header[:5], ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS"])
        row = [l for l in lines if l.startswith("persistentvolumeclaim/data")][0].split()
        self.assertEqual(row[:6], ["persistentvolumeclaim/data", "Bound", "local-" + self.node, "10Gi", "RWO",
                                   "local"])
        self.assertEqual(self.kubectl("get", "pvc", "-n", "vol", "-o", "name").stdout.split(),
                         ["persistentvolumeclaim/data"])
        self.assertEqual(self.kubectl("get", "pv", "-l", "tier=local", "-o", "name").stdout.split(),
                         ["persistentvolume/local-" + self.node])
        self.assertEqual(self.kubectl("get", "pv", "-l", "tier=remote", "-o", "name").stdout.split(), [])

        # The scheduler's verdict for a replacement: only the volume's node.
        verdict = self.stack.sim_admin("POST", "/sim/schedule", {
            "metadata": {"namespace": "vol"}, "spec": {"containers": [{"name": "c"}], "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}})
        self.assertEqual(verdict["node"], self.node)
        self.assertEqual([s["node"] for s in verdict["scores"]], [self.node])

    def test_missing_and_unbound_claims_keep_the_pod_pending(self):
        self.core.create_namespaced_pod("wait", pod("orphan", "ghost"))
        self.assertEqual(self.unschedulable_message("wait", "orphan"),
                         '0/4 nodes are available: persistentvolumeclaim "ghost" not found.')
        self.core.create_namespaced_persistent_volume_claim("wait", claim("ghost"))
        self.assertEqual(self.core.read_namespaced_persistent_volume_claim("ghost", "wait").status.phase, "Pending")

        def unbound():
            m = self.unschedulable_message("wait", "orphan")
            return m if "unbound" in m else None
        self.assertEqual(wait_until(unbound, 10, what="unbound verdict"),
                         "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims.")
        self.assertIsNone(self.scheduled("wait", "orphan"))

    def test_volume_going_away(self):
        body = {"metadata": {"name": "gone"}, "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}}}
        self.core.create_persistent_volume(body)
        self.assertEqual(self.core.read_persistent_volume("gone").status.phase, "Available")
        self.core.create_namespaced_persistent_volume_claim("lost", claim("c", volume="gone"))
        self.assertEqual(self.core.read_persistent_volume("gone").status.phase, "Bound")
        r = self.kubectl("delete", "pv", "gone")
        self.assertIn('persistentvolume "gone" deleted', r.stdout)
        self.assertEqual(self.core.read_namespaced_persistent_volume_claim("c", "lost").status.phase, "Lost")
        self.core.create_namespaced_pod("lost", pod("p", "c"))
        self.assertEqual(self.unschedulable_message("lost", "p"),
                         '0/4 nodes are available: persistentvolumeclaim "c" bound to non-existent '
                         'persistentvolume "gone".')
        r = self.kubectl("delete", "pvc", "c", "-n", "lost")
        self.assertIn('persistentvolumeclaim "c" deleted', r.stdout)
        self.assertEqual(self.core.list_namespaced_persistent_volume_claim("lost").items, [])

    def test_errors_are_status_objects(self):
        with self.assertRaises(ApiException) as cm:
            self.core.read_namespaced_persistent_volume_claim("nope", "vol")
        self.assertEqual(cm.exception.status, 404)
        st = json.loads(cm.exception.body)
        self.assertEqual((st["kind"], st["apiVersion"], st["status"], st["reason"], st["code"]),
                         ("Status", "v1", "Failure", "NotFound", 404))
        self.assertEqual(st["message"], 'persistentvolumeclaims "nope" not found')
        self.assertEqual(st["details"], {"name": "nope", "kind": "persistentvolumeclaims"})
        r = self.kubectl("get", "pvc", "nope", "-n", "vol", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('Error from server (NotFound): persistentvolumeclaims "nope" not found', r.stderr)
        with self.assertRaises(ApiException) as cm:
            self.core.read_persistent_volume("nope")
        self.assertEqual(json.loads(cm.exception.body)["message"], 'persistentvolumes "nope" not found')

        with self.assertRaises(ApiException) as cm:
            self.core.create_namespaced_persistent_volume_claim("val", {"spec": claim("x")["spec"]})
        self.assertEqual(cm.exception.status, 422)
        st = json.loads(cm.exception.body)
        self.assertEqual(st["reason"], "Invalid")
        self.assertEqual(st["message"], 'PersistentVolumeClaim "" is invalid: metadata.name: Required value: '
                                        'name or generateName is required')
        self.assertEqual(st["details"]["causes"][0]["field"], "metadata.name")
        with self.assertRaises(ApiException) as cm:
            self.core.create_persistent_volume({"metadata": {"name": "empty"}, "spec": {}})
        self.assertEqual(cm.exception.status, 422)
        self.assertEqual(json.loads(cm.exception.body)["message"],
                         'PersistentVolume "empty" is invalid: [spec.accessModes: Required value, spec.capacity: '
                         'Required value, spec: Required value: must specify a volume type]')
        self.core.create_namespaced_persistent_volume_claim("val", claim("twice"))
        with self.assertRaises(ApiException) as cm:
            self.core.create_namespaced_persistent_volume_claim("val", claim("twice"))
        self.assertEqual(cm.exception.status, 409)
        st = json.loads(cm.exception.body)
        self.assertEqual((st["reason"], st["message"]),
                         ("AlreadyExists", 'persistentvolumeclaims "twice" already exists'))

    def test_rbac(self):
        # Granted: claims in "vol", a volume by name.
        self.restricted.list_namespaced_persistent_volume_claim("vol")
        with self.assertRaises(ApiException) as cm:
            self.restricted.read_persistent_volume("nope")
        self.assertEqual(cm.exception.status, 404)  # allowed, and missing
        cases = [
            (lambda: self.restricted.list_persistent_volume(),
             'persistentvolumes is forbidden: User "dynamic-scheduler" cannot list resource "persistentvolumes" '
             'in API group "" at the cluster scope'),
            (lambda: self.restricted.read_namespaced_persistent_volume_claim("data", "other"),
             'persistentvolumeclaims "data" is forbidden: User "dynamic-scheduler" cannot get resource '
             '"persistentvolumeclaims" in API group "" in the namespace "other"'),
            (lambda: self.restricted.create_namespaced_persistent_volume_claim("vol", claim("mine")),
             'persistentvolumeclaims is forbidden: User "dynamic-scheduler" cannot create resource '
             '"persistentvolumeclaims" in API group "" in the namespace "vol"'),
            (lambda: self.restricted.delete_persistent_volume("x"),
             'persistentvolumes "x" is forbidden: User "dynamic-scheduler" cannot delete resource '
             '"persistentvolumes" in API group "" at the cluster scope'),
        ]
        for call, message in cases:
            with self.assertRaises(ApiException) as cm:
                call()
            self.assertEqual(cm.exception.status, 403)
            st = json.loads(cm.exception.body)
            self.assertEqual((st["kind"], st["reason"], st["code"], st["message"]),
                             ("Status", "Forbidden", 403, message))
        r = self.kubectl("get", "pv", kubeconfig=self.stack.kubeconfig, check=False)
        self.assertIn("Error from server (Forbidden)", r.stderr)


if __name__ == "__main__":
    unittest.main()
