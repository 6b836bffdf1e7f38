"""Node usage that follows the pods, for the rebalancer's closed-loop test and the demo: a thread
reads the simulator's pods, gives each running pod the CPU usage decided for its workload, and
pushes per pod `it_pod_cpu{namespace,pod}` (cores) and per node `it_node_cpu{node}` (percent of
the node's allocatable CPU) in one pushgateway group that each push replaces, so the series of a
pod that left go with it."""
import json
import os
import ssl
import threading
import urllib.error
import urllib.request

from harness import http


def cpu_cores(quantity):
    """A Kubernetes CPU quantity ("3920m", "4", "0.5") in cores."""
    q = str(quantity)
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


class KubeAdmin:
    """The simulator's API as the admin user (client certificate), without kubectl's start-up cost:
    the load generator calls it twice a second."""

    def __init__(self, stack):
        self.base = stack.sim_url
        self.ctx = ssl.create_default_context(cafile=os.path.join(stack.sim_dir, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(stack.sim_dir, "admin.crt"),
                                 os.path.join(stack.sim_dir, "admin.key"))

    def call(self, method, path, body=None):
        """(HTTP code, decoded JSON body)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=10) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def get(self, path):
        code, obj = self.call("GET", path)
        assert code == 200, (path, code, obj)
        return obj


def running(pod):
    return (pod.get("status", {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")
            and bool(pod.get("spec", {}).get("nodeName")))


class LoadGenerator(threading.Thread):
    """Makes node usage follow the pods (see the module's docstring). Usage is decided per
    workload: set(namespace, app, cores) gives every pod labelled app=<app> in the namespace that
    many cores; every other pod uses nothing."""

    def __init__(self, stack, period=0.5):
        super().__init__(daemon=True)
        self.stack = stack
        self.api = KubeAdmin(stack)
        self.period = period
        self.lock = threading.Lock()
        self.usage = {}  # (namespace, app) -> cores
        self.stopping = threading.Event()
        self.pushes = 0
        self.errors = []
        self.last = {}  # node -> percent, as last pushed
        self.bound = {}  # (namespace, pod) -> the node it was first seen bound to
        self.created = {}  # (namespace, pod) -> its creationTimestamp

    def set(self, ns, app, cores):
        with self.lock:
            self.usage[(ns, app)] = cores

    def clear(self, ns):
        with self.lock:
            self.usage = {k: v for k, v in self.usage.items() if k[0] != ns}

    def cores(self, pod):
        meta = pod["metadata"]
        with self.lock:
            return self.usage.get((meta["namespace"], meta.get("labels", {}).get("app")), 0.0)

    def step(self):
        nodes = self.api.get("/api/v1/nodes")["items"]
        pods = self.api.get("/api/v1/pods")["items"]
        # Workers only: the controller does not manage the control plane (and would log its series).
        alloc = {n["metadata"]["name"]: cpu_cores(n["status"]["allocatable"]["cpu"]) for n in nodes
                 if "node-role.kubernetes.io/control-plane" not in n["metadata"].get("labels", {})}
        used = {n: 0.0 for n in alloc}
        pod_lines = []
        for p in pods:
            self.created.setdefault((p["metadata"]["namespace"], p["metadata"]["name"]),
                                    p["metadata"].get("creationTimestamp"))
            if p.get("spec", {}).get("nodeName"):
                self.bound.setdefault((p["metadata"]["namespace"], p["metadata"]["name"]), p["spec"]["nodeName"])
            if not running(p):
                continue
            c = self.cores(p)
            if p["spec"]["nodeName"] in used:
                used[p["spec"]["nodeName"]] += c
            pod_lines.append('it_pod_cpu{namespace="%s",pod="%s"} %r\n' % (
                p["metadata"]["namespace"], p["metadata"]["name"], c))
        percent = {n: 100 * used[n] / alloc[n] for n in alloc}
        body = ""
        if pod_lines:
            body += "# TYPE it_pod_cpu gauge\n" + "".join(pod_lines)
        body += "# TYPE it_node_cpu gauge\n" + "".join(
            'it_node_cpu{node="%s"} %r\n' % (n, v) for n, v in sorted(percent.items()))
        # PUT replaces the whole group: the series of pods that left disappear.
        code, text = http("PUT", self.stack.pgw + "/metrics/job/it-load", body.encode())
        if code not in (200, 202):
            raise OSError("pushgateway answered %d: %s" % (code, text))
        self.last = percent
        self.pushes += 1

    def run(self):
        while not self.stopping.is_set():
            try:
                self.step()
            except Exception as e:  # keep pushing; the tests see the errors
                self.errors.append(repr(e))
            self.stopping.wait(self.period)

    def stop(self):
        self.stopping.set()
        self.join(10)
