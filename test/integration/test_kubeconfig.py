"""kubeconfig users with an `exec` credential plugin, and $KUBECONFIG lists merged as kubectl
merges them: the real dynamic-scheduler (and real kubectl) against the simulator and real
Prometheus. The plugin is a small script written here that prints an ExecCredential with a token
the simulator accepts (tokens are added and revoked through its /sim/tokens admin hook) and
counts its runs.

Also a cluster's tls-server-name and proxy-url (ServerNameAndProxyIT): a simulator whose
certificate names only kubernetes.default.svc, reached at 127.0.0.1, and an HTTP CONNECT proxy
written here that counts the tunnels it opens."""
import json
import os
import select
import shutil
import socket
import socketserver
import subprocess
import tempfile
import threading
import time
import unittest

from harness import CONTROLLER, CPU_RULES, SIM, Process, StackTestCase, free_port, kubectl_version, wait_until

RULES = CPU_RULES

PLUGIN = """#!/usr/bin/python3
import datetime, json, os, sys
state = os.environ["PLUGIN_STATE"]
token = open(os.path.join(state, "token")).read().strip()
ttl = open(os.path.join(state, "ttl")).read().strip()
status = {"token": token}
if token.startswith("cert:"):  # a client certificate instead: cert:<file prefix>
    prefix = token[len("cert:"):]
    status = {"clientCertificateData": open(prefix + ".crt").read(),
              "clientKeyData": open(prefix + ".key").read()}
if ttl != "none":
    exp = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=float(ttl))
    status["expirationTimestamp"] = exp.strftime("%Y-%m-%dT%H:%M:%SZ")
with open(os.path.join(state, "runs"), "a") as f:
    f.write(json.dumps({"token": token, "expires": status.get("expirationTimestamp"),
                        "info": os.environ.get("KUBERNETES_EXEC_INFO"), "tty": os.isatty(0)}) + "\\n")
if token == "fail":
    sys.stderr.write("error: the SSO session has expired\\nrun 'login' again\\n")
    sys.exit(1)
# The ExecCredential's apiVersion is the one the client asked for (the exec stanza's).
print(json.dumps({"apiVersion": os.environ["PLUGIN_API_VERSION"], "kind": "ExecCredential", "status": status}))
"""


class ExecCredentialIT(StackTestCase):
    # 7 managed nodes: the herd cap (half of them) allows the three marks the tests need.
    STACK = {"nodes": 8, "control_plane": 1}

    def setUp(self):
        self.stack.kubectl("label", "nodes", "--all", "status-", check=False)
        self.stack.kubectl("annotate", "nodes", "--all", "dynamic-scheduler.io/held-by-", check=False)
        self.stack.sim_admin("DELETE", "/sim/writes")
        self.metric = "kc_" + self._testMethodName
        self.procs = []
        # Two files, as $KUBECONFIG often has: the user (with the plugin next to it, named by a
        # relative path) and its context in one, the cluster and current-context in another.
        self.dir = os.path.join(self.stack.dir, self._testMethodName)
        self.state = os.path.join(self.dir, "state")
        os.makedirs(os.path.join(self.dir, "users", "bin"))
        os.makedirs(os.path.join(self.dir, "clusters"))
        os.makedirs(self.state)
        plugin = os.path.join(self.dir, "users", "bin", "get-token")
        with open(plugin, "w") as f:
            f.write(PLUGIN)
        os.chmod(plugin, 0o755)
        self.users_kc = os.path.join(self.dir, "users", "config")
        self.write_users("client.authentication.k8s.io/v1")
        self.clusters_kc = os.path.join(self.dir, "clusters", "config")
        with open(self.clusters_kc, "w") as f:
            f.write("apiVersion: v1\nkind: Config\n"
                    "clusters:\n- name: sim\n  cluster:\n    server: %s\n    certificate-authority: %s\n"
                    "current-context: sim\n" % (self.stack.sim_url, os.path.join(self.stack.sim_dir, "ca.crt")))
        self.kubeconfig_env = ":".join([os.path.join(self.dir, "missing"), self.users_kc, self.clusters_kc])

    def write_users(self, api_version):
        """The user's file, with an exec stanza of `api_version` (interactiveMode is v1's field)."""
        with open(self.users_kc, "w") as f:
            f.write("apiVersion: v1\nkind: Config\n"
                    "users:\n- name: sso\n  user:\n    exec:\n"
                    "      apiVersion: %s\n"
                    "      command: ./bin/get-token\n"
                    "      env:\n      - {name: PLUGIN_STATE, value: '%s'}\n"
                    "      - {name: PLUGIN_API_VERSION, value: '%s'}\n"
                    "      installHint: the test writes get-token\n"
                    "      provideClusterInfo: true\n"
                    "%s"
                    "contexts:\n- name: sim\n  context: {cluster: sim, user: sso}\n"
                    % (api_version, self.state, api_version,
                       "      interactiveMode: Never\n" if api_version.endswith("/v1") else ""))

    def tearDown(self):
        for p in self.procs:
            p.stop()

    # --- the plugin's state and the simulator's tokens ---
    def plugin_prints(self, token, ttl):
        """What the plugin answers from now on; `ttl` seconds until expirationTimestamp, or None."""
        if token != "fail" and not token.startswith("cert:"):
            self.stack.sim_admin("POST", "/sim/tokens", {"token": token, "user": "dynamic-scheduler"})
        for name, value in (("ttl", "none" if ttl is None else str(ttl)), ("token", token)):
            with open(os.path.join(self.state, name + ".tmp"), "w") as f:
                f.write(value)
            os.replace(os.path.join(self.state, name + ".tmp"), os.path.join(self.state, name))

    def runs(self):
        path = os.path.join(self.state, "runs")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]

    def start(self):
        port = free_port()
        rule_file = os.path.join(self.dir, "rule.yaml")
        with open(rule_file, "w") as f:
            f.write(RULES.format(metric=self.metric))
        # No -kubeconfig: $KUBECONFIG's files, merged.
        env = dict(os.environ, KUBECONFIG=self.kubeconfig_env)
        p = Process("controller-" + self._testMethodName,
                    [CONTROLLER, "-prom", self.stack.prom, "-r", rule_file, "-s", "1",
                     "-webaddr", "127.0.0.1:%d" % port], self.stack.dir, env=env)
        self.procs.append(p)
        p.url = "http://127.0.0.1:%d" % port
        return p

    def push(self, node, value):
        self.stack.push(self.metric, node, value, {"node": node})

    def wait_labelled(self, nodes, timeout=30):
        wait_until(lambda: self.stack.labelled() == sorted(nodes), timeout, what="labelled == %s" % nodes)

    def test_token_cached_until_expiry_and_refreshed_once_after_401(self):
        self.plugin_prints("exec-token-1", ttl=3)
        self.push("node-00002", 95)
        c = self.start()
        self.wait_labelled(["node-00002"])
        first = self.runs()
        self.assertGreaterEqual(len(first), 1)
        info = json.loads(first[0]["info"])
        self.assertEqual((info["apiVersion"], info["kind"], info["spec"]["interactive"]),
                         ("client.authentication.k8s.io/v1", "ExecCredential", False))
        self.assertEqual(info["spec"]["cluster"]["server"], self.stack.sim_url, "provideClusterInfo")
        self.assertFalse(first[0]["tty"])
        writes = [w for w in self.stack.writes()["writes"] if w["name"] == "node-00002"]
        self.assertEqual([w["user"] for w in writes], ["dynamic-scheduler"], "the plugin's token was used")

        # Expiry: from now on the plugin hands out a token without expiry. Once the last one
        # handed out has expired, the next write must run the plugin again.
        self.plugin_prints("exec-token-2", ttl=None)
        last_expiry = max(r["expires"] for r in self.runs() if r["expires"])
        wait_until(lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) > last_expiry, 10,
                   what="the cached token's expirationTimestamp to pass")
        self.push("node-00003", 95)
        self.wait_labelled(["node-00002", "node-00003"])
        self.assertIn("exec-token-2", [r["token"] for r in self.runs()], "rerun after expiry")

        # A 401: the simulator stops accepting the cached token. The next request fails once,
        # the plugin runs once, the request goes again with the new token, and the controller
        # carries on.
        before = len(self.runs())
        self.plugin_prints("exec-token-3", ttl=None)
        self.assertEqual(self.stack.sim_admin("DELETE", "/sim/tokens?token=exec-token-2"), {"revoked": 1})
        self.push("node-00004", 95)
        self.wait_labelled(["node-00002", "node-00003", "node-00004"])
        after = self.runs()
        self.assertEqual(len(after), before + 1, "one plugin run for the 401")
        self.assertEqual(after[-1]["token"], "exec-token-3")
        # No loop: more cycles (and the writes of a cooling node) need no further run.
        self.push("node-00004", 10)
        self.wait_labelled(["node-00002", "node-00003"])
        self.assertEqual(len(self.runs()), before + 1)
        self.assertTrue(c.alive())
        log = c.output()
        for secret in ("exec-token-1", "exec-token-2", "exec-token-3"):
            self.assertNotIn(secret, log)

    def test_client_certificate_from_the_plugin(self):
        # The simulator's certificate for CN=dynamic-scheduler, handed out by the plugin.
        self.plugin_prints("cert:" + os.path.join(self.stack.sim_dir, "client"), ttl=None)
        self.push("node-00006", 95)
        c = self.start()
        self.wait_labelled(["node-00006"])
        writes = [w for w in self.stack.writes()["writes"] if w["name"] == "node-00006"]
        self.assertEqual([w["user"] for w in writes], ["dynamic-scheduler"], "authenticated by the certificate")
        self.assertEqual(len(self.runs()), 1)
        self.assertTrue(c.alive())

    def test_failing_plugin_is_reported_and_the_controller_recovers(self):
        self.plugin_prints("fail", ttl=None)
        self.push("node-00005", 95)
        c = self.start()
        wait_until(lambda: "error: the SSO session has expired" in c.output(), 30,
                   what="the plugin's stderr in the log")
        log = c.output().replace('\\"', '"')  # the error is a quoted field value: quotes escaped
        self.assertIn('users[sso].user.exec (command "%s")' % os.path.join(self.dir, "users", "./bin/get-token"), log)
        self.assertIn(self.users_kc + ":", log, "the error names the kubeconfig file")
        self.assertNotIn("run 'login' again", log, "only stderr's first line")
        self.assertTrue(c.alive())
        self.assertEqual(self.stack.labelled(), [])
        self.plugin_prints("exec-token-ok", ttl=None)
        self.wait_labelled(["node-00005"], timeout=60)
        self.assertTrue(c.alive())

    def test_kubectl_reads_the_same_kubeconfigs(self):
        """Real kubectl with the same two files: our reading of the exec stanza, the merge and the
        relative command path match kubectl's, and the simulator serves kubectl with the token.
        The exec API is v1 from kubectl 1.22 on; before (Debian 12's kubectl 1.20) it is v1beta1,
        which the controller reads as well."""
        if kubectl_version() < (1, 22):
            self.write_users("client.authentication.k8s.io/v1beta1")
        self.plugin_prints("exec-token-kubectl", ttl=60)
        r = self.stack.kubectl("get", "nodes", "-o", "name", kubeconfig=self.kubeconfig_env)
        self.assertEqual(r.stdout.count("node/"), 8, r.stdout + r.stderr)
        # (kubectl may run it more than once: each of its clients keeps its own credential.)
        self.assertEqual({x["token"] for x in self.runs()}, {"exec-token-kubectl"})
        view = self.stack.kubectl("config", "view", "--minify", "-o", "json", kubeconfig=self.kubeconfig_env)
        cfg = json.loads(view.stdout)
        self.assertEqual(cfg["current-context"], "sim")
        self.assertEqual(cfg["users"][0]["user"]["exec"]["command"], "./bin/get-token")
        # Revoked: kubectl is refused too (the simulator answers 401 as an API server does).
        self.stack.sim_admin("DELETE", "/sim/tokens?token=exec-token-kubectl")
        r = self.stack.kubectl("get", "nodes", kubeconfig=self.kubeconfig_env, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Unauthorized", r.stderr + r.stdout)


# A CA, a server certificate that names only kubernetes.default.svc (not 127.0.0.1, where the
# simulator listens), and the client certificates the simulator expects to find next to them
# (it makes its own only when server.pem or client.crt is missing).
CERTS = r"""set -e
O='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'
openssl req -x509 $O -keyout ca.key -out ca.crt -days 30 -subj /CN=sni-test-ca 2>/dev/null
printf 'subjectAltName=DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' > server.ext
openssl req $O -keyout server.key -out server.csr -subj /CN=kube-apiserver 2>/dev/null
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 30 \
  -extfile server.ext 2>/dev/null
cat server.key server.crt > server.pem
printf 'extendedKeyUsage=clientAuth\n' > client.ext
for u in client:dynamic-scheduler admin:admin; do f=${u%%:*}; cn=${u#*:}
  openssl req $O -keyout $f.key -out $f.csr -subj "/O=sim/CN=$cn" 2>/dev/null
  openssl x509 -req -in $f.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $f.crt -days 30 \
    -extfile client.ext 2>/dev/null
done
"""


class ConnectProxy(socketserver.ThreadingTCPServer):
    """A forward proxy that only tunnels (HTTP CONNECT), as one in front of an API server would.
    Records each tunnel's target and the request's header names."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), ConnectHandler)
        self.lock = threading.Lock()
        self.tunnels = []  # (target, [header names, lower-case])

    def count(self):
        with self.lock:
            return len(self.tunnels)


class ConnectHandler(socketserver.StreamRequestHandler):
    def handle(self):
        request = self.rfile.readline().decode("latin-1").split()
        names = []
        while True:
            line = self.rfile.readline().decode("latin-1")
            if line in ("\r\n", "\n", ""):
                break
            names.append(line.split(":", 1)[0].strip().lower())
        if len(request) < 2 or request[0] != "CONNECT":
            self.wfile.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        host, _, port = request[1].rpartition(":")
        try:
            upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
        except OSError:
            self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        with self.server.lock:
            self.server.tunnels.append((request[1], names))
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        client = self.connection
        with upstream:
            while True:
                ready, _, _ = select.select([client, upstream], [], [], 60)
                if not ready:
                    return
                for src in ready:
                    data = src.recv(65536)
                    if not data:
                        return
                    (upstream if src is client else client).sendall(data)


class ServerNameAndProxyIT(unittest.TestCase):
    """clusters[].cluster.tls-server-name and proxy-url, end to end: the real binary's one-shot
    -cleanup -dry_run (it lists the nodes through the same client the controller uses) and real
    kubectl, against a simulator whose certificate does not name the address it is reached at."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ds-it-sni-")
        cls.sim_dir = os.path.join(cls.dir, "sim")
        os.makedirs(cls.sim_dir)
        subprocess.run(["sh", "-c", CERTS], cwd=cls.sim_dir, check=True)
        cls.sim = Process("kube-sim", [SIM, "-dir", cls.sim_dir, "-nodes", "3"], cls.dir)
        port_file = os.path.join(cls.sim_dir, "port")
        wait_until(lambda: os.path.exists(port_file) and os.path.getsize(port_file) > 0, 15,
                   what="kube-sim port file")
        with open(port_file) as f:
            cls.sim_port = int(f.read())
        cls.proxy = ConnectProxy()
        threading.Thread(target=cls.proxy.serve_forever, daemon=True).start()
        cls.proxy_url = "http://127.0.0.1:%d" % cls.proxy.server_address[1]
        cls.rule_file = os.path.join(cls.dir, "rule.yaml")
        with open(cls.rule_file, "w") as f:
            f.write(CPU_RULES.format(metric="unused"))

    @classmethod
    def tearDownClass(cls):
        cls.proxy.shutdown()
        cls.proxy.server_close()
        cls.sim.stop()
        if os.environ.get("DS_KEEP_TMP") != "1":
            shutil.rmtree(cls.dir, ignore_errors=True)

    def kubeconfig(self, name, cluster_extra=""):
        """A kubeconfig for the simulator at 127.0.0.1 (its CA, the token of dynamic-scheduler),
        with `cluster_extra` lines added to the cluster."""
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write("apiVersion: v1\nkind: Config\n"
                    "clusters:\n- name: sim\n  cluster:\n    server: https://127.0.0.1:%d\n"
                    "    certificate-authority: %s\n%s"
                    "users:\n- name: ds\n  user:\n    token: sim-token\n"
                    "contexts:\n- name: sim\n  context: {cluster: sim, user: ds}\ncurrent-context: sim\n"
                    % (self.sim_port, os.path.join(self.sim_dir, "ca.crt"), cluster_extra))
        return path

    def cleanup(self, kubeconfig):
        """The one-shot -cleanup -dry_run: lists every node and writes nothing. The environment
        asks to bypass proxies for 127.0.0.1: a proxy-url must still carry every request, as in
        client-go (which reads *_proxy only when proxy-url is not set)."""
        env = dict(os.environ, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
        for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
            env.pop(var, None)
        return subprocess.run([CONTROLLER, "-cleanup", "-dry_run", "-kubeconfig", kubeconfig, "-r", self.rule_file],
                              capture_output=True, text=True, timeout=60, env=env)

    def kubectl(self, kubeconfig):
        env = dict(os.environ, KUBECONFIG=kubeconfig, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
        return subprocess.run(["kubectl", "get", "nodes", "-o", "name", "--request-timeout=20s"],
                              capture_output=True, text=True, timeout=60, env=env)

    def test_tls_server_name_is_the_name_the_certificate_is_checked_against(self):
        # Without it the certificate (kubernetes.default.svc) does not match 127.0.0.1: refused.
        plain = self.kubeconfig("plain")
        r = self.cleanup(plain)
        out = r.stdout + r.stderr
        self.assertNotEqual(r.returncode, 0, out)
        self.assertIn("127.0.0.1", out)
        self.assertRegex(out, "(?i)certificate|subject name", "a TLS verification error")
        self.assertNotIn("3 nodes", out)
        # With it: connected to 127.0.0.1, verified as kubernetes.default.svc.
        named = self.kubeconfig("named", "    tls-server-name: kubernetes.default.svc\n")
        r = self.cleanup(named)
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, out)
        self.assertIn("tls-server-name kubernetes.default.svc", out, "the description says so")
        self.assertIn("cleanup: 3 nodes, 0 marks removed", out)
        # A name the certificate does not carry is refused: the name is really checked.
        wrong = self.kubeconfig("wrong", "    tls-server-name: other.example\n")
        r = self.cleanup(wrong)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("other.example", r.stdout + r.stderr)
        self.assertNotIn("3 nodes", r.stdout + r.stderr)
        # kubectl reads the same files the same way.
        if kubectl_version() >= (1, 19):
            self.assertNotEqual(self.kubectl(plain).returncode, 0)
            k = self.kubectl(named)
            self.assertEqual(k.stdout.count("node/"), 3, k.stdout + k.stderr)

    def test_proxy_url_carries_every_request(self):
        before = self.proxy.count()
        kc = self.kubeconfig("proxied", "    tls-server-name: kubernetes.default.svc\n"
                                        "    proxy-url: %s\n" % self.proxy_url)
        r = self.cleanup(kc)
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, out)
        self.assertIn("cleanup: 3 nodes, 0 marks removed", out)
        self.assertIn("proxy " + self.proxy_url, out)
        with self.proxy.lock:
            ours = self.proxy.tunnels[before:]
        self.assertGreaterEqual(len(ours), 1, "the requests went through the proxy")
        for target, names in ours:
            # The tunnel goes to the server's address (the proxy never needs the certificate's
            # name), and the bearer token stays inside the TLS tunnel.
            self.assertEqual(target, "127.0.0.1:%d" % self.sim_port)
            self.assertNotIn("authorization", names)
        # Only through it: with the proxy's port closed, nothing reaches the server.
        closed = free_port()
        dead = self.kubeconfig("dead-proxy", "    tls-server-name: kubernetes.default.svc\n"
                                             "    proxy-url: http://127.0.0.1:%d\n" % closed)
        r = self.cleanup(dead)
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("3 nodes", r.stdout + r.stderr)
        # kubectl with the same file: through the same proxy.
        if kubectl_version() >= (1, 19):
            n = self.proxy.count()
            k = self.kubectl(kc)
            self.assertEqual(k.stdout.count("node/"), 3, k.stdout + k.stderr)
            self.assertGreater(self.proxy.count(), n, "kubectl used the proxy too")

    def test_unsupported_proxy_scheme_is_refused_at_start(self):
        kc = self.kubeconfig("socks4", "    proxy-url: socks4://127.0.0.1:1080\n")
        r = self.cleanup(kc)
        out = r.stdout + r.stderr
        self.assertNotEqual(r.returncode, 0, out)
        self.assertIn(kc + ": clusters[sim].cluster.proxy-url", out)
        self.assertIn('scheme "socks4" is not supported (http, https or socks5)', out)


if __name__ == "__main__":
    unittest.main()
