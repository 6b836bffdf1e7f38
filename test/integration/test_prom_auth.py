"""Authentication to Prometheus, end to end: the real dynamic-scheduler against a real Prometheus
started with --web.config.file (TLS, client certificates, basic auth), and against a small
reverse proxy in front of the plain Prometheus for what Prometheus' web config cannot check
(bearer tokens, tenant headers). The proof in every case is a node's label changing in the
simulator, or /status naming why it cannot."""
import base64
import http.server
import os
import ssl
import subprocess
import tempfile
import threading
import unittest
import urllib.error
import urllib.parse
import urllib.request
import warnings

from harness import CONTROLLER, Controller, Process, Stack, free_port, wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt  # Debian's python3 has it; its METHOD_BLOWFISH makes the bcrypt hash Prometheus wants

RULES = """
rules:
  - name: cpu
    query: {metric}
    threshold: 80
"""


def bcrypt_hash(password):
    # 16 rounds = bcrypt cost 4, the cheapest Go's bcrypt accepts: tests need no work factor.
    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))


def make_pki(d):
    """A throwaway CA, a server certificate for 127.0.0.1 and a client certificate, in d."""
    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=ds-test-ca",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"),
                      ("client", "extendedKeyUsage=clientAuth\n")):
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext)
        run("req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=ds-test-" + name)
        run("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext")
    return {k: os.path.join(d, k) for k in ("ca.crt", "server.crt", "server.key", "client.crt", "client.key")}


class TokenProxy:
    """Forwards to the plain Prometheus what carries "Authorization: Bearer <token>" and answers
    401 otherwise, as an auth proxy in front of Thanos or Mimir does; records every request's
    headers."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.token = None
        self.seen = []  # (path, {header: value}) per request
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.forward(None)

            def do_POST(self):
                self.forward(self.rfile.read(int(self.headers.get("Content-Length", 0))))

            def forward(self, body):
                with proxy.lock:
                    proxy.seen.append((self.path, dict(self.headers.items())))
                    want = "Bearer " + proxy.token if proxy.token else None
                if self.headers.get("Authorization") != want:
                    return self.answer(401, b"Unauthorized\n", "text/plain")
                req = urllib.request.Request(proxy.upstream + self.path, data=body, method=self.command)
                if body is not None:
                    req.add_header("Content-Type", self.headers.get("Content-Type"))
                try:
                    with urllib.request.urlopen(req, timeout=10) as r:
                        self.answer(r.status, r.read(), r.headers.get("Content-Type"))
                except urllib.error.HTTPError as e:
                    self.answer(e.code, e.read(), e.headers.get("Content-Type"))

            def answer(self, code, data, ctype):
                self.send_response(code)
                self.send_header("Content-Type", ctype or "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def set_token(self, token):
        with self.lock:
            self.token = token

    def requests(self):
        with self.lock:
            return list(self.seen)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class PromAuthIT(unittest.TestCase):
    """One plain stack (Prometheus, pushgateway, simulator), a second Prometheus with TLS that
    scrapes the same pushgateway, and the token proxy. The TLS Prometheus re-reads its web config
    for every connection, so each test writes the one it needs."""

    @classmethod
    def setUpClass(cls):
        cls.stack = Stack(nodes=8, control_plane=1).start()
        cls.pki = make_pki(tempfile.mkdtemp(prefix="pki-", dir=cls.stack.dir))
        cls.web_config = os.path.join(cls.stack.dir, "web-config.yml")
        cls.write_web_config()
        port = free_port()
        cls.secure = "https://127.0.0.1:%d" % port
        config = os.path.join(cls.stack.dir, "secure-prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
                    "    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % cls.stack.pgw_port)
        cls.secure_args = [
            "prometheus", "--config.file=" + config, "--web.config.file=" + cls.web_config,
            "--storage.tsdb.path=" + os.path.join(cls.stack.dir, "secure-data"),
            "--web.listen-address=127.0.0.1:%d" % port, "--storage.tsdb.retention.time=1h"]
        cls.secure_proc = Process("secure-prometheus", cls.secure_args, cls.stack.dir)
        cls.stack.procs.append(cls.secure_proc)
        wait_until(lambda: "pushgateway" in cls.secure_query('up{job="pushgateway"}==1'), 60,
                   what="the TLS Prometheus scraping the pushgateway")
        cls.proxy = TokenProxy(cls.stack.prom)

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.stack.stop()

    @classmethod
    def write_web_config(cls, client_auth=False, users=None, client_pki=None):
        """client_pki: the PKI whose CA the server trusts for client certificates (default cls.pki)."""
        client_pki = client_pki or cls.pki
        text = "tls_server_config:\n  cert_file: %s\n  key_file: %s\n" % (cls.pki["server.crt"], cls.pki["server.key"])
        if client_auth:
            text += "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: %s\n" % client_pki["ca.crt"]
        if users:
            text += "basic_auth_users:\n" + "".join("  %s: '%s'\n" % (u, bcrypt_hash(p)) for u, p in users.items())
        cls.web = {"client_auth": client_auth, "users": dict(users or {}), "client_pki": client_pki}
        with open(cls.web_config + ".tmp", "w") as f:
            f.write(text)
        os.replace(cls.web_config + ".tmp", cls.web_config)

    @classmethod
    def secure_query(cls, expr, client_cert=None, user=None):
        """Queries the TLS Prometheus as the current web config allows; the body or an HTTP error."""
        ctx = ssl.create_default_context(cafile=cls.pki["ca.crt"])
        if cls.web["client_auth"] or client_cert:
            ctx.load_cert_chain(cls.web["client_pki"]["client.crt"], cls.web["client_pki"]["client.key"])
        req = urllib.request.Request(cls.secure + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        users = cls.web["users"]
        if users:
            u = user or next(iter(users))
            req.add_header("Authorization", "Basic " + base64.b64encode(("%s:%s" % (u, users[u])).encode()).decode())
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
                return r.read().decode()
        except urllib.error.HTTPError as e:
            return "HTTP %d" % e.code

    def use_web_config(self, client_auth=False, users=None, client_pki=None):
        """Writes the TLS Prometheus' web config and waits until it is in force: a request without
        what it demands is refused."""
        self.write_web_config(client_auth, users, client_pki)

        def refused_without():
            ctx = ssl.create_default_context(cafile=self.pki["ca.crt"])
            try:
                with urllib.request.urlopen(self.secure + "/api/v1/query?query=up", context=ctx, timeout=5):
                    return not client_auth and not users
            except urllib.error.HTTPError as e:
                return e.code == 401 and bool(users) and not client_auth
            except (ssl.SSLError, ConnectionError, urllib.error.URLError):
                return client_auth
        wait_until(refused_without, 20, what="the TLS Prometheus' web config %s in force" % self.web)

    def setUp(self):
        self.stack.reset_marks()
        self.stack.sim_admin("DELETE", "/sim/writes")
        self.controllers = []
        self.metric = "it_" + self._testMethodName
        self.files = tempfile.mkdtemp(prefix="files-", dir=self.stack.dir)

    def tearDown(self):
        for c in self.controllers:
            c.stop()

    def file(self, name, text):
        path = os.path.join(self.files, name)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)  # as a Secret volume swaps it: never seen half-written
        return path

    def hot(self, node, value=95):
        """Pushes a hot sample for node and waits until the TLS Prometheus has it."""
        self.stack.push(self.metric, node, value, {"node": node})
        wait_until(lambda: '"%s"' % node in self.secure_query('%s{node="%s"} == %s' % (self.metric, node, value)),
                   20, what="%s=%s in the TLS Prometheus" % (node, value))

    def start(self, *args, prom=None, rules=None, name="controller"):
        c = Controller(self.stack, rules or RULES.format(metric=self.metric), args=args,
                       prom=prom or self.secure, name=self._testMethodName + "-" + name)
        self.controllers.append(c)
        return c

    def wait_labelled(self, nodes, timeout=30):
        wait_until(lambda: self.stack.labelled() == sorted(nodes), timeout, what="labelled == %s" % nodes)

    def wait_status(self, c, text, timeout=20):
        """Waits until /status is 503 and says `text`; returns its body."""
        def says():
            code, body = c.get("/status")
            return body if code == 503 and text in body else None
        return wait_until(says, timeout, what="/status saying %r" % text)

    def assert_no_secret_logged(self, c, *secrets):
        log = c.proc.output()
        for s in secrets:
            self.assertNotIn(s, log)

    # --- TLS ---

    def test_tls_with_ca_file(self):
        self.use_web_config()
        self.hot("node-00002")
        self.start("-prom_ca_file", self.pki["ca.crt"])
        self.wait_labelled(["node-00002"])

    def test_tls_without_ca_fails_and_insecure_skip_verify_only_when_given(self):
        self.use_web_config()
        self.hot("node-00003")
        c = self.start()
        body = self.wait_status(c, "certificate")
        self.assertIn(self.secure, body, "/status names the Prometheus it could not verify")
        c.wait_cycles(2)
        self.assertEqual(self.stack.labelled(), [], "no answer, no label")
        c.stop()
        insecure = self.start("-prom_insecure_skip_verify", name="insecure")
        self.wait_labelled(["node-00003"])
        self.assertIn("NOT verified", insecure.proc.output(), "the start-up log warns")

    def test_client_certificate_required(self):
        self.use_web_config(client_auth=True)
        self.hot("node-00004")
        without = self.start("-prom_ca_file", self.pki["ca.crt"], name="without-cert")
        self.wait_status(without, self.secure)
        without.wait_cycles(2)
        self.assertEqual(self.stack.labelled(), [])
        without.stop()
        self.start("-prom_ca_file", self.pki["ca.crt"], "-prom_cert_file", self.pki["client.crt"],
                   "-prom_key_file", self.pki["client.key"], name="with-cert")
        self.wait_labelled(["node-00004"])

    def test_client_certificate_rotation(self):
        """cert-manager renews the client certificate (here: from another CA, which the server
        trusts from now on): the running controller presents the new one, without a restart."""
        other = make_pki(tempfile.mkdtemp(prefix="pki-other-", dir=self.stack.dir))
        self.use_web_config(client_auth=True)
        self.hot("node-00002")
        with open(self.pki["client.crt"]) as crt, open(self.pki["client.key"]) as key:
            cert_file, key_file = self.file("tls.crt", crt.read()), self.file("tls.key", key.read())
        c = self.start("-prom_ca_file", self.pki["ca.crt"], "-prom_cert_file", cert_file,
                       "-prom_key_file", key_file)
        self.wait_labelled(["node-00002"])
        # The server trusts only the other CA now. A restart drops the connections the controller
        # keeps open, so its old certificate is presented again, and refused.
        self.use_web_config(client_auth=True, client_pki=other)
        self.secure_proc.stop()
        type(self).secure_proc = Process("secure-prometheus", self.secure_args, self.stack.dir)
        self.stack.procs.append(self.secure_proc)
        self.wait_status(c, self.secure, timeout=30)
        with open(other["client.crt"]) as crt, open(other["client.key"]) as key:
            self.file("tls.key", key.read())
            self.file("tls.crt", crt.read())
        c.wait_ready()
        self.hot("node-00003")
        self.wait_labelled(["node-00002", "node-00003"])
        self.assertIn("Prometheus TLS files changed", c.proc.output())

    # --- Basic auth ---

    def test_basic_auth_right_password_wrong_password_and_rotation(self):
        self.use_web_config(users={"ds": "first-password"})
        self.hot("node-00005")
        wrong = self.start("-prom_ca_file", self.pki["ca.crt"], "-prom_basic_auth_user", "ds",
                           "-prom_basic_auth_password_file", self.file("wrong", "not-the-password\n"),
                           name="wrong")
        body = self.wait_status(wrong, "401")
        self.assertIn("Unauthorized to basic auth for user", body)
        wrong.wait_cycles(2)
        self.assertEqual(self.stack.labelled(), [])
        wrong.stop()
        self.assert_no_secret_logged(wrong, "not-the-password")

        password = self.file("password", "first-password\n")
        c = self.start("-prom_ca_file", self.pki["ca.crt"], "-prom_basic_auth_user", "ds",
                       "-prom_basic_auth_password_file", password)
        self.wait_labelled(["node-00005"])
        # The password changes on the server, then in the file: the running controller follows.
        self.use_web_config(users={"ds": "second-password"})
        self.wait_status(c, "401")
        self.file("password", "second-password\n")
        c.wait_ready()
        self.hot("node-00006")
        self.wait_labelled(["node-00005", "node-00006"])
        self.assert_no_secret_logged(c, "first-password", "second-password")

    def test_rule_file_prometheus_section(self):
        """The same settings from rule.yaml, paths relative to its folder."""
        self.use_web_config(client_auth=True, users={"tenant": "pw-from-file"})
        self.hot("node-00007")
        self.file("password", "pw-from-file")
        rules = RULES.format(metric=self.metric) + (
            "prometheus:\n  url: %s\n  basicAuth: {username: tenant, passwordFile: %s}\n"
            "  tls: {caFile: %s, certFile: %s, keyFile: %s}\n"
            % (self.secure, os.path.relpath(os.path.join(self.files, "password"), self.stack.dir),
               self.pki["ca.crt"], self.pki["client.crt"], self.pki["client.key"]))
        # -prom gives the URL (it wins over prometheus.url); everything else is the section's.
        c = self.start(rules=rules, name="section")
        self.wait_labelled(["node-00007"])
        self.assertIn("basic auth as tenant", c.proc.output())

    # --- Bearer token and headers, through the proxy ---

    def test_rotated_token_and_tenant_header(self):
        self.proxy.set_token("token-one")
        self.stack.push(self.metric, "node-00002", 95, {"node": "node-00002"})
        self.stack.wait_value('%s{node="node-00002"}' % self.metric, 95)
        token = self.file("token", "token-one\n")
        c = self.start("-prom_token_file", token, "-prom_header", "X-Scope-OrgID: team-a",
                       "-prom_header", "X-Extra: 1", prom=self.proxy.url)
        self.wait_labelled(["node-00002"])
        queries = [h for p, h in self.proxy.requests() if p.startswith("/api/v1/query")]
        self.assertTrue(queries)
        for h in queries:
            self.assertEqual((h.get("X-Scope-OrgID"), h.get("X-Extra")), ("team-a", "1"))
        # The token rotates: the proxy takes only the new one, then the file gets it.
        self.proxy.set_token("token-two")
        self.wait_status(c, "401 Unauthorized to the bearer token")
        self.file("token", "token-two\n")
        c.wait_ready()
        self.stack.push(self.metric, "node-00002", 10, {"node": "node-00002"})
        self.wait_labelled([])
        self.assertEqual(queries[-1].get("Authorization"), "Bearer token-one")
        last = [h for p, h in self.proxy.requests() if p.startswith("/api/v1/query")][-1]
        self.assertEqual(last.get("Authorization"), "Bearer token-two")
        self.assert_no_secret_logged(c, "token-one", "token-two")
        self.assertNotIn("team-a", c.proc.output(), "header values are not logged")


class PromAuthStartupIT(unittest.TestCase):
    """Wrong credentials settings stop the start with exit code 2 and one line naming the flag
    and the file."""

    def test_cases(self):
        with tempfile.TemporaryDirectory() as d:
            rule = os.path.join(d, "rule.yaml")
            with open(rule, "w") as f:
                f.write("rules:\n  - {name: a, query: up, threshold: 5}\n")
            token = os.path.join(d, "token")
            with open(token, "w") as f:
                f.write("t\n")
            base = [CONTROLLER, "-r", rule, "-kubeconfig", "/nonexistent/kc", "-webaddr", "127.0.0.1:0",
                    "-prom", "https://127.0.0.1:1"]
            for extra, want in [
                (["-prom_token_file", "/nonexistent/token"],
                 "-prom_token_file: cannot read /nonexistent/token: No such file or directory"),
                (["-prom_basic_auth_user", "u", "-prom_basic_auth_password_file", "/nonexistent/pw"],
                 "-prom_basic_auth_password_file: cannot read /nonexistent/pw"),
                (["-prom_token_file", token, "-prom_basic_auth_user", "u", "-prom_basic_auth_password_file", token],
                 "exclude each other"),
                (["-prom_header", "X-Scope-OrgID team-a"], "-prom_header: header must be \"Name: value\""),
                (["-prom_ca_file", "/nonexistent/ca.crt"], "-prom_ca_file: cannot read /nonexistent/ca.crt"),
                (["-prom_ca_file", token], "-prom_ca_file: %s is not PEM" % token),
                (["-prom_cert_file", token], "-prom_cert_file and -prom_key_file go together"),
            ]:
                r = subprocess.run(base + extra, capture_output=True, text=True, timeout=20)
                self.assertEqual(r.returncode, 2, (extra, r.stderr))
                self.assertIn(want, r.stderr, extra)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, "one clear line: " + r.stderr)


if __name__ == "__main__":
    unittest.main()
