"""Integration test harness: real Prometheus and pushgateway (Debian packages) and the project's
Kubernetes API simulator on 127.0.0.1, started once per test module and stopped by PID.

Waits are conditions with deadlines, never fixed sleeps."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

BUILD_DIR = os.environ.get("DS_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
CONTROLLER = os.path.join(BUILD_DIR, "dynamic-scheduler")
SIM = os.path.join(BUILD_DIR, "kube-sim")

# The rule most tests need: one cpu rule, marked over 80 and cleared at 60. `{metric}` is the series
# the test pushes (str.format it, or replace it where the text holds other braces).
CPU_RULES = """
rules:
  - name: cpu
    query: {metric}
    operator: ">"
    threshold: 80
    clearThreshold: 60
"""


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOY = os.path.join(ROOT, "deploy")


def kubectl_version():
    """(major, minor) of the kubectl on the PATH: (1, 20) for Debian 12's kubernetes-client, newer
    on machines with kubectl from elsewhere. The suite passes with both."""
    r = subprocess.run(["kubectl", "version", "--client", "-o", "json"], capture_output=True, text=True, check=True)
    v = json.loads(r.stdout)["clientVersion"]
    return int(v["major"]), int("".join(c for c in v["minor"] if c.isdigit()))


# kubectl embeds kustomize v2.0.3 before 1.21 and v4.0.5 in 1.21; deploy/ uses `labels:` (kustomize
# 4.1) and directories in `resources:`, so kubectl 1.22 is the first that builds it.
KUSTOMIZE_KUBECTL = (1, 22)
_warned_rendered = []


def kustomize(kustomization):
    """The objects a kustomization of deploy/ builds (a path relative to deploy/: "." for the
    default install, "overlays/rebalance", "admission"), as parsed YAML documents.

    With kubectl >= 1.22 they come from `kubectl kustomize`. An older kubectl cannot build them:
    then they come from deploy/rendered/, which scripts/render-deploy.sh writes with a newer
    kubectl and test_deploy's RenderedManifestsTest keeps equal to the live build -- said loudly
    on stderr, so a run with an old kubectl shows what it tested."""
    import yaml
    path = os.path.normpath(os.path.join(DEPLOY, kustomization))
    if kubectl_version() >= KUSTOMIZE_KUBECTL:
        out = subprocess.run(["kubectl", "kustomize", path], capture_output=True, text=True, check=True).stdout
    else:
        name = {DEPLOY: "default"}.get(path, os.path.basename(path))
        rendered = os.path.join(DEPLOY, "rendered", name + ".yaml")
        if not _warned_rendered:
            _warned_rendered.append(True)
            sys.stderr.write("NOTE: kubectl %d.%d cannot build deploy/'s kustomizations (kustomize before 4.1): "
                             "testing deploy/rendered/ instead; their equality with the live build is "
                             "checked only with kubectl >= %d.%d\n" % (kubectl_version() + KUSTOMIZE_KUBECTL))
        with open(rendered) as f:
            out = f.read()
    return [d for d in yaml.safe_load_all(out) if d]


# Ports handed out by free_port, across every test process of a run. A port is free when it is
# chosen, but it is bound only later, by the process it is given to; meanwhile a test running
# side by side could be handed the same one, and its controller then talked to the other test's
# Prometheus ("metric ... not found"). A reservation file per port keeps the test processes from
# choosing the same one; reservations older than an hour are from an earlier run.
PORT_DIR = os.path.join(tempfile.gettempdir(), "ds-it-ports")


def free_port():
    os.makedirs(PORT_DIR, exist_ok=True)
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        path = os.path.join(PORT_DIR, str(port))
        try:
            if time.time() - os.path.getmtime(path) > 3600:
                os.unlink(path)
        except OSError:
            pass
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return port
        except FileExistsError:
            continue  # another test process holds it
    raise AssertionError("no free port found that no other test process reserved")


def wait_until(pred, timeout=20.0, interval=0.1, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = pred()
            if last:
                return last
        except (OSError, urllib.error.URLError, ValueError) as e:
            last = e
        time.sleep(interval)
    raise AssertionError("timed out after %.0fs waiting for %s (last: %r)" % (timeout, what, last))


def http(method, url, body=None, headers=None, timeout=10):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class Process:
    def __init__(self, name, args, log_dir, env=None):
        self.name = name
        self.args = args
        self.log_path = os.path.join(log_dir, name + ".log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     stdin=subprocess.DEVNULL)

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def output(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")


def backfill(openmetrics, data_dir, work_dir):
    """Writes OpenMetrics samples (timestamps in seconds, "# EOF" last) into a TSDB directory as
    blocks, before Prometheus opens it. Day-long blocks: the default 2 h makes 12 blocks a day."""
    path = os.path.join(work_dir, "history.om")
    with open(path, "w") as f:
        f.write(openmetrics)
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
                    path, data_dir], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   timeout=120)


class Stack:
    """Prometheus + pushgateway + simulator. Use start()/stop() from setUpClass/tearDownClass."""

    def __init__(self, nodes=8, control_plane=1, rule_files=(), sim_args=(), prom_history=None):
        """prom_history: OpenMetrics text (ending in "# EOF") written into Prometheus's TSDB with
        promtool before it starts, for tests that need days of history; retention is then 30 d."""
        self.prom_history = prom_history
        self.sim_args = list(sim_args)
        self.nodes = nodes
        self.control_plane = control_plane
        self.rule_files = [os.path.abspath(f) for f in rule_files]
        self.procs = []

    def start(self):
        # What started is stopped when a later part fails: a setUpClass that raises gets no
        # tearDownClass, and its Prometheus and pushgateway would outlive the test run.
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self):
        self.dir = tempfile.mkdtemp(prefix="ds-it-")
        self.pgw_port, self.prom_port = free_port(), free_port()
        self.pgw = "http://127.0.0.1:%d" % self.pgw_port
        self.prom = "http://127.0.0.1:%d" % self.prom_port
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            if self.rule_files:
                f.write("rule_files:\n" + "".join("  - '%s'\n" % r for r in self.rule_files))
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
                    "    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % self.pgw_port)
        self.procs.append(Process("pushgateway", [
            "prometheus-pushgateway", "--web.listen-address=127.0.0.1:%d" % self.pgw_port,
            "--persistence.file=", "--web.enable-admin-api"], self.dir))
        if self.prom_history is not None:
            backfill(self.prom_history, os.path.join(self.dir, "prom-data"), self.dir)
        self.procs.append(Process("prometheus", [
            "prometheus", "--config.file=" + os.path.join(self.dir, "prometheus.yml"),
            "--storage.tsdb.path=" + os.path.join(self.dir, "prom-data"),
            "--web.listen-address=127.0.0.1:%d" % self.prom_port, "--web.enable-admin-api",
            "--web.enable-lifecycle",
            "--storage.tsdb.retention.time=" + ("1h" if self.prom_history is None else "30d")], self.dir))
        self.start_sim()
        # /-/ready is not enough: the first scrape happens ~6 s after start.
        wait_until(lambda: "pushgateway" in self.query_raw('up{job="pushgateway"}==1'), 30,
                   what="Prometheus scraping the pushgateway")
        return self

    def start_sim(self, extra=()):
        self.sim_dir = os.path.join(self.dir, "sim")
        port_file = os.path.join(self.sim_dir, "port")
        if os.path.exists(port_file):
            os.remove(port_file)
        self.sim = Process("kube-sim", [SIM, "-dir", self.sim_dir, "-nodes", str(self.nodes),
                                        "-control_plane", str(self.control_plane), "-bookmark_seconds", "1",
                                        *self.sim_args, *extra], self.dir)
        self.procs.append(self.sim)
        wait_until(lambda: os.path.exists(port_file), 15, what="kube-sim port file")
        with open(port_file) as f:
            self.sim_port = int(f.read())
        self.sim_url = "https://127.0.0.1:%d" % self.sim_port
        self.kubeconfig = os.path.join(self.sim_dir, "kubeconfig")
        self.admin_kubeconfig = os.path.join(self.sim_dir, "kubeconfig-admin")

    def stop(self):
        for p in reversed(self.procs):
            p.stop()
        if os.environ.get("DS_KEEP_TMP") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)

    # --- Prometheus side ---
    def query_raw(self, expr):
        return http("GET", self.prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))[1]

    def query(self, expr):
        return json.loads(self.query_raw(expr))["data"]["result"]

    def push(self, metric, group, value, labels, job="it"):
        """Pushes one gauge sample into its own pushgateway group (job/instance=group)."""
        lbl = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
        body = "# TYPE %s gauge\n%s{%s} %s\n" % (metric, metric, lbl, value)
        code, text = http("POST", "%s/metrics/job/%s/instance/%s" % (self.pgw, job, group), body.encode())
        assert code == 200, (code, text)

    def wait_value(self, expr, value, timeout=15):
        """Waits until Prometheus returns `value` for expr (so a push is visible)."""
        def seen():
            res = self.query(expr)
            return res and float(res[0]["value"][1]) == float(value)
        wait_until(seen, timeout, what="%s == %s in Prometheus" % (expr, value))

    def wipe_pushgateway(self):
        http("PUT", self.pgw + "/api/v1/admin/wipe")

    # --- Kubernetes side ---
    def sim_admin(self, method, path, body=None):
        import ssl
        data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
        req = urllib.request.Request(self.sim_url + path, method=method, data=data)
        ctx = ssl.create_default_context(cafile=os.path.join(self.sim_dir, "ca.crt"))
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return json.loads(r.read())

    def fault(self, **spec):
        """Injects a fault into the simulator (see Fault in test/sim/sim_server.h)."""
        return self.sim_admin("POST", "/sim/faults", spec)

    def clear_faults(self):
        return self.sim_admin("DELETE", "/sim/faults")

    def restart_prometheus(self, down_seconds):
        """Kills Prometheus (SIGKILL), keeps it down, then starts it again on the same port and data."""
        args = self.kill_prometheus()
        time.sleep(down_seconds)
        return self.start_prometheus(args)

    def kill_prometheus(self):
        """Kills Prometheus (SIGKILL); returns what start_prometheus needs to bring it back."""
        prom = [p for p in self.procs if p.name == "prometheus" and p.alive()][0]
        prom.stop(signal.SIGKILL)
        return prom.args

    def start_prometheus(self, args):
        again = Process("prometheus", args, self.dir)
        self.procs.append(again)
        wait_until(lambda: "pushgateway" in self.query_raw('up{job="pushgateway"}==1'), 60,
                   what="Prometheus scraping again")
        return again

    def writes(self):
        return self.sim_admin("GET", "/sim/writes")

    def kubectl(self, *args, kubeconfig=None, check=True, timeout=30, input=None):
        env = dict(os.environ, KUBECONFIG=kubeconfig or self.admin_kubeconfig)
        for attempt in range(3):
            r = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=timeout,
                               input=input)
            # A connection that dropped before any answer (seen on a loaded 2-core machine) is
            # retried; every answer from the server, error or not, is returned as it is.
            if "Unable to connect to the server" not in r.stderr:
                break
            time.sleep(0.5)
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s failed: %s" % (" ".join(args), r.stderr))
        return r

    def reset_marks(self, *other_labels):
        """Takes our mark and its ownership record (and any `other_labels`) off every node, so
        that each test starts from clean nodes."""
        self.kubectl("label", "nodes", "--all", "status-", *(k + "-" for k in other_labels), check=False)
        self.kubectl("annotate", "nodes", "--all", "dynamic-scheduler.io/held-by-", check=False)

    def labelled(self, key="status", value="presure"):
        out = self.kubectl("get", "nodes", "-l", "%s=%s" % (key, value), "-o",
                           "jsonpath={.items[*].metadata.name}").stdout
        return sorted(out.split())

    def node_labels(self, name):
        return json.loads(self.kubectl("get", "node", name, "-o", "jsonpath={.metadata.labels}").stdout)

    def node_annotations(self, name):
        out = self.kubectl("get", "node", name, "-o", "jsonpath={.metadata.annotations}").stdout
        return json.loads(out) if out.strip() else {}


def touched(write):
    """What one PATCH in the simulator's write log changes: {(where, key): new value or None},
    where is "labels" or "annotations". Reads merge patches and JSON Patches (RFC 6902)."""
    body = json.loads(write["body"])
    out = {}
    if isinstance(body, list):
        for op in body:
            if op["op"] == "test":
                continue
            _, _, where, key = op["path"].split("/", 3)
            out[(where, key.replace("~1", "/").replace("~0", "~"))] = op.get("value")
    else:
        for where in ("labels", "annotations"):
            for key, value in body.get("metadata", {}).get(where, {}).items():
                out[(where, key)] = value
    return out


def removes_mark(write, key="status"):
    """True when the PATCH removes our label."""
    t = touched(write)
    return ("labels", key) in t and t[("labels", key)] is None


def host_address():
    """A non-loopback, non-link-local IPv4 address of this machine, or None.

    A backend reached through the API server's service proxy needs one: the API server refuses
    Endpoints addresses in 127.0.0.0/8 (ValidateEndpointIP) and proxies only to addresses of
    pods (the Service registry's isValidAddress), so a test's backend on this machine is a
    hostNetwork pod on a node whose InternalIP is this address (backend_service_manifest)."""
    import fcntl
    import struct
    for _, name in socket.if_nameindex():
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name[:15].encode()))  # SIOCGIFADDR
        except OSError:
            continue
        ip = socket.inet_ntoa(packed[20:24])
        if not ip.startswith(("127.", "169.254.", "0.")):
            return ip
    return None


def backend_service_manifest(namespace, service, ip, ports, pod=None, node="this-host", service_ports=None):
    """YAML for a Service whose one endpoint is a server of this test listening on `ip` (see
    host_address): a Node with that InternalIP, a hostNetwork Pod bound to it (the simulator's
    kubelet gives it the node's address, as a real one does), the Service and its Endpoints, whose
    address names the pod in targetRef. `ports`: {port name: port the server listens on};
    `service_ports`: {port name: Service port} (default: the same numbers). Apply it with
    `kubectl apply -f -`, then wait for the pod's status.podIP to be `ip`."""
    pod = pod or service + "-0"
    service_ports = service_ports or ports
    svc_ports = "".join("  - name: %s\n    port: %d\n    targetPort: %d\n" % (n, service_ports[n], p)
                        for n, p in ports.items())
    ep_ports = "".join("  - name: %s\n    port: %d\n" % (n, p) for n, p in ports.items())
    return ("apiVersion: v1\nkind: Node\nmetadata:\n  name: {node}\nstatus:\n  addresses:\n"
            "  - type: InternalIP\n    address: {ip}\n---\n"
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {pod}\n  namespace: {ns}\n"
            "spec:\n  nodeName: {node}\n  hostNetwork: true\n  containers:\n  - name: server\n"
            "    image: registry.k8s.io/pause:3.9\n---\n"
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {svc}\n  namespace: {ns}\nspec:\n"
            "  ports:\n{svc_ports}---\n"
            "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: {svc}\n  namespace: {ns}\n"
            "subsets:\n- addresses:\n  - ip: {ip}\n    targetRef:\n      kind: Pod\n"
            "      name: {pod}\n      namespace: {ns}\n  ports:\n{ep_ports}").format(
                node=node, ip=ip, pod=pod, ns=namespace, svc=service, svc_ports=svc_ports,
                ep_ports=ep_ports)



class StackTestCase(unittest.TestCase):
    """Test classes that share one Stack, started once for the class: STACK is its arguments."""
    STACK = {"nodes": 4, "control_plane": 1}

    @classmethod
    def setUpClass(cls):
        cls.stack = Stack(**cls.STACK).start()

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

class Controller:
    """The real dynamic-scheduler binary."""

    def __init__(self, stack, rule_yaml, args=(), kubeconfig=None, prom=None, name="controller", interval=1,
                 web_host="127.0.0.1"):
        """`web_host`: the address the web port listens on ("" every one; a service proxy's
        backend must be reached on a non-loopback address, host_address)."""
        self.stack = stack
        self.rule_file = os.path.join(stack.dir, name + "-rule.yaml")
        with open(self.rule_file, "w") as f:
            f.write(rule_yaml)
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        cmd = [CONTROLLER, "-prom", prom or stack.prom, "-kubeconfig", kubeconfig or stack.kubeconfig,
               "-r", self.rule_file, "-s", str(interval), "-webaddr", "%s:%d" % (web_host, self.port), *args]
        self.proc = Process(name, cmd, stack.dir)

    def get(self, path):
        return http("GET", self.url + path)

    def nodes(self):
        return json.loads(self.get("/nodes")[1])

    def holds(self, node, timeout=20):
        """The rules /nodes says hold a marked node. The mark reaches /nodes through the watch, the
        reasons when the cycle that wrote it publishes its report, a moment later: wait for both."""
        found = {}

        def listed():
            for n in self.nodes()["nodes"]:
                if n["name"] == node and n["rules"]:
                    found["rules"] = n["rules"]
                    return True
            return False
        wait_until(listed, timeout, what="/nodes giving the rules that hold %s" % node)
        return found["rules"]

    def metric(self, name):
        for line in self.get("/metrics")[1].splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError("metric %s not found" % name)

    def wait_ready(self, timeout=20):
        wait_until(lambda: self.get("/status")[0] == 200, timeout, what="controller /status 200")

    def wait_cycles(self, n, timeout=30):
        start = self.metric("dynamic_scheduler_cycles_total")
        wait_until(lambda: self.metric("dynamic_scheduler_cycles_total") >= start + n, timeout,
                   what="%d more cycles" % n)

    def stop(self):
        return self.proc.stop()
