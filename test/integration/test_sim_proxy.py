"""The Kubernetes API simulator's core/v1 Services and Endpoints and the services/proxy
subresource (/api/v1/namespaces/NS/services/{[scheme:]name[:port]}/proxy/PATH), checked with real
clients -- kubectl (apply -f, get --raw) and the official Python client (Debian's
python3-kubernetes, CoreV1Api.connect_*_namespaced_service_proxy_with_path) -- against real HTTP
and HTTPS servers of this test that record what reached them.

What a real kube-apiserver does, and so the simulator (sources in test/sim/sim_server_proxy.cc and
the headers it names): the request is authenticated and authorized as `services/proxy` with the
method's verb and the whole id as the name; the Endpoints of the Service give the address, which
must be a pod's (targetRef) and may not be a loopback one -- so the backends here listen on this
machine's own address and are hostNetwork pods of a node with that address (harness
backend_service_manifest); the backend gets the path, the raw query, the headers but
Authorization, and X-Forwarded-For/-Uri; its status, headers and body come back."""
import http.client
import http.server
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
import unittest
import urllib.parse

import kubernetes
from kubernetes.client.rest import ApiException

from harness import Stack, backend_service_manifest, host_address, wait_until

NS = "prx"

# Users the -rbac file restricts; the admin kubeconfig's user (CN=admin) is not listed, so
# unrestricted.
RBAC = {"users": {
    # May GET and POST through the proxy of Services in NS, nothing else.
    "prober": [{"apiGroups": [""], "resources": ["services/proxy"], "verbs": ["get", "create"],
                "namespace": NS}],
    # May read Services but not use their proxy.
    "lister": [{"apiGroups": [""], "resources": ["services", "endpoints"], "verbs": ["get", "list"]}],
    # May proxy to the Service named "web" -- which does not cover "web:web": RBAC sees the id.
    "named": [{"apiGroups": [""], "resources": ["services/proxy"], "verbs": ["get"],
               "resourceNames": ["web"]}],
}}
TOKENS = {"prober-token": "prober", "lister-token": "lister", "named-token": "named"}


# A page with absolute links (as the controller's own page has): the API server's proxy rewrites
# the URL attributes of its tags to go through it, and writes every start tag as Go's HTML
# tokenizer does (lower case, double quotes, values escaped again).
PAGE = ("<!doctype html>\n<html><head><link rel=\"stylesheet\" href=\"/ui/app.css\">"
        "<script>if (a < b && c) { x = '<a href=\"/not-a-tag\">'; }</script></head>\n"
        "<body><a href=\"relative/link\">r</a> <a href=\"http://elsewhere.example/x\">e</a>\n"
        "<A HREF='/abs?a=1&amp;b=2' Class=x>a</A><img src=/img.png alt=\"1 < 2\"/>\n"
        "<!-- <a href=\"/in-a-comment\"> --><script src=\"/ui/app.js\" defer></script></body></html>\n")


class Backend:
    """An HTTP (or HTTPS) server on `host`, port chosen by the system, that records every request
    (method, target, headers, body) and answers by path:
      /redirect...   302 to /landed (a Location the proxy rewrites);
      /page...       200 with the HTML page PAGE;
      /teapot...     418 with a plain-text body;
      /stream...     200 without Content-Length, ended by closing the connection;
      /chunked...    200 in three chunks;
      anything else  200 "<label> backend: METHOD TARGET" with CORS and Keep-Alive headers (the
                     proxy drops both) and X-Backend."""

    def __init__(self, host, label, tls_dir=None):
        self.seen = []
        backend = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def serve(self):
                length = int(self.headers.get("Content-Length") or 0)
                backend.seen.append({"method": self.command, "target": self.path,
                                     "headers": list(self.headers.items()),
                                     "body": self.rfile.read(length) if length else b""})
                path = urllib.parse.urlsplit(self.path).path
                if path.startswith("/redirect"):
                    self.send_response(302)
                    self.send_header("Location", "/landed?from=redirect")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif path.startswith("/page"):
                    self.reply(200, PAGE.encode(), "text/html; charset=utf-8")
                elif path.startswith("/teapot"):
                    self.reply(418, b"short and stout", "text/plain")
                elif path.startswith("/stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for i in range(50):
                        self.wfile.write(b"line %d\n" % i)
                    self.close_connection = True
                elif path.startswith("/chunked"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for piece in (b"one ", b"two ", b"three"):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.reply(200, ("%s backend: %s %s" % (label, self.command, self.path)).encode(),
                               "text/plain; charset=utf-8")

            def reply(self, code, data, content_type):
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-Backend", label)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Keep-Alive", "timeout=5")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = serve

        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        if tls_dir is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(os.path.join(tls_dir, "backend.crt"), os.path.join(tls_dir, "backend.key"))
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def request(self, fragment):
        """The one recorded request whose target contains `fragment`."""
        found = [r for r in self.seen if fragment in r["target"]]
        if len(found) != 1:
            raise AssertionError("%d requests with %r reached the backend: %s" % (len(found), fragment, self.seen))
        return found[0]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def header(request, name):
    """The values of header `name` (any case) the backend received."""
    return [v for k, v in request["headers"] if k.lower() == name.lower()]


class SimProxyIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ip = host_address()
        if cls.ip is None:
            raise AssertionError("the service proxy tests need a non-loopback IPv4 address on this machine: "
                                 "the API server refuses loopback addresses in Endpoints")
        cls.tmp = tempfile.mkdtemp(prefix="ds-simproxy-")
        rbac_file = os.path.join(cls.tmp, "rbac.json")
        with open(rbac_file, "w") as f:
            json.dump(RBAC, f)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", os.path.join(cls.tmp, "backend.key"),
                        "-out", os.path.join(cls.tmp, "backend.crt"), "-days", "1", "-subj", "/CN=backend"],
                       check=True, capture_output=True)
        cls.stack = Stack(nodes=2, control_plane=0, sim_args=["-rbac", rbac_file])
        cls.stack.dir = tempfile.mkdtemp(prefix="ds-simproxy-stack-")
        cls.backends = []
        try:
            cls.stack.start_sim()
            for token, user in TOKENS.items():
                cls.stack.sim_admin("POST", "/sim/tokens", {"token": token, "user": user})
            cls.plain = Backend(cls.ip, "plain")
            cls.tls = Backend(cls.ip, "tls", tls_dir=cls.tmp)
            cls.backends = [cls.plain, cls.tls]
            # Nothing listens on this port: its socket is closed before the test uses it.
            closed = Backend(cls.ip, "closed")
            cls.closed_port = closed.port
            closed.stop()
            cls.apply(backend_service_manifest(NS, "web", cls.ip, {"web": cls.plain.port, "tls": cls.tls.port},
                                               service_ports={"web": 80, "tls": 443}))
            cls.apply(backend_service_manifest(NS, "down", cls.ip, {"web": cls.closed_port}))
            # A selectorless Service's hand-written Endpoints, without a targetRef: the API server's
            # proxy skips such addresses (kubernetes issue 114670).
            cls.apply(cls.manifest("plain", {"subsets": [{"addresses": [{"ip": cls.ip}],
                                                          "ports": [{"name": "web", "port": cls.plain.port}]}]}))
            # Only not-ready addresses; and no subsets at all.
            cls.apply(cls.manifest("idle", {"subsets": [{"notReadyAddresses": [
                {"ip": cls.ip, "targetRef": {"kind": "Pod", "name": "web-0", "namespace": NS}}],
                "ports": [{"name": "web", "port": cls.plain.port}]}]}))
            cls.apply(cls.manifest("empty", {}))
            # One unnamed port: the only way to leave the port out of the id.
            cls.apply(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "solo", "namespace": NS},
                 "spec": {"ports": [{"port": 80, "targetPort": cls.plain.port}]}},
                {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "solo", "namespace": NS},
                 "subsets": [{"addresses": [{"ip": cls.ip, "targetRef": {"kind": "Pod", "name": "web-0",
                                                                          "namespace": NS}}],
                              "ports": [{"port": cls.plain.port}]}]}]}))
            wait_until(lambda: cls.stack.kubectl("get", "pod", "web-0", "-n", NS, "-o",
                                                 "jsonpath={.status.podIP}").stdout == cls.ip,
                       20, what="the hostNetwork pod running with this machine's address")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for b in cls.backends:
            b.stop()
        cls.stack.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def apply(cls, manifest):
        r = subprocess.run(["kubectl", "apply", "-f", "-"], input=manifest, capture_output=True, text=True,
                           env=dict(os.environ, KUBECONFIG=cls.stack.admin_kubeconfig), timeout=30)
        if r.returncode != 0:
            raise AssertionError("kubectl apply failed: %s\n%s" % (r.stderr, manifest))
        return r.stdout

    @classmethod
    def manifest(cls, name, endpoints):
        """A one-port Service and the Endpoints `endpoints` (subsets) of that name, as JSON lines
        kubectl reads as a list."""
        svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS},
               "spec": {"ports": [{"name": "web", "port": 80}]}}
        ep = dict({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": NS}},
                  **endpoints)
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": [svc, ep]})

    @classmethod
    def token_kubeconfig(cls, token):
        path = os.path.join(cls.tmp, "kubeconfig-" + token)
        with open(os.path.join(cls.stack.sim_dir, "kubeconfig-token")) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("token: sim-token", "token: " + token))
        return path

    def raw(self, target, token="prober-token", kubeconfig=None):
        """`kubectl get --raw TARGET` as the user of `token`."""
        return self.stack.kubectl("get", "--raw", target, kubeconfig=kubeconfig or self.token_kubeconfig(token),
                                  check=False)

    def https(self, method, target, token="prober-token", headers=None, body=None):
        """One request to the simulator with a bearer token: (status, headers, body)."""
        ctx = ssl.create_default_context(cafile=os.path.join(self.stack.sim_dir, "ca.crt"))
        conn = http.client.HTTPSConnection("127.0.0.1", self.stack.sim_port, context=ctx, timeout=30)
        try:
            conn.request(method, target, body=body,
                         headers=dict({"Authorization": "Bearer " + token}, **(headers or {})))
            r = conn.getresponse()
            return r.status, r.getheaders(), r.read()
        finally:
            conn.close()

    def python_client(self, token="prober-token"):
        cfg = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=self.token_kubeconfig(token), client_configuration=cfg)
        return kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(cfg))

    def proxy(self, id_, path=""):
        return "/api/v1/namespaces/%s/services/%s/proxy%s" % (NS, id_, path)

    # --- Services and Endpoints as stored objects ---
    def test_kubectl_get_services_and_endpoints(self):
        lines = self.stack.kubectl("get", "svc,ep", "-n", NS).stdout.splitlines()
        web = [l.split() for l in lines if l.startswith("service/web ")][0]
        self.assertEqual(web[1:5], ["ClusterIP", web[2], "<none>", "80/TCP,443/TCP"])
        self.assertTrue(web[2].startswith("10.9"), web)
        ep = [l.split() for l in lines if l.startswith("endpoints/web ")][0]
        self.assertEqual(ep[1], "%s:%d,%s:%d" % (self.ip, self.plain.port, self.ip, self.tls.port))
        self.assertIn("endpoints/empty", " ".join(lines))
        svc = json.loads(self.stack.kubectl("get", "svc", "web", "-n", NS, "-o", "json").stdout)
        self.assertEqual(svc["spec"]["type"], "ClusterIP")
        self.assertEqual(svc["spec"]["clusterIPs"], [svc["spec"]["clusterIP"]])
        self.assertEqual([(p["name"], p["port"], p["targetPort"], p["protocol"]) for p in svc["spec"]["ports"]],
                         [("web", 80, self.plain.port, "TCP"), ("tls", 443, self.tls.port, "TCP")])
        self.assertTrue(int(svc["metadata"]["resourceVersion"]) > 0)

    def test_apply_again_updates_and_delete_takes_the_endpoints(self):
        self.apply(self.manifest("tmp", {"subsets": [{"addresses": [{"ip": self.ip}], "ports": [{"port": 81}]}]}))
        before = json.loads(self.stack.kubectl("get", "svc", "tmp", "-n", NS, "-o", "json").stdout)
        self.assertIn("unchanged", self.apply(self.manifest("tmp", {"subsets": [
            {"addresses": [{"ip": self.ip}], "ports": [{"port": 81}]}]})).split("\n")[0])
        changed = json.loads(self.manifest("tmp", {}))
        changed["items"][0]["spec"]["ports"][0]["targetPort"] = 9090
        self.assertIn("service/tmp configured", self.apply(json.dumps(changed)))
        after = json.loads(self.stack.kubectl("get", "svc", "tmp", "-n", NS, "-o", "json").stdout)
        self.assertEqual(after["spec"]["ports"], [{"name": "web", "port": 80, "protocol": "TCP", "targetPort": 9090}],
                         "the strategic merge patch merges ports by port")
        self.assertEqual(after["spec"]["clusterIP"], before["spec"]["clusterIP"], "the allocated address stays")
        self.assertGreater(int(after["metadata"]["resourceVersion"]), int(before["metadata"]["resourceVersion"]))
        self.stack.kubectl("delete", "svc", "tmp", "-n", NS)
        r = self.stack.kubectl("get", "endpoints", "tmp", "-n", NS, check=False)
        self.assertNotEqual(r.returncode, 0, "deleting a Service deletes its Endpoints")
        self.assertIn('endpoints "tmp" not found', r.stderr)

    def test_validation(self):
        bad = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "bad", "namespace": NS},
               "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "a", "port": 80}, {"port": 70000}]}]}
        r = subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(bad), capture_output=True, text=True,
                           env=dict(os.environ, KUBECONFIG=self.stack.admin_kubeconfig))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('The Endpoints "bad" is invalid', r.stderr)
        self.assertIn('subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range '
                      '(127.0.0.0/8, ::1/128)', r.stderr)
        self.assertIn("subsets[0].ports[1].name: Required value", r.stderr)
        self.assertIn("subsets[0].ports[1].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
                      r.stderr)
        svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "Bad", "namespace": NS},
               "spec": {"ports": [{"port": 80}]}}
        r = subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(svc), capture_output=True, text=True,
                           env=dict(os.environ, KUBECONFIG=self.stack.admin_kubeconfig))
        self.assertIn('The Service "Bad" is invalid: metadata.name: Invalid value: "Bad": a DNS-1035 label', r.stderr)

    # --- the proxy: what reaches the backend, what comes back ---
    def test_kubectl_get_raw_through_the_proxy(self):
        r = self.raw(self.proxy("web:web", "/some/path?x=1&y=two"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "plain backend: GET /some/path?x=1&y=two")
        seen = self.plain.request("/some/path")
        self.assertEqual(seen["method"], "GET")
        self.assertEqual(seen["target"], "/some/path?x=1&y=two", "the path and the query")
        self.assertEqual(header(seen, "Authorization"), [], "the authentication filter deleted it")
        self.assertEqual(header(seen, "X-Forwarded-For"), ["127.0.0.1"])
        self.assertEqual(header(seen, "X-Forwarded-Uri"), [self.proxy("web:web", "/some/path")])
        self.assertEqual(header(seen, "Host"), ["127.0.0.1:%d" % self.stack.sim_port], "the client's Host")
        self.assertTrue(header(seen, "User-Agent")[0].startswith("kubectl"), seen)

    def test_port_by_number_and_https(self):
        r = self.raw(self.proxy("web:80", "/by-number"))
        self.assertEqual((r.returncode, r.stdout), (0, "plain backend: GET /by-number"), r.stderr)
        # The scheme "https": TLS to the endpoint, its self-signed certificate not verified.
        r = self.raw(self.proxy("https:web:tls", "/secure?q=1"))
        self.assertEqual((r.returncode, r.stdout), (0, "tls backend: GET /secure?q=1"), r.stderr)
        self.assertEqual(header(self.tls.request("/secure"), "Authorization"), [])
        r = self.raw(self.proxy("https:web:443", "/secure-by-number"))
        self.assertEqual((r.returncode, r.stdout), (0, "tls backend: GET /secure-by-number"), r.stderr)

    def test_port_left_out(self):
        # No port in the id means the port named "": a one-port Service's unnamed port.
        r = self.raw(self.proxy("solo", "/solo"))
        self.assertEqual((r.returncode, r.stdout), (0, "plain backend: GET /solo"), r.stderr)
        r = self.raw(self.proxy("solo:80", "/solo-80"))
        self.assertEqual((r.returncode, r.stdout), (0, "plain backend: GET /solo-80"), r.stderr)
        # A one-port Service whose port has a name needs it.
        self.assert_status(self.proxy("down", "/x"), 503, "ServiceUnavailable",
                           'no endpoints available for service "down"')

    def test_python_client(self):
        api = self.python_client()
        # The client escapes the path parameter ("a/b" -> "a%2Fb"); the server decodes it.
        body = api.connect_get_namespaced_service_proxy_with_path("web:web", NS, "py/get")
        self.assertEqual(body, "plain backend: GET /py/get")
        self.assertEqual(header(self.plain.request("/py/get"), "Authorization"), [])
        body = api.connect_post_namespaced_service_proxy_with_path("web:web", NS, "py/post")
        self.assertEqual(body, "plain backend: POST /py/post")
        self.assertEqual(self.plain.request("/py/post")["method"], "POST")
        body = api.connect_get_namespaced_service_proxy_with_path("https:web:tls", NS, "py/tls")
        self.assertEqual(body, "tls backend: GET /py/tls")
        with self.assertRaises(ApiException) as cm:  # prober may get and create, not update
            api.connect_put_namespaced_service_proxy_with_path("web:web", NS, "py/put")
        self.assertEqual(cm.exception.status, 403)
        self.assertEqual(json.loads(cm.exception.body)["message"],
                         'services "web:web" is forbidden: User "prober" cannot update resource '
                         '"services/proxy" in API group "" in the namespace "prx"')
        self.assertEqual([r for r in self.plain.seen if "/py/put" in r["target"]], [])

    def test_methods_headers_and_body(self):
        status, headers, body = self.https(
            "POST", self.proxy("web:web", "/post-it?a=b"), body=b'{"k": "v"}',
            headers={"Content-Type": "application/json", "X-Forwarded-For": "10.1.2.3", "X-Custom": "kept",
                     "X-Remote-User": "mallory", "Connection": "close, X-Hop", "X-Hop": "dropped"})
        self.assertEqual((status, body), (200, b"plain backend: POST /post-it?a=b"))
        seen = self.plain.request("/post-it")
        self.assertEqual(seen["body"], b'{"k": "v"}')
        self.assertEqual(header(seen, "Content-Type"), ["application/json"])
        self.assertEqual(header(seen, "Content-Length"), ["10"])
        self.assertEqual(header(seen, "X-Custom"), ["kept"])
        self.assertEqual(header(seen, "X-Forwarded-For"), ["10.1.2.3, 127.0.0.1"], "appended, as Go's proxy does")
        self.assertEqual(header(seen, "X-Remote-User"), [], "front-proxy identity headers are deleted")
        self.assertEqual(header(seen, "X-Hop"), [], "headers named in Connection are hop-by-hop")
        self.assertEqual(header(seen, "Connection"), [])
        # The answer: the backend's status and headers, less the hop-by-hop and CORS ones, after
        # the API server's own Cache-Control.
        names = [k.lower() for k, _ in headers]
        self.assertIn(("X-Backend", "plain"), headers)
        self.assertNotIn("access-control-allow-origin", names)
        self.assertNotIn("keep-alive", names)
        self.assertIn(("Cache-Control", "no-cache, private"), headers)
        self.assertIn(("Content-Type", "text/plain; charset=utf-8"), headers)
        # The prober has no "update": the API server refuses before the backend sees anything.
        status, _, body = self.https("PUT", self.proxy("web:web", "/put-it"), body=b"x")
        self.assertEqual(status, 403)
        self.assertEqual(json.loads(body)["details"], {"name": "web:web", "kind": "services"})
        status, _, body = self.https("DELETE", self.proxy("web:web", "/delete-it"), token="sim-token")
        self.assertEqual((status, body), (200, b"plain backend: DELETE /delete-it"))
        status, headers, body = self.https("HEAD", self.proxy("web:web", "/head-it"))
        self.assertEqual((status, body), (200, b""))
        self.assertIn(("Content-Length", str(len("plain backend: HEAD /head-it"))), headers)

    def test_raw_query_and_path_escaping(self):
        # The query goes on as the client wrote it (kubectl get --raw would re-encode it first);
        # the path is decoded, cleaned and escaped again, as Go's url.URL does.
        status, _, body = self.https("GET", self.proxy("web:web", "/a%20b/./c//d?b=2&a=%20x+y&flag"))
        self.assertEqual((status, body), (200, b"plain backend: GET /a%20b/c/d?b=2&a=%20x+y&flag"))

    def test_html_links_are_rewritten(self):
        status, headers, body = self.https("GET", self.proxy("web:web", "/page"))
        self.assertEqual(status, 200)
        p = self.proxy("web:web")
        self.assertEqual(body.decode(), (
            "<!doctype html>\n<html><head><link rel=\"stylesheet\" href=\"%s/ui/app.css\">"
            "<script>if (a < b && c) { x = '<a href=\"/not-a-tag\">'; }</script></head>\n"
            "<body><a href=\"relative/link\">r</a> <a href=\"http://elsewhere.example/x\">e</a>\n"
            "<a href=\"%s/abs?a=1&amp;b=2\" class=\"x\">a</A><img src=\"%s/img.png\" alt=\"1 &lt; 2\"/>\n"
            "<!-- <a href=\"/in-a-comment\"> --><script src=\"%s/ui/app.js\" defer=\"\"></script></body></html>\n")
            % (p, p, p, p))
        self.assertIn(("Content-Length", str(len(body))), headers)

    def test_status_and_framing_pass_through(self):
        status, headers, body = self.https("GET", self.proxy("web:web", "/teapot"))
        self.assertEqual((status, body), (418, b"short and stout"), "not turned into a Status")
        status, _, body = self.https("GET", self.proxy("web:web", "/stream"))
        self.assertEqual((status, body), (200, b"".join(b"line %d\n" % i for i in range(50))))
        status, _, body = self.https("GET", self.proxy("web:web", "/chunked"))
        self.assertEqual((status, body), (200, b"one two three"))

    def test_redirects(self):
        # The backend's Location goes through the proxy (proxy/transport.go rewriteURL).
        status, headers, _ = self.https("GET", self.proxy("web:web", "/redirect"))
        self.assertEqual(status, 302)
        self.assertIn(("Location", self.proxy("web:web", "/landed?from=redirect")), headers)
        # An empty path is redirected to "/" (GET and HEAD), query kept.
        status, headers, _ = self.https("GET", self.proxy("web:web") + "?z=1")
        self.assertEqual(status, 301)
        self.assertIn(("Location", self.proxy("web:web", "/?z=1")), headers)
        status, _, body = self.https("GET", self.proxy("web:web", "/"))
        self.assertEqual((status, body), (200, b"plain backend: GET /"))

    # --- the proxy's errors, as Status objects ---
    def assert_status(self, target, code, reason, message, token="prober-token"):
        status, _, body = self.https("GET", target, token=token)
        self.assertEqual(status, code, body)
        s = json.loads(body)
        self.assertEqual((s["kind"], s["status"], s["reason"], s["message"]), ("Status", "Failure", reason, message))

    def test_forbidden_without_rbac_for_the_proxy(self):
        r = self.raw(self.proxy("web:web", "/denied"), token="lister-token")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Error from server (Forbidden)", r.stderr)
        self.assertIn('services "web:web" is forbidden: User "lister" cannot get resource "services/proxy" '
                      'in API group "" in the namespace "prx"', r.stderr)
        # resourceNames ["web"] is not "web:web": RBAC sees the whole id.
        self.assert_status(self.proxy("web:web", "/named"), 403, "Forbidden",
                           'services "web:web" is forbidden: User "named" cannot get resource '
                           '"services/proxy" in API group "" in the namespace "prx"', token="named-token")
        self.assertEqual([r for r in self.plain.seen if "/denied" in r["target"] or "/named" in r["target"]], [])

    def test_unknown_service(self):
        r = self.raw(self.proxy("nope:web", "/x"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('Error from server (NotFound): endpoints "nope" not found', r.stderr)
        # A port number is looked up in the Service first.
        self.assert_status(self.proxy("nope:80", "/x"), 404, "NotFound", 'services "nope" not found')
        self.assert_status(self.proxy("web:8080", "/x"), 503, "ServiceUnavailable",
                           'no service port 8080 found for service "web"')
        self.assert_status(self.proxy("a:b:c:d", "/x"), 400, "BadRequest", 'invalid service request "a:b:c:d"')

    def test_no_endpoints(self):
        r = self.raw(self.proxy("empty:web", "/x"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('Error from server (ServiceUnavailable): no endpoints available for service "empty"', r.stderr)
        # Only not-ready addresses; the two-port Service without a port (its ports are named);
        # an address that is not a pod's.
        for id_ in ("idle:web", "web", "plain:web"):
            self.assert_status(self.proxy(id_, "/x"), 503, "ServiceUnavailable",
                               'no endpoints available for service "%s"' % id_)

    def test_unreachable_backend(self):
        self.assert_status(self.proxy("down:web", "/x"), 503, "ServiceUnavailable",
                           "error trying to reach service: dial tcp %s:%d: connect: connection refused"
                           % (self.ip, self.closed_port))
        # TLS to a plain-HTTP endpoint.
        self.assert_status(self.proxy("https:web:web", "/x"), 503, "ServiceUnavailable",
                           "error trying to reach service: tls: first record does not look like a TLS handshake")

    def test_dry_run_is_refused(self):
        self.assert_status(self.proxy("web:web", "/x?dryRun=All"), 400, "BadRequest", "dryRun is not supported")


if __name__ == "__main__":
    unittest.main()
