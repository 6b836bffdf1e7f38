"""`kubectl dynamic-scheduler explain` end to end: the real binary installed as the kubectl plugin
kubectl-dynamic_scheduler (found by a real kubectl on PATH), reaching the real controller through the
simulator's service proxy (/api/v1/namespaces/NS/services/NAME:PORT/proxy/..., RBAC on services/proxy
as kube-apiserver checks it) with the user's own kubeconfig, in the rebalancer's closed loop
(test_rebalance.py's stack: real Prometheus and pushgateway, the load generator).

A pod a PodDisruptionBudget keeps says so; once the budget goes, a pod is evicted; after the
controller restarts, the plugin still names the eviction's rule, value and goal (the trail in the
ledger's Lease). A user without the Role deploy/base/rbac.yaml grants gets the API server's 403."""
import json
import os
import shutil
import subprocess
import tempfile

from harness import CONTROLLER, backend_service_manifest, host_address, kustomize, wait_until
from test_rebalance import HOT, REPLICAS, RebalanceStack, deploy_rbac, metric0

NS = "dynamic-scheduler"  # the controller's Service lives here, as deploy/ installs it


def explain_role_rules():
    """The Role users are bound to for the plugin (deploy/base/rbac.yaml), and `get pods` (the
    plugin reads the pod for its node), in the simulator's -rbac form."""
    roles = [d for d in kustomize(".") if d["kind"] == "Role" and d["metadata"]["name"] == "dynamic-scheduler-explain"]
    assert len(roles) == 1, roles
    return roles[0]["rules"] + [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]


class ExplainIT(RebalanceStack):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The plugin: the same binary under kubectl's plugin name, on PATH.
        cls.ip = host_address()
        if cls.ip is None:
            raise RuntimeError("no non-loopback IPv4 address: the service proxy cannot reach the controller")
        cls.bin = tempfile.mkdtemp(prefix="ds-plugin-")
        os.symlink(os.path.abspath(CONTROLLER), os.path.join(cls.bin, "kubectl-dynamic_scheduler"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.bin, ignore_errors=True)
        super().tearDownClass()

    @classmethod
    def rbac(cls):
        users = deploy_rbac()
        users["users"]["viewer"] = explain_role_rules()
        return users

    def plugin(self, *args, kubeconfig=None, check=True):
        env = dict(os.environ, KUBECONFIG=kubeconfig or os.path.join(self.stack.sim_dir, "kubeconfig-readonly"),
                   PATH=self.bin + os.pathsep + os.environ.get("PATH", ""))
        r = subprocess.run(["kubectl", "dynamic-scheduler"] + list(args), env=env, capture_output=True,
                           text=True, timeout=30)
        if check:
            self.assertEqual(r.returncode, 0, "kubectl dynamic-scheduler %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
        return r

    def expose(self, c):
        """The controller's Service as deploy/base/service.yaml makes it (port "http"), its one
        endpoint the controller's web port on this machine's address: a hostNetwork pod on a node
        with that address, which the API server's proxy requires (harness.backend_service_manifest).
        The node is cordoned: the scheduler model places no workload there."""
        port = int(c.url.rsplit(":", 1)[1])
        self.stack.kubectl("apply", "-f", "-", input=backend_service_manifest(NS, "dynamic-scheduler", self.ip, {"http": port},
                                                    pod="dynamic-scheduler-0", node="this-host",
                                                    service_ports={"http": 9000}))
        self.stack.kubectl("cordon", "this-host")
        wait_until(lambda: self.api.get("/api/v1/namespaces/%s/pods/dynamic-scheduler-0" % NS)
                   .get("status", {}).get("podIP") == self.ip, 20, what="the backend pod's address")

    def test_explain_a_kept_pod_then_an_evicted_one_across_a_restart(self):
        before = self.setup_hot(affinity=True)
        self.pdb("hot", minAvailable=REPLICAS, selector={"matchLabels": {"app": "hot"}})
        wait_until(lambda: self.pdb_status("hot").get("disruptionsAllowed") == 0 and
                   self.pdb_status("hot").get("currentHealthy") == REPLICAS, 10, what="PDB allows 0")
        limits = "{perCycle: 1, perHour: 50, perNodePerHour: 20, nodeCooldown: 2s, perWorkload: 5}"
        c = self.start(limits, web_host="")
        self.expose(c)
        self.wait_marked([HOT])
        wait_until(lambda: metric0(c, "dynamic_scheduler_evictions_total", result="blocked_by_pdb") >= 1, 20,
                   what="an eviction refused by the PodDisruptionBudget")
        refused = [w["name"].split("/", 1)[1] for w in self.evictions(429)][0]

        # The kept pod says why, and what would change it; JSON for scripts says the same.
        out = self.plugin("explain", "pod/" + refused, "-n", self.ns).stdout
        self.assertIn("blocked_by_pdb", out)
        self.assertIn("PodDisruptionBudget allows no disruption now", out)
        self.assertIn("to change it:", out)
        self.assertIn("Node %s (hot)" % HOT, out)
        doc = json.loads(self.plugin("explain", "pod/" + refused, "-n", self.ns, "-o", "json").stdout)
        self.assertEqual(doc["decision"]["verdict"], "waits")
        self.assertEqual(doc["decision"]["reason"], "blocked_by_pdb")
        node = json.loads(self.plugin("explain", "node/" + HOT, "-o", "json").stdout)
        self.assertEqual(node["state"], "hot")
        self.assertEqual(sorted(p["pod"] for p in node["pods"]), sorted(self.ns + "/" + p for p in before))
        self.assertIn("ok", self.plugin("status").stdout)

        # The budget goes: a pod is evicted. Then the controller restarts (a new process, nothing
        # in memory), and the plugin still names the eviction's rule, value and goal.
        self.api.call("DELETE", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets/hot" % self.ns)
        wait_until(lambda: self.evicted(), 30, what="an eviction")
        evicted = self.evicted()[0]["name"].split("/", 1)[1]
        c.stop()
        c2 = self.start(limits, name="controller-again", web_host="")
        self.expose(c2)
        c2.wait_ready()
        out = self.plugin("explain", "pod/" + evicted, "-n", self.ns).stdout
        self.assertIn("last eviction", out)
        self.assertIn("result evicted: rule cpu at 86.7", out)
        self.assertIn("goal 60 (percent)", out)

        # Someone without the Role: the API server refuses the service proxy (403), and the
        # plugin says so and fails.
        denied = self.plugin("explain", "node/" + HOT, kubeconfig=self.stack.kubeconfig, check=False)
        self.assertNotEqual(denied.returncode, 0)
        self.assertIn("403", denied.stderr)
