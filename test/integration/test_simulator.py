"""Fidelity of the Kubernetes API simulator, checked with real clients: kubectl and the official
Python client (Debian's python3-kubernetes)."""
import json
import os
import subprocess
import threading
import time
import unittest

import kubernetes
from kubernetes.client.rest import ApiException

from harness import Stack, kubectl_version, wait_until


class SimulatorIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = Stack(nodes=6, control_plane=1)
        import tempfile
        cls.stack.dir = tempfile.mkdtemp(prefix="ds-sim-")
        cls.stack.start_sim()
        cfg = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=cls.stack.admin_kubeconfig, client_configuration=cfg)
        cls.api = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(cfg))

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def kubectl(self, *args, **kw):
        return self.stack.kubectl(*args, **kw)

    # --- kubectl ---
    def test_kubectl_get_table(self):
        out = self.kubectl("get", "nodes").stdout.splitlines()
        self.assertEqual(out[0].split(), ["NAME", "STATUS", "ROLES", "AGE", "VERSION"])
        self.assertEqual(len(out), 7)
        self.assertEqual(out[1].split()[:3], ["node-00001", "Ready", "control-plane"])
        self.assertEqual(out[2].split()[:3], ["node-00002", "Ready", "<none>"])

    def test_kubectl_label_selectors(self):
        self.kubectl("label", "node", "node-00003", "pool=a")
        self.kubectl("label", "node", "node-00004", "pool=b")
        names = lambda sel: self.kubectl("get", "nodes", "-l", sel, "-o", "name").stdout.split()
        self.assertEqual(names("pool=a"), ["node/node-00003"])
        self.assertEqual(names("pool in (a,b)"), ["node/node-00003", "node/node-00004"])
        self.assertEqual(names("pool,pool!=a"), ["node/node-00004"])
        self.assertEqual(len(names("!pool")), 4)
        self.assertEqual(names("!node-role.kubernetes.io/control-plane,pool notin (b)")[0], "node/node-00002")
        self.kubectl("label", "node", "node-00003", "node-00004", "pool-")
        self.assertEqual(self.kubectl("get", "nodes", "-l", "pool", "-o", "name").stdout.strip(), "")

    def test_kubectl_label_and_unlabel(self):
        self.kubectl("label", "node", "node-00002", "status=presure")
        self.assertEqual(self.stack.node_labels("node-00002")["status"], "presure")
        r = self.kubectl("label", "node", "node-00002", "status=other", check=False)
        self.assertNotEqual(r.returncode, 0, "kubectl refuses to overwrite without --overwrite")
        self.kubectl("label", "node", "node-00002", "status=other", "--overwrite")
        self.assertEqual(self.stack.node_labels("node-00002")["status"], "other")
        self.kubectl("label", "node", "node-00002", "status-")
        self.assertNotIn("status", self.stack.node_labels("node-00002"))

    def test_kubectl_watch_sees_changes(self):
        env = dict(os.environ, KUBECONFIG=self.stack.admin_kubeconfig)
        p = subprocess.Popen(["kubectl", "get", "nodes", "-w", "-L", "watched"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            lines = []
            reader = threading.Thread(target=lambda: [lines.append(l) for l in p.stdout])
            reader.start()
            wait_until(lambda: len(lines) >= 7, 10, what="initial rows")
            self.kubectl("label", "node", "node-00005", "watched=yes")
            wait_until(lambda: any("node-00005" in l and "yes" in l for l in lines[7:]), 10, what="watch row")
        finally:
            p.terminate()
            p.wait()
        self.kubectl("label", "node", "node-00005", "watched-")

    def test_kubectl_patch_types_and_errors(self):
        self.kubectl("patch", "node", "node-00006", "--type=merge", "-p", '{"metadata":{"labels":{"m":"1"}}}')
        self.kubectl("patch", "node", "node-00006", "--type=json",
                     "-p", '[{"op":"add","path":"/metadata/labels/example.com~1j","value":"2"}]')
        labels = self.stack.node_labels("node-00006")
        self.assertEqual((labels["m"], labels["example.com/j"]), ("1", "2"))
        r = self.kubectl("patch", "node", "node-00006", "--type=json",
                         "-p", '[{"op":"test","path":"/metadata/labels/m","value":"nope"}]', check=False)
        self.assertNotEqual(r.returncode, 0)
        # kubectl 1.20 prints the first part only, newer ones add the Status' message.
        self.assertIn("The request is invalid", r.stderr)
        # The Status itself, as kube-apiserver writes it (NewGenericServerResponse: no causes).
        with self.assertRaises(ApiException) as ctx:
            self.api.api_client.call_api(
                "/api/v1/nodes/node-00006", "PATCH", body=[{"op": "test", "path": "/metadata/labels/m", "value": "x"}],
                header_params={"Content-Type": "application/json-patch+json", "Accept": "application/json"},
                auth_settings=["BearerToken"], _preload_content=False)
        body = json.loads(ctx.exception.body)
        self.assertEqual((ctx.exception.status, body["reason"], body["message"], body["details"]),
                         (422, "Invalid", "the server rejected our request due to an error in our request", {}))
        # A patch is applied whole or not at all: the remove before the failing test is undone.
        r = self.kubectl("patch", "node", "node-00006", "--type=json",
                         "-p", '[{"op":"remove","path":"/metadata/labels/m"},'
                               '{"op":"test","path":"/metadata/labels/m","value":"1"}]', check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(self.stack.node_labels("node-00006")["m"], "1")
        # Strategic merge replaces the taints list whole.
        self.kubectl("taint", "node", "node-00006", "a=1:NoSchedule")
        self.kubectl("patch", "node", "node-00006", "--type=strategic",
                     "-p", '{"spec":{"taints":[{"key":"b","value":"2","effect":"NoSchedule"}]}}')
        taints = json.loads(self.kubectl("get", "node", "node-00006", "-o", "jsonpath={.spec.taints}").stdout)
        self.assertEqual([t["key"] for t in taints], ["b"])
        r = self.kubectl("label", "node", "node-00006", "bad key=x", check=False)
        self.assertIn("Invalid value", r.stderr)
        self.kubectl("label", "node", "node-00006", "m-", "example.com/j-")
        self.kubectl("patch", "node", "node-00006", "--type=merge", "-p", '{"spec":{"taints":null}}')

    def test_kubectl_taint_and_a_taint_edit_with_a_precondition(self):
        """What taint mode relies on: `kubectl taint` adds and removes one taint and keeps the rest;
        a merge patch of spec.taints that carries a stale metadata.resourceVersion is refused with
        409 and changes nothing; the API server's taint validation (422)."""
        node = "node-00004"
        self.kubectl("taint", "nodes", node, "gpu=yes:NoSchedule")
        self.kubectl("taint", "nodes", node, "example.com/hot=presure:PreferNoSchedule")
        taints = lambda: json.loads(self.kubectl("get", "node", node, "-o", "jsonpath={.spec.taints}").stdout or "[]")
        # kubectl puts the taints it adds first and keeps the others after them.
        self.assertEqual([(t["key"], t["effect"]) for t in taints()],
                         [("example.com/hot", "PreferNoSchedule"), ("gpu", "NoSchedule")])
        r = self.kubectl("taint", "nodes", node, "gpu=other:NoSchedule", check=False)
        self.assertNotEqual(r.returncode, 0, "kubectl refuses to overwrite without --overwrite")
        self.kubectl("taint", "nodes", node, "example.com/hot:PreferNoSchedule-")
        self.assertEqual([t["key"] for t in taints()], ["gpu"])
        n = self.api.read_node(node)
        rv = n.metadata.resource_version
        mine = [{"key": "gpu", "value": "yes", "effect": "NoSchedule"},
                {"key": "example.com/hot", "value": "presure", "effect": "PreferNoSchedule"}]
        self.kubectl("taint", "nodes", node, "drain=1:NoSchedule")  # someone else, after our read
        with self.assertRaises(ApiException) as ctx:
            self.api.patch_node(node, {"metadata": {"resourceVersion": rv}, "spec": {"taints": mine}})
        self.assertEqual(ctx.exception.status, 409)
        self.assertEqual(json.loads(ctx.exception.body)["reason"], "Conflict")
        self.assertEqual([t["key"] for t in taints()], ["drain", "gpu"], "nothing changed")
        fresh = self.api.read_node(node).metadata.resource_version
        self.api.patch_node(node, {"metadata": {"resourceVersion": fresh},
                                   "spec": {"taints": mine[:1] + [{"key": "drain", "value": "1", "effect": "NoSchedule"}]
                                            + mine[1:]}})
        self.assertEqual([t["key"] for t in taints()], ["gpu", "drain", "example.com/hot"])
        for bad, want in [([{"key": "a", "effect": "Sometimes"}], "Unsupported value"),
                          ([{"key": "a", "effect": "NoSchedule"}, {"key": "a", "value": "2", "effect": "NoSchedule"}],
                           "unique by key and effect"),
                          ([{"key": "bad key", "effect": "NoSchedule"}], "spec.taints[0].key")]:
            with self.assertRaises(ApiException) as ctx:
                self.api.patch_node(node, {"spec": {"taints": bad}})
            self.assertEqual(ctx.exception.status, 422, bad)
            self.assertIn(want, json.loads(ctx.exception.body)["message"])
        self.kubectl("patch", "node", node, "--type=merge", "-p", '{"spec":{"taints":null}}')

    def test_kubectl_auth(self):
        token = os.path.join(self.stack.sim_dir, "kubeconfig-token")
        self.assertEqual(self.kubectl("get", "nodes", "-o", "name", kubeconfig=token).stdout.count("node/"), 6)
        ro = os.path.join(self.stack.sim_dir, "kubeconfig-readonly")
        r = self.kubectl("label", "node", "node-00002", "x=y", kubeconfig=ro, check=False)
        self.assertIn('User "viewer" cannot patch resource "nodes"', r.stderr)
        # A wrong token: 401 with a Status object (kubectl prompts for a password when a
        # kubeconfig has no credentials at all, so that case is checked with raw HTTPS).
        r = self.kubectl("get", "nodes", "--token=wrong", kubeconfig=token, check=False)
        self.assertIn("Unauthorized", r.stderr)
        import ssl
        import urllib.error
        import urllib.request
        ctx = ssl.create_default_context(cafile=os.path.join(self.stack.sim_dir, "ca.crt"))
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(self.stack.sim_url + "/api/v1/nodes", context=ctx)
        self.assertEqual(e.exception.code, 401)
        self.assertEqual(json.loads(e.exception.read())["reason"], "Unauthorized")

    # --- the official Python client ---
    def test_python_paged_list(self):
        first = self.api.list_node(limit=4)
        self.assertEqual(len(first.items), 4)
        self.assertTrue(first.metadata._continue)
        self.assertEqual(first.metadata.remaining_item_count, 2)
        rest = self.api.list_node(limit=4, _continue=first.metadata._continue)
        self.assertEqual(len(rest.items), 2)
        self.assertFalse(rest.metadata._continue)
        self.assertEqual(rest.metadata.resource_version, first.metadata.resource_version)
        names = [n.metadata.name for n in first.items + rest.items]
        self.assertEqual(names, sorted(set(names)))

    def test_python_watch_bookmarks_and_events(self):
        rv = self.api.list_node().metadata.resource_version
        w = kubernetes.watch.Watch()
        seen = []

        def run():
            for ev in w.stream(self.api.list_node, resource_version=rv, allow_watch_bookmarks=True,
                               timeout_seconds=10):
                seen.append((ev["type"], ev["raw_object"]["metadata"].get("name"),
                             ev["raw_object"]["metadata"]["resourceVersion"]))
                if any(t == "MODIFIED" for t, _, _ in seen) and any(t == "BOOKMARK" for t, _, _ in seen):
                    w.stop()
        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.3)
        self.api.patch_node("node-00004", {"metadata": {"labels": {"py": "1"}}})
        t.join(15)
        self.assertFalse(t.is_alive())
        mods = [s for s in seen if s[0] == "MODIFIED"]
        self.assertEqual(mods[0][1], "node-00004")
        self.assertGreater(int(mods[0][2]), int(rv))
        self.assertTrue(any(s[0] == "BOOKMARK" for s in seen))
        self.api.patch_node("node-00004", {"metadata": {"labels": {"py": None}}})

    def test_python_watch_too_old_gets_410(self):
        old = self.api.list_node().metadata.resource_version
        self.api.patch_node("node-00003", {"metadata": {"labels": {"bump": "1"}}})
        self.stack.sim_admin("POST", "/sim/compact")
        with self.assertRaises(ApiException) as ctx:
            for _ in kubernetes.watch.Watch().stream(self.api.list_node, resource_version=old, timeout_seconds=5):
                pass
        self.assertEqual(ctx.exception.status, 410)
        self.api.patch_node("node-00003", {"metadata": {"labels": {"bump": None}}})

    def test_python_noop_patch_keeps_resource_version_and_conflict(self):
        n = self.api.read_node("node-00005")
        rv = n.metadata.resource_version
        same = self.api.patch_node("node-00005", {"metadata": {"labels": {"kubernetes.io/os": "linux"}}})
        self.assertEqual(same.metadata.resource_version, rv, "a patch that changes nothing is not stored")
        self.api.patch_node("node-00005", {"metadata": {"labels": {"c": "1"}}})
        n.metadata.labels["c"] = "2"
        with self.assertRaises(ApiException) as ctx:
            self.api.replace_node("node-00005", n)  # carries the stale resourceVersion
        self.assertEqual(ctx.exception.status, 409)
        self.assertIn("the object has been modified", json.loads(ctx.exception.body)["message"])
        with self.assertRaises(ApiException) as ctx:
            self.api.patch_node("node-00005", {"metadata": {"resourceVersion": rv, "labels": {"c": "3"}}})
        self.assertEqual(ctx.exception.status, 409)
        with self.assertRaises(ApiException) as ctx:
            self.api.read_node("node-99999")
        self.assertEqual(ctx.exception.status, 404)
        self.assertEqual(json.loads(ctx.exception.body)["reason"], "NotFound")
        self.api.patch_node("node-00005", {"metadata": {"labels": {"c": None}}})

    # --- Leases (leader election) ---
    def test_kubectl_leases(self):
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": "kubectl-lease", "namespace": "kube-system"},
                 "spec": {"holderIdentity": "someone", "leaseDurationSeconds": 15,
                          "renewTime": "2026-11-22T10:00:00.000000Z"}}
        path = os.path.join(self.stack.dir, "lease.json")
        with open(path, "w") as f:
            json.dump(lease, f)
        self.kubectl("create", "-f", path, "--validate=false")
        out = self.kubectl("get", "lease", "-n", "kube-system").stdout.splitlines()
        self.assertEqual(out[0].split(), ["NAME", "HOLDER", "AGE"])
        self.assertEqual(out[1].split()[:2], ["kubectl-lease", "someone"])
        self.assertIn("kubectl-lease", self.kubectl("get", "lease", "-A").stdout)
        self.assertEqual(self.kubectl("get", "lease", "-n", "kube-system", "kubectl-lease", "-o",
                                      "jsonpath={.spec.leaseDurationSeconds}").stdout, "15")
        r = self.kubectl("create", "-f", path, "--validate=false", check=False)
        self.assertIn('leases.coordination.k8s.io "kubectl-lease" already exists', r.stderr)
        self.kubectl("delete", "lease", "-n", "kube-system", "kubectl-lease")
        r = self.kubectl("get", "lease", "-n", "kube-system", "kubectl-lease", check=False)
        self.assertIn('leases.coordination.k8s.io "kubectl-lease" not found', r.stderr)

    def test_python_lease_create_replace_conflict_validation(self):
        import datetime
        coord = kubernetes.client.CoordinationV1Api(self.api.api_client)
        V1Lease, V1LeaseSpec, V1ObjectMeta = (kubernetes.client.V1Lease, kubernetes.client.V1LeaseSpec,
                                             kubernetes.client.V1ObjectMeta)
        now = datetime.datetime.now(datetime.timezone.utc)
        created = coord.create_namespaced_lease("default", V1Lease(
            metadata=V1ObjectMeta(name="py-lease"),
            spec=V1LeaseSpec(holder_identity="a", lease_duration_seconds=15, acquire_time=now, renew_time=now,
                             lease_transitions=0)))
        self.assertEqual(created.metadata.namespace, "default")
        rv = created.metadata.resource_version
        with self.assertRaises(ApiException) as e:
            coord.create_namespaced_lease("default", V1Lease(metadata=V1ObjectMeta(name="py-lease")))
        self.assertEqual((e.exception.status, json.loads(e.exception.body)["reason"]), (409, "AlreadyExists"))
        got = coord.read_namespaced_lease("py-lease", "default")
        self.assertEqual(got.spec.holder_identity, "a")
        self.assertEqual(got.spec.renew_time.replace(microsecond=0), now.replace(microsecond=0))
        got.spec.holder_identity = "b"
        got.spec.lease_transitions = 1
        replaced = coord.replace_namespaced_lease("py-lease", "default", got)
        self.assertGreater(int(replaced.metadata.resource_version), int(rv))
        self.assertEqual(replaced.metadata.creation_timestamp, created.metadata.creation_timestamp)
        # The same stale object again: somebody else (we) wrote meanwhile.
        with self.assertRaises(ApiException) as e:
            coord.replace_namespaced_lease("py-lease", "default", got)
        self.assertEqual(e.exception.status, 409)
        self.assertIn("the object has been modified", json.loads(e.exception.body)["message"])
        # Leases allow no unconditional update, and validate the duration.
        replaced.metadata.resource_version = None
        with self.assertRaises(ApiException) as e:
            coord.replace_namespaced_lease("py-lease", "default", replaced)
        self.assertEqual(e.exception.status, 422)
        fresh = coord.read_namespaced_lease("py-lease", "default")
        fresh.spec.lease_duration_seconds = 0
        with self.assertRaises(ApiException) as e:
            coord.replace_namespaced_lease("py-lease", "default", fresh)
        self.assertEqual(e.exception.status, 422)
        self.assertIn("spec.leaseDurationSeconds", json.loads(e.exception.body)["message"])
        names = [l.metadata.name for l in coord.list_namespaced_lease("default").items]
        self.assertEqual(names, ["py-lease"])
        with self.assertRaises(ApiException) as e:
            coord.read_namespaced_lease("py-lease", "other-namespace")
        self.assertEqual(e.exception.status, 404)
        coord.delete_namespaced_lease("py-lease", "default")
        self.assertEqual(coord.list_namespaced_lease("default").items, [])

    def test_several_watchers_at_once(self):
        rv = self.api.list_node().metadata.resource_version
        got = [0] * 5

        def run(i):
            w = kubernetes.watch.Watch()
            for ev in w.stream(self.api.list_node, resource_version=rv, timeout_seconds=10):
                if ev["type"] == "MODIFIED" and ev["object"].metadata.name == "node-00002":
                    got[i] += 1
                    w.stop()
        threads = [threading.Thread(target=run, args=(i,)) for i in range(5)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        self.api.patch_node("node-00002", {"metadata": {"labels": {"multi": "1"}}})
        for t in threads:
            t.join(15)
        self.assertEqual(got, [1] * 5)
        self.api.patch_node("node-00002", {"metadata": {"labels": {"multi": None}}})


class SimKeepAliveIT(unittest.TestCase):
    """-keep_alive and -request_log, which bench/rebalance_scale.py counts a client's requests
    with: several requests on one connection, also after it idled, each logged with its user."""

    def test_requests_on_one_connection_are_logged_with_their_user(self):
        import http.client
        import ssl
        import tempfile
        stack = Stack(nodes=3, control_plane=0)
        stack.dir = tempfile.mkdtemp(prefix="ds-sim-ka-")
        stack.start_sim(extra=["-keep_alive", "-request_log"])
        try:
            d = stack.sim_dir
            ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
            ctx.load_cert_chain(os.path.join(d, "client.crt"), os.path.join(d, "client.key"))
            c = http.client.HTTPSConnection("127.0.0.1", stack.sim_port, context=ctx, timeout=30)
            t0 = time.time()
            targets = ["/api/v1/nodes?limit=1", "/api/v1/nodes/node-00001",
                       "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-00002"]
            socks = []
            for i, target in enumerate(targets):
                if i == 2:
                    time.sleep(1.5)  # idle longer than CivetWeb's default keep_alive_timeout_ms
                c.request("GET", target)
                r = c.getresponse()
                r.read()
                self.assertEqual(r.status, 200, target)
                self.assertNotEqual((r.getheader("Connection") or "").lower(), "close")
                socks.append(c.sock)
            c.close()
            self.assertIs(socks[0], socks[1])
            self.assertIs(socks[1], socks[2], "the connection stays open between requests, and idle "
                          "for a while (kube-apiserver keeps it 90 s)")
            with open(os.path.join(d, "requests.log")) as f:
                lines = [ln.split(" ", 3) for ln in f.read().splitlines()]
            ours = [ln for ln in lines if float(ln[0]) >= t0 - 1]
            self.assertEqual([(u, m, t) for _, u, m, t in ours],
                             [("dynamic-scheduler", "GET", t) for t in targets])
        finally:
            stack.stop()


    def test_without_keep_alive_every_answer_says_it_closes(self):
        # Otherwise an HTTP/1.1 client sends its next request on a connection being closed.
        import http.client
        import ssl
        import tempfile
        stack = Stack(nodes=2, control_plane=0)
        stack.dir = tempfile.mkdtemp(prefix="ds-sim-close-")
        stack.start_sim()
        try:
            d = stack.sim_dir
            ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
            ctx.load_cert_chain(os.path.join(d, "client.crt"), os.path.join(d, "client.key"))
            c = http.client.HTTPSConnection("127.0.0.1", stack.sim_port, context=ctx, timeout=30)
            for target in ("/api/v1/nodes/node-00001", "/api/v1/nodes/nope"):  # 200, and a 404 Status
                c.request("GET", target)
                r = c.getresponse()
                r.read()
                self.assertEqual((r.getheader("Connection") or "").lower(), "close", target)
            c.close()
        finally:
            stack.stop()


class LargeSimulatorIT(unittest.TestCase):
    def test_ten_thousand_nodes(self):
        import tempfile
        stack = Stack(nodes=10000, control_plane=3)
        stack.dir = tempfile.mkdtemp(prefix="ds-sim10k-")
        t0 = time.monotonic()
        stack.start_sim()
        started = time.monotonic() - t0
        try:
            t1 = time.monotonic()
            r = stack.kubectl("get", "nodes", "--chunk-size=500", "-o", "name", timeout=120)
            listed = time.monotonic() - t1
            self.assertEqual(r.stdout.count("node/"), 10000)
            print("\n10,000 nodes: simulator ready in %.1f s, kubectl paged list in %.1f s" % (started, listed))
        finally:
            stack.stop()


EVENTS_MAX = 40  # the simulator's cap on stored events in SimEventsIT (-events_max)
EVENT_RBAC = {"users": {"dynamic-scheduler": [
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
]}}


class SimEventsIT(unittest.TestCase):
    """core/v1 Events: what the controller's rebalancer will post (one on the pod, one on the node
    for every eviction), created with the official Python client and read back with kubectl."""

    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.tmp = tempfile.mkdtemp(prefix="ds-simev-")
        rbac_file = os.path.join(cls.tmp, "rbac.json")
        with open(rbac_file, "w") as f:
            json.dump(EVENT_RBAC, f)
        cls.stack = Stack(nodes=3, control_plane=1,
                          sim_args=["-rbac", rbac_file, "-events_max", str(EVENTS_MAX)])
        cls.stack.dir = cls.tmp
        cls.stack.start_sim()

        def client(kubeconfig):
            cfg = kubernetes.client.Configuration()
            kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
            return kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(cfg))
        cls.api = client(cls.stack.admin_kubeconfig)
        cls.restricted = client(cls.stack.kubeconfig)  # CN=dynamic-scheduler: RBAC applies

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def kubectl(self, *args, **kw):
        return self.stack.kubectl(*args, **kw)

    @staticmethod
    def event(ns, kind, obj, name=None, generate_name=None, obj_ns=None, reason="RebalanceEviction",
              meta_ns=None, **extra):
        """The event the controller will post: legacy core/v1 form (no eventTime), about `obj`."""
        import datetime
        now = datetime.datetime.now(datetime.timezone.utc)
        c = kubernetes.client
        return c.CoreV1Event(
            metadata=c.V1ObjectMeta(name=name, generate_name=generate_name, namespace=meta_ns),
            involved_object=c.V1ObjectReference(api_version="v1", kind=kind, name=obj,
                                                namespace=obj_ns if obj_ns is not None else
                                                (ns if kind == "Pod" else None)),
            reason=reason, message="%s %s: evicted to relieve node-00002" % (kind, obj), type="Normal",
            source=c.V1EventSource(component="dynamic-scheduler"), first_timestamp=now,
            last_timestamp=now, count=1, reporting_component="dynamic-scheduler",
            reporting_instance="dynamic-scheduler-0", **extra)

    def status_of(self, exc):
        body = json.loads(exc.body)
        self.assertEqual(body["kind"], "Status")
        self.assertEqual(body["code"], exc.status)
        return body

    def test_create_with_name_read_back_with_kubectl(self):
        made = self.api.create_namespaced_event("ev-a", self.event("ev-a", "Pod", "web-1", name="web-1.ev1"))
        self.assertEqual((made.metadata.name, made.metadata.namespace), ("web-1.ev1", "ev-a"))
        self.assertTrue(made.metadata.uid and made.metadata.creation_timestamp)
        self.assertGreater(int(made.metadata.resource_version), 0)
        self.assertEqual((made.involved_object.kind, made.involved_object.name), ("Pod", "web-1"))
        items = json.loads(self.kubectl("get", "events", "-n", "ev-a", "-o", "json").stdout)["items"]
        self.assertEqual([e["metadata"]["name"] for e in items], ["web-1.ev1"])
        e = items[0]
        self.assertEqual((e["kind"], e["apiVersion"], e["reason"], e["type"], e["count"]),
                         ("Event", "v1", "RebalanceEviction", "Normal", 1))
        self.assertEqual(e["involvedObject"], {"apiVersion": "v1", "kind": "Pod", "name": "web-1",
                                               "namespace": "ev-a"})
        self.assertEqual(e["source"], {"component": "dynamic-scheduler"})
        self.assertRegex(e["firstTimestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertIsNone(e["eventTime"])
        # The table kubectl prints (server-side Table, the API server's columns).
        out = self.kubectl("get", "events", "-n", "ev-a").stdout.splitlines()
        self.assertEqual(out[0].split(), ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"])
        self.assertEqual(out[1].split()[1:4], ["Normal", "RebalanceEviction", "pod/web-1"])
        self.assertIn("evicted to relieve node-00002", out[1])
        wide = self.kubectl("get", "events", "-n", "ev-a", "-o", "wide").stdout
        self.assertIn("dynamic-scheduler, dynamic-scheduler-0", wide)
        # The same object by name.
        got = self.api.read_namespaced_event("web-1.ev1", "ev-a")
        self.assertEqual(got.metadata.uid, made.metadata.uid)

    def test_generate_name(self):
        a = self.api.create_namespaced_event("ev-b", self.event("ev-b", "Pod", "db-0", generate_name="db-0."))
        b = self.api.create_namespaced_event("ev-b", self.event("ev-b", "Pod", "db-0", generate_name="db-0."))
        for e in (a, b):
            self.assertRegex(e.metadata.name, r"^db-0\.[bcdfghjklmnpqrstvwxz2456789]{5}$")
            self.assertEqual(e.metadata.generate_name, "db-0.")
        self.assertNotEqual(a.metadata.name, b.metadata.name)
        names = self.kubectl("get", "events", "-n", "ev-b", "-o", "name").stdout.split()
        self.assertEqual(sorted(names), sorted("event/" + e.metadata.name for e in (a, b)))
        # Neither a name nor generateName: 422, as the API server's ObjectMeta validation says.
        with self.assertRaises(ApiException) as ctx:
            self.api.create_namespaced_event("ev-b", self.event("ev-b", "Pod", "db-0"))
        self.assertEqual(ctx.exception.status, 422)
        self.assertIn("metadata.name: Required value: name or generateName is required",
                      self.status_of(ctx.exception)["message"])

    def test_node_events_in_default_and_field_selector(self):
        node_ev = self.api.create_namespaced_event(
            "default", self.event("default", "Node", "node-00002", generate_name="node-00002."))
        self.assertIsNone(node_ev.involved_object.namespace)
        pod_ev = self.api.create_namespaced_event(
            "default", self.event("default", "Pod", "api-7", generate_name="api-7."))
        sel = ["--field-selector", "involvedObject.kind=Node"]
        items = json.loads(self.kubectl("get", "events", "-n", "default", *sel, "-o", "json").stdout)["items"]
        names = {e["metadata"]["name"] for e in items}
        self.assertIn(node_ev.metadata.name, names)
        self.assertNotIn(pod_ev.metadata.name, names)
        self.assertEqual({e["involvedObject"]["kind"] for e in items}, {"Node"})
        # Several requirements, and across namespaces with the table kubectl prints.
        both = json.loads(self.kubectl(
            "get", "events", "-A", "--field-selector",
            "involvedObject.kind=Node,involvedObject.name=node-00002,type=Normal,reason=RebalanceEviction",
            "-o", "json").stdout)["items"]
        self.assertIn(node_ev.metadata.name, {e["metadata"]["name"] for e in both})
        table = self.kubectl("get", "events", "-A", *sel).stdout.splitlines()
        self.assertEqual(table[0].split()[:3], ["NAMESPACE", "LAST", "SEEN"])
        self.assertTrue(any(l.split()[0] == "default" and "node/node-00002" in l for l in table[1:]), table)
        self.assertFalse(any("pod/" in l for l in table[1:]), table)
        # The Python client's field selector, as the controller could use it.
        listed = self.api.list_event_for_all_namespaces(field_selector="involvedObject.name=api-7")
        self.assertEqual([e.metadata.name for e in listed.items], [pod_ev.metadata.name])
        self.assertTrue(listed.metadata.resource_version)
        # Fields events cannot be selected by: 400, in the API server's words.
        r = self.kubectl("get", "events", "-A", "--field-selector", "spec.nodeName=x", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("field label not supported: spec.nodeName", r.stderr)
        # A node's event outside "default": 422 (legacyValidateEvent).
        with self.assertRaises(ApiException) as ctx:
            self.api.create_namespaced_event("ev-c", self.event("ev-c", "Node", "node-00002", name="n2.x"))
        self.assertEqual(ctx.exception.status, 422)
        self.assertIn('involvedObject.namespace: Invalid value: "": does not match event.namespace',
                      self.status_of(ctx.exception)["message"])

    def test_duplicate_name_409(self):
        self.api.create_namespaced_event("ev-d", self.event("ev-d", "Pod", "x", name="x.dup"))
        with self.assertRaises(ApiException) as ctx:
            self.api.create_namespaced_event("ev-d", self.event("ev-d", "Pod", "x", name="x.dup"))
        self.assertEqual(ctx.exception.status, 409)
        st = self.status_of(ctx.exception)
        self.assertEqual((st["reason"], st["message"]), ("AlreadyExists", 'events "x.dup" already exists'))
        self.assertEqual(st["details"], {"name": "x.dup", "kind": "events"})
        # The same name in another namespace is another event.
        self.api.create_namespaced_event("ev-d2", self.event("ev-d2", "Pod", "x", name="x.dup"))

    def test_namespace_mismatch_400_and_422(self):
        with self.assertRaises(ApiException) as ctx:
            self.api.create_namespaced_event(
                "ev-e", self.event("ev-e", "Pod", "p", name="p.ns", meta_ns="elsewhere"))
        self.assertEqual(ctx.exception.status, 400)
        st = self.status_of(ctx.exception)
        self.assertEqual((st["reason"], st["message"]),
                         ("BadRequest", "the namespace of the provided object does not match the "
                                        "namespace sent on the request"))
        # The event's namespace must be its object's (pkg/apis/core/validation/events.go).
        with self.assertRaises(ApiException) as ctx:
            self.api.create_namespaced_event(
                "ev-e", self.event("ev-e", "Pod", "p", name="p.io", obj_ns="elsewhere"))
        self.assertEqual(ctx.exception.status, 422)
        st = self.status_of(ctx.exception)
        self.assertEqual(st["message"], 'Event "p.io" is invalid: involvedObject.namespace: Invalid value: '
                                        '"elsewhere": does not match event.namespace')
        self.assertEqual(st["details"]["causes"], [{
            "reason": "FieldValueInvalid", "field": "involvedObject.namespace",
            "message": 'Invalid value: "elsewhere": does not match event.namespace'}])
        self.assertEqual(self.api.list_namespaced_event("ev-e").items, [], "nothing was stored")

    def test_missing_name_404(self):
        with self.assertRaises(ApiException) as ctx:
            self.api.read_namespaced_event("no-such-event", "ev-f")
        self.assertEqual(ctx.exception.status, 404)
        st = self.status_of(ctx.exception)
        self.assertEqual((st["reason"], st["message"]), ("NotFound", 'events "no-such-event" not found'))
        r = self.kubectl("get", "event", "no-such-event", "-n", "ev-f", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('events "no-such-event" not found', r.stderr)

    def test_rbac_and_read_only_user(self):
        made = self.restricted.create_namespaced_event("ev-g", self.event("ev-g", "Pod", "q", name="q.rbac"))
        self.assertEqual(made.metadata.name, "q.rbac")
        with self.assertRaises(ApiException) as ctx:
            self.restricted.list_namespaced_event("ev-g")
        self.assertEqual(ctx.exception.status, 403)
        self.assertEqual(self.status_of(ctx.exception)["message"],
                         'events is forbidden: User "dynamic-scheduler" cannot list resource "events" '
                         'in API group "" in the namespace "ev-g"')
        with self.assertRaises(ApiException) as ctx:
            self.restricted.read_namespaced_event("q.rbac", "ev-g")
        self.assertEqual(ctx.exception.status, 403)
        ro = os.path.join(self.stack.sim_dir, "kubeconfig-readonly")
        self.assertIn("event/q.rbac", self.kubectl("get", "events", "-n", "ev-g", "-o", "name", kubeconfig=ro).stdout)
        r = self.kubectl("delete", "event", "q.rbac", "-n", "ev-g", kubeconfig=ro, check=False)
        self.assertIn('User "viewer" cannot delete resource "events"', r.stderr)

    def test_watch_sees_new_events(self):
        rv = self.api.list_namespaced_event("ev-h").metadata.resource_version
        w = kubernetes.watch.Watch()
        seen = []

        def run():
            for ev in w.stream(self.api.list_namespaced_event, "ev-h", resource_version=rv,
                               field_selector="involvedObject.kind=Pod", timeout_seconds=10):
                seen.append((ev["type"], ev["object"].metadata.name))
                if len(seen) == 2:
                    w.stop()
        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.3)
        self.api.create_namespaced_event("ev-h", self.event("ev-h", "ReplicaSet", "rs", name="rs.w",
                                                            obj_ns="ev-h"))
        self.api.create_namespaced_event("ev-h", self.event("ev-h", "Pod", "w", name="w.1"))
        self.api.delete_namespaced_event("w.1", "ev-h")
        t.join(15)
        self.assertFalse(t.is_alive())
        self.assertEqual(seen, [("ADDED", "w.1"), ("DELETED", "w.1")])

    def test_store_keeps_the_newest(self):
        self.assertEqual(self.stack.sim_admin("GET", "/sim/events")["max"], EVENTS_MAX)
        self.stack.sim_admin("DELETE", "/sim/events")
        self.assertEqual(self.stack.sim_admin("GET", "/sim/events")["count"], 0)
        for i in range(EVENTS_MAX + 5):
            self.api.create_namespaced_event("ev-i", self.event("ev-i", "Pod", "p", name="p.%03d" % i))
        stats = self.stack.sim_admin("GET", "/sim/events")
        self.assertEqual(stats["count"], EVENTS_MAX)
        self.assertGreaterEqual(stats["dropped"], 5)
        names = [e.metadata.name for e in self.api.list_namespaced_event("ev-i").items]
        self.assertEqual(names, ["p.%03d" % i for i in range(5, EVENTS_MAX + 5)], "the oldest five went")



EVENTS_V1_RBAC = {"users": {"dynamic-scheduler": [
    {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
]}}


class SimEventsV1IT(unittest.TestCase):
    """events.k8s.io/v1 Events, as the controller posts them (client-go's events library form):
    created and series-patched with the official Python client, listed with EventsV1Api and
    kubectl, the same objects seen through core/v1, and the API server's strict validation."""

    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.tmp = tempfile.mkdtemp(prefix="ds-simev1-")
        rbac_file = os.path.join(cls.tmp, "rbac.json")
        with open(rbac_file, "w") as f:
            json.dump(EVENTS_V1_RBAC, f)
        cls.stack = Stack(nodes=3, control_plane=1, sim_args=["-rbac", rbac_file])
        cls.stack.dir = cls.tmp
        cls.stack.start_sim()

        def client(kubeconfig):
            cfg = kubernetes.client.Configuration()
            kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
            return kubernetes.client.ApiClient(cfg)
        cls.admin = client(cls.stack.admin_kubeconfig)
        cls.api = kubernetes.client.EventsV1Api(cls.admin)
        cls.core = kubernetes.client.CoreV1Api(cls.admin)
        cls.restricted_client = client(cls.stack.kubeconfig)  # CN=dynamic-scheduler: RBAC applies
        cls.restricted = kubernetes.client.EventsV1Api(cls.restricted_client)

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    def kubectl(self, *args, **kw):
        return self.stack.kubectl(*args, **kw)

    @staticmethod
    def event(name, node="node-00001", reason="Marked", action="Mark", **extra):
        """What the controller posts when it marks a node."""
        import datetime
        c = kubernetes.client
        return c.EventsV1Event(
            metadata=c.V1ObjectMeta(name=name),
            event_time=datetime.datetime.now(datetime.timezone.utc), action=action, reason=reason,
            regarding=c.V1ObjectReference(api_version="v1", kind="Node", name=node),
            note="Marked status=presure: rule cpu value 95 > 80", type="Normal",
            reporting_controller="dynamic-scheduler", reporting_instance="dynamic-scheduler-pod-a", **extra)

    def raw(self, method, path, body, client=None, content_type="application/json"):
        """A request with a hand-made body (the typed client would refuse an invalid one): (status, body)."""
        try:
            r = (client or self.admin).call_api(
                path, method, body=body, header_params={"Content-Type": content_type, "Accept": "application/json"},
                auth_settings=["BearerToken"], _preload_content=False)
            return r[0].status, json.loads(r[0].data)
        except ApiException as e:
            return e.status, json.loads(e.body)

    def test_create_and_read_through_both_apis(self):
        made = self.restricted.create_namespaced_event("default", self.event("node-00001.a1"))
        self.assertEqual((made.metadata.name, made.metadata.namespace), ("node-00001.a1", "default"))
        self.assertTrue(made.metadata.uid and int(made.metadata.resource_version) > 0)
        self.assertEqual((made.action, made.reporting_controller), ("Mark", "dynamic-scheduler"))
        self.assertIsNone(made.series)
        listed = [e for e in self.api.list_event_for_all_namespaces().items if e.metadata.name == "node-00001.a1"]
        self.assertEqual(len(listed), 1)
        self.assertEqual((listed[0].regarding.kind, listed[0].regarding.name, listed[0].regarding.namespace),
                         ("Node", "node-00001", None))
        self.assertEqual(listed[0].note, "Marked status=presure: rule cpu value 95 > 80")
        # The wire form, as Go writes events/v1.Event: the deprecated fields present but empty.
        out = json.loads(self.kubectl("get", "events.v1.events.k8s.io", "-A", "-o", "json").stdout)
        e = [i for i in out["items"] if i["metadata"]["name"] == "node-00001.a1"][0]
        self.assertEqual((e["kind"], e["apiVersion"]), ("Event", "events.k8s.io/v1"))
        self.assertRegex(e["eventTime"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
        self.assertEqual((e["deprecatedSource"], e["deprecatedFirstTimestamp"], e["deprecatedLastTimestamp"]),
                         ({}, None, None))
        self.assertNotIn("deprecatedCount", e)
        self.assertNotIn("involvedObject", e)
        # The same object through core/v1: converted field by field.
        core = json.loads(self.kubectl("get", "event", "-n", "default", "node-00001.a1", "-o", "json").stdout)
        self.assertEqual((core["apiVersion"], core["involvedObject"]["name"], core["message"],
                          core["reportingComponent"], core["action"]),
                         ("v1", "node-00001", e["note"], "dynamic-scheduler", "Mark"))
        self.assertEqual(core["metadata"]["resourceVersion"], e["metadata"]["resourceVersion"])
        table = self.kubectl("get", "events.v1.events.k8s.io", "-n", "default").stdout.splitlines()
        self.assertEqual(table[0].split(), ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"])
        row = [r for r in table if "node/node-00001" in r]
        self.assertTrue(row and row[0].split()[1:4] == ["Normal", "Marked", "node/node-00001"], table)
        # What every kubectl offers (a field selector on core/v1 events), and `kubectl events`
        # where it exists (kubectl 1.26 on; Debian 12's is 1.20).
        marked = self.kubectl("get", "events", "-n", "default", "--field-selector", "reason=Marked").stdout
        self.assertIn("node/node-00001", marked)
        if kubectl_version() >= (1, 26):
            self.assertIn("Marked", self.kubectl("events", "-n", "default").stdout)

    def test_strict_validation_with_the_api_servers_words(self):
        base = "/apis/events.k8s.io/v1/namespaces/default/events"
        ref = {"apiVersion": "v1", "kind": "Node", "name": "node-00001"}
        st, body = self.raw("POST", base, {"metadata": {"name": "bad.1"}, "reason": "Marked", "type": "Info",
                                           "regarding": ref, "deprecatedCount": 3})
        self.assertEqual((st, body["reason"]), (422, "Invalid"))
        self.assertEqual(body["message"], 'Event.events.k8s.io "bad.1" is invalid: [eventTime: Required value, '
                                          'type: Invalid value: "": has invalid value: Info, '
                                          'count: Invalid value: "": needs to be unset]')
        self.assertEqual(body["details"]["group"], "events.k8s.io")
        self.assertEqual([c["field"] for c in body["details"]["causes"]], ["eventTime", "type", "count"])
        now = "2026-11-23T12:00:00.123456Z"
        st, body = self.raw("POST", base, {"metadata": {"name": "bad.2"}, "eventTime": now, "reason": "Marked",
                                           "type": "Normal", "regarding": ref, "reportingController": "dynamic-scheduler",
                                           "note": "x" * 1025, "series": {"count": 1}})
        self.assertEqual(st, 422)
        self.assertEqual(body["message"],
                         'Event.events.k8s.io "bad.2" is invalid: [reportingInstance: Required value, '
                         'action: Required value, message: Invalid value: "": can have at most 1024 characters, '
                         'series.count: Invalid value: "": should be at least 2, '
                         'series.lastObservedTime: Required value]')
        st, body = self.raw("POST", base, {"metadata": {"name": "Bad_Name"}, "eventTime": now, "reason": "Marked",
                                           "action": "Mark", "type": "Normal", "regarding": ref,
                                           "reportingController": "dynamic-scheduler", "reportingInstance": "i"})
        self.assertEqual(st, 422)
        self.assertIn('metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain', body["message"])
        # A Node's event belongs in "default" (or kube-system), not in a workload namespace.
        st, body = self.raw("POST", "/apis/events.k8s.io/v1/namespaces/shop/events",
                            {"metadata": {"name": "n.1"}, "eventTime": now, "reason": "Marked", "action": "Mark",
                             "type": "Normal", "regarding": ref, "reportingController": "dynamic-scheduler",
                             "reportingInstance": "i"})
        self.assertEqual((st, body["message"]), (422, 'Event.events.k8s.io "n.1" is invalid: involvedObject.namespace: '
                                                      'Invalid value: "": does not match event.namespace'))
        with self.assertRaises(ApiException) as ctx:
            self.api.read_namespaced_event("no-such", "default")
        self.assertEqual(json.loads(ctx.exception.body)["message"], 'events.events.k8s.io "no-such" not found')
        self.restricted.create_namespaced_event("default", self.event("node-00001.dup"))
        with self.assertRaises(ApiException) as ctx:
            self.restricted.create_namespaced_event("default", self.event("node-00001.dup"))
        self.assertEqual((ctx.exception.status, json.loads(ctx.exception.body)["message"]),
                         (409, 'events.events.k8s.io "node-00001.dup" already exists'))

    def test_series_patch_is_watched_and_validated(self):
        made = self.restricted.create_namespaced_event("default", self.event("node-00002.s1", node="node-00002"))
        rv = made.metadata.resource_version
        w = kubernetes.watch.Watch()
        seen = []

        def run():
            for ev in w.stream(self.api.list_namespaced_event, "default", resource_version=rv, timeout_seconds=10):
                seen.append((ev["type"], ev["object"].metadata.name,
                             ev["object"].series.count if ev["object"].series else None))
                w.stop()
        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.3)
        path = "/apis/events.k8s.io/v1/namespaces/default/events/node-00002.s1"
        smp = "application/strategic-merge-patch+json"
        st, body = self.raw("PATCH", path, {"series": {"count": 2, "lastObservedTime": "2026-11-23T12:05:00.5Z"}},
                            client=self.restricted_client, content_type=smp)
        self.assertEqual(st, 200, body)
        self.assertEqual(body["series"], {"count": 2, "lastObservedTime": "2026-11-23T12:05:00.500000Z"})
        self.assertGreater(int(body["metadata"]["resourceVersion"]), int(rv))
        t.join(15)
        self.assertFalse(t.is_alive())
        self.assertEqual(seen, [("MODIFIED", "node-00002.s1", 2)])
        self.assertEqual(self.api.read_namespaced_event("node-00002.s1", "default").series.count, 2)
        # Only the series may change, and it must count at least two.
        st, body = self.raw("PATCH", path, {"series": {"count": 1, "lastObservedTime": "2026-11-23T12:06:00Z"},
                                            "note": "changed"}, content_type=smp)
        self.assertEqual((st, body["message"]),
                         (422, 'Event.events.k8s.io "node-00002.s1" is invalid: [series.count: Invalid value: "": '
                               'should be at least 2, message: Invalid value: "changed": field is immutable]'))
        st, body = self.raw("PATCH", path.replace("s1", "gone"), {"series": {"count": 3}}, content_type=smp)
        self.assertEqual((st, body["message"]), (404, 'events.events.k8s.io "node-00002.gone" not found'))
        st, body = self.raw("PATCH", path, [{"op": "add"}], content_type="application/json-patch+json")
        self.assertEqual(st, 415)

    def test_rbac_names_the_group(self):
        with self.assertRaises(ApiException) as ctx:
            self.restricted.list_namespaced_event("default")
        self.assertEqual((ctx.exception.status, json.loads(ctx.exception.body)["message"]),
                         (403, 'events.events.k8s.io is forbidden: User "dynamic-scheduler" cannot list resource '
                               '"events" in API group "events.k8s.io" in the namespace "default"'))
        st, body = self.raw("POST", "/api/v1/namespaces/default/events", {"metadata": {"name": "x"}},
                            client=self.restricted_client)
        self.assertEqual((st, body["message"]),
                         (403, 'events is forbidden: User "dynamic-scheduler" cannot create resource "events" '
                               'in API group "" in the namespace "default"'))

if __name__ == "__main__":
    unittest.main()
