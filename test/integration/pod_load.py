"""Node usage that follows the pods, for the rebalancer's closed-loop test and the demo: a thread
reads the simulator's pods, gives each running pod the CPU usage decided for its workload, and
pushes per pod `it_pod_cpu{namespace,pod}` (cores) and per node `it_node_cpu{node}` (percent of
the node's allocatable CPU) in one pushgateway group that each push replaces, so the series of a
pod that left go with it. Once a workload is given a memory working set (set_memory), it also
pushes per pod `it_pod_mem{namespace,pod}` (working-set bytes) and per node
`it_node_mem_available{node}`: the node's memory capacity minus its running pods' working sets, as
the kubelet computes memory.available, and keeps the lowest value each node reached.

Two ways to make the world move as it does in a cluster (issue 38): `count_terminating` lets a pod
that is terminating (evicted, its grace period running) keep using its CPU until it is gone, as a
real container does until it exits; `mean_seconds` pushes each node's value as the mean of its
last seconds of usage, as a recording rule over `rate(...[1m])` shows it."""
import collections
import json
import time
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


def memory_bytes(quantity):
    """A Kubernetes memory quantity ("16116152Ki", "8Gi", "128974848") in bytes."""
    q = str(quantity)
    for suffix, factor in (("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30), ("Ti", 1 << 40)):
        if q.endswith(suffix):
            return float(q[:-2]) * factor
    return float(q)


def running(pod):
    return (pod.get("status", {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")
            and bool(pod.get("spec", {}).get("nodeName")))


class LoadGenerator(threading.Thread):
    """Makes node usage follow the pods (see the module's docstring). Usage is decided per
    workload: set(namespace, app, cores) gives every pod labelled app=<app> in the namespace that
    many cores; every other pod uses nothing."""

    def __init__(self, stack, period=0.5):
        super().__init__(daemon=True)
        self.count_terminating = False  # terminating pods keep using their CPU until gone
        self.mean_seconds = 0  # > 0: it_node_cpu is the mean over this many seconds
        self.history = collections.defaultdict(collections.deque)  # node -> (time, percent)
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
        self.memory = {}  # (namespace, app) -> working-set bytes; empty: no memory series
        self.available = {}  # node -> memory.available bytes, as last pushed
        self.min_available = {}  # node -> the lowest memory.available pushed for it

    def set(self, ns, app, cores):
        with self.lock:
            self.usage[(ns, app)] = cores

    def lag(self, seconds):
        """From now on it_node_cpu is each node's mean over `seconds`, as if every node had been at
        its last pushed value for that long (a recording rule over a rate, on a node that has been
        hot a while)."""
        now = time.monotonic()
        with self.lock:
            self.history.clear()
            for n, v in self.last.items():
                self.history[n].extend((now - seconds + k * self.period, v)
                                       for k in range(int(seconds / self.period)))
            self.mean_seconds = seconds

    def set_memory(self, ns, app, working_set_bytes):
        with self.lock:
            self.memory[(ns, app)] = working_set_bytes

    def clear(self, ns):
        with self.lock:
            self.usage = {k: v for k, v in self.usage.items() if k[0] != ns}
            self.memory = {k: v for k, v in self.memory.items() if k[0] != ns}
            self.min_available = {}

    def working_set(self, pod):
        meta = pod["metadata"]
        with self.lock:
            return self.memory.get((meta["namespace"], meta.get("labels", {}).get("app")), 0.0)

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
        capacity = {n["metadata"]["name"]: memory_bytes(n["status"]["capacity"]["memory"]) for n in nodes
                    if n["metadata"]["name"] in alloc}
        used = {n: 0.0 for n in alloc}
        working = {n: 0.0 for n in alloc}
        with self.lock:
            with_memory = bool(self.memory)
        pod_lines, mem_lines = [], []
        for p in pods:
            self.created.setdefault((p["metadata"]["namespace"], p["metadata"]["name"]),
                                    p["metadata"].get("creationTimestamp"))
            if p.get("spec", {}).get("nodeName"):
                self.bound.setdefault((p["metadata"]["namespace"], p["metadata"]["name"]), p["spec"]["nodeName"])
            leaving = (self.count_terminating and p["metadata"].get("deletionTimestamp")
                       and p.get("spec", {}).get("nodeName")
                       and p.get("status", {}).get("phase") == "Running")
            if not running(p) and not leaving:
                continue
            c = self.cores(p)
            if p["spec"]["nodeName"] in used:
                used[p["spec"]["nodeName"]] += c
            pod_lines.append('it_pod_cpu{namespace="%s",pod="%s"} %r\n' % (
                p["metadata"]["namespace"], p["metadata"]["name"], c))
            if with_memory:
                ws = self.working_set(p)
                if p["spec"]["nodeName"] in working:
                    working[p["spec"]["nodeName"]] += ws
                mem_lines.append('it_pod_mem{namespace="%s",pod="%s"} %r\n' % (
                    p["metadata"]["namespace"], p["metadata"]["name"], ws))
        percent = {n: 100 * used[n] / alloc[n] for n in alloc}
        with self.lock:
            if self.mean_seconds > 0:
                # The mean of the node's last mean_seconds of samples (all it has, at first).
                now = time.monotonic()
                for n, v in percent.items():
                    h = self.history[n]
                    h.append((now, v))
                    while h and now - h[0][0] > self.mean_seconds:
                        h.popleft()
                    percent[n] = sum(x for _, x in h) / len(h)
        body = ""
        if pod_lines:
            body += "# TYPE it_pod_cpu gauge\n" + "".join(pod_lines)
        body += "# TYPE it_node_cpu gauge\n" + "".join(
            'it_node_cpu{node="%s"} %r\n' % (n, v) for n, v in sorted(percent.items()))
        available = {n: capacity[n] - working[n] for n in alloc}
        if with_memory:
            body += "# TYPE it_pod_mem gauge\n" + "".join(mem_lines)
            body += "# TYPE it_node_mem_available gauge\n" + "".join(
                'it_node_mem_available{node="%s"} %r\n' % (n, v) for n, v in sorted(available.items()))
        # PUT replaces the whole group: the series of pods that left disappear.
        code, text = http("PUT", self.stack.pgw + "/metrics/job/it-load", body.encode())
        if code not in (200, 202):
            raise OSError("pushgateway answered %d: %s" % (code, text))
        self.last = percent
        if with_memory:
            self.available = available
            for n, v in available.items():
                self.min_available[n] = min(v, self.min_available.get(n, v))
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
