"""-web_auth=kubernetes against the simulator's TokenReview and SubjectAccessReview (test/sim/sim_auth.h):
the real binary asks the API server who holds a caller's bearer token and whether that user may use the
request: get on the URL /metrics (as controller-runtime's secure metrics serving and kube-rbac-proxy ask),
and for everything else the Service's proxy subresource, with the verb the API server's service proxy
checks (get, create for POST).

The simulator's -rbac file gives the callers' users their rules; the controller's own user
is not listed there, so it may create the reviews (the simulator's unlisted users are its admins)."""
import json
import os
import shutil
import tempfile
import unittest
import urllib.error
import urllib.request

from harness import CPU_RULES, Controller, Stack, free_port, wait_until

PROMETHEUS = "system:serviceaccount:monitoring:prometheus"
TOKENS = {
    "prom-token": PROMETHEUS,            # may get /metrics
    "reader-token": "page-reader",       # may get the page's data
    "nobody-token": "nobody",            # may get nothing of ours
    "alertmanager-token": "alertmanager",  # may post /webhook
    "fresh-token": PROMETHEUS,           # used once, for the uncached review of the fault test
}
# The Service the reviews point at (-web_auth_service): its proxy subresource is the permission for
# everything but /metrics (web/access_policy.h).
SERVICE_NS, SERVICE = "ops", "dynamic-scheduler"
PROXY = {"namespace": SERVICE_NS, "apiGroups": [""], "resources": ["services/proxy"],
         "resourceNames": [SERVICE]}
RBAC = {"users": {
    PROMETHEUS: [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    "page-reader": [dict(PROXY, verbs=["get"])],
    # What every authenticated user has by default (system:discovery, system:public-info-viewer),
    # and the proxy of another Service: none of it opens this port.
    "nobody": [{"nonResourceURLs": ["/api", "/api/*", "/version", "/healthz"], "verbs": ["get"]},
               dict(PROXY, resourceNames=["other"], verbs=["get", "create"])],
    "alertmanager": [dict(PROXY, verbs=["create"])],
}}
WEBHOOK_SECRET = "hook-s3cret"
ALERT = json.dumps({"alerts": [{"status": "firing", "labels": {"node": "node-00002"}}]}).encode()


def request(method, url, token=None, body=None, authorization=None):
    """(status, headers, body) of one request; `token` becomes "Authorization: Bearer <token>"."""
    headers = {}
    if token is not None:
        headers["Authorization"] = "Bearer " + token
    if authorization is not None:
        headers["Authorization"] = authorization
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


class WebAuthIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ds-web-auth-")
        rbac = os.path.join(cls.tmp, "rbac.json")
        with open(rbac, "w") as f:
            json.dump(RBAC, f)
        secret = os.path.join(cls.tmp, "webhook-token")
        with open(secret, "w") as f:
            f.write(WEBHOOK_SECRET + "\n")
        cls.stack = Stack(nodes=4, control_plane=1, sim_args=["-rbac", rbac]).start()
        for token, user in TOKENS.items():
            cls.stack.sim_admin("POST", "/sim/tokens", {"token": token, "user": user})
        cls.stack.push("it_web_auth_cpu", "n", 20, {"node": "node-00002"})
        cls.probe_port = free_port()
        cls.controller = Controller(
            cls.stack, CPU_RULES.format(metric="it_web_auth_cpu"), name="web-auth",
            args=["-web_auth=kubernetes", "-web_auth_service", SERVICE_NS + "/" + SERVICE,
                  "-webhook_token_file", secret,
                  "-probeaddr", "127.0.0.1:%d" % cls.probe_port])
        cls.url = cls.controller.url
        # The probe listener needs no token: readiness is asked there.
        wait_until(lambda: request("GET", "http://127.0.0.1:%d/status" % cls.probe_port)[0] == 200, 30,
                   what="the controller ready on its probe port")

    @classmethod
    def tearDownClass(cls):
        cls.controller.stop()
        cls.stack.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def denied(self):
        """dynamic_scheduler_web_requests_denied_total by reason, read with Prometheus' token."""
        status, _, body = request("GET", self.url + "/metrics", "prom-token")
        self.assertEqual(status, 200, body)
        out = {}
        for line in body.splitlines():
            if line.startswith("dynamic_scheduler_web_requests_denied_total{"):
                reason = line.split('reason="', 1)[1].split('"', 1)[0]
                out[reason] = float(line.split()[-1])
        return out

    def test_the_page_itself_needs_no_token(self):
        for path in ("/", "/ui/app.js", "/ui/app.css"):
            status, headers, _ = request("GET", self.url + path)
            self.assertEqual(status, 200, path)
            self.assertIn("form-action 'none'", headers.get("Content-Security-Policy", ""), path)

    def test_no_token_or_an_unknown_one_is_401(self):
        for path in ("/api/v1/state", "/metrics", "/nodes", "/status", "/healthz", "/nope"):
            status, headers, body = request("GET", self.url + path)
            self.assertEqual(status, 401, path)
            self.assertEqual(headers.get("WWW-Authenticate"), "Bearer", path)
            self.assertIn("Authorization: Bearer", body)
        status, _, body = request("GET", self.url + "/metrics", "not-a-token")
        self.assertEqual(status, 401)
        self.assertIn("does not accept this bearer token", body)
        self.assertNotIn("not-a-token", body)
        self.assertEqual(request("GET", self.url + "/metrics", authorization="Basic dTpw")[0], 401)

    def test_a_token_without_the_right_is_403(self):
        status, _, body = request("GET", self.url + "/metrics", "nobody-token")
        self.assertEqual(status, 403)
        self.assertEqual(body.strip(), 'forbidden: User "nobody" cannot get path "/metrics"')
        self.assertEqual(request("GET", self.url + "/nodes", "prom-token")[0], 403,
                         "get /metrics allows nothing else")
        # What every authenticated user may get of the API server's own paths (/api/*) and the
        # proxy of another Service open nothing here.
        status, _, body = request("GET", self.url + "/api/v1/state", "nobody-token")
        self.assertEqual(status, 403)
        self.assertEqual(body.strip(), 'forbidden: User "nobody" cannot get resource "services/proxy" '
                         'in API group "" in the namespace "ops"')
        self.assertEqual(request("GET", self.url + "/healthz", "nobody-token")[0], 403)
        # Reading is get, posting is create: the reader may not post the webhook.
        self.assertEqual(request("POST", self.url + "/webhook", "reader-token", ALERT)[0], 403)

    def test_the_right_token_is_200(self):
        status, _, body = request("GET", self.url + "/metrics", "prom-token")
        self.assertEqual(status, 200)
        self.assertIn("dynamic_scheduler_web_requests_denied_total", body)
        status, _, body = request("GET", self.url + "/api/v1/state", "reader-token")
        self.assertEqual(status, 200)
        self.assertIn('"mark"', body)
        for path in ("/nodes", "/rebalance", "/status", "/healthz", "/api/v1/history?nodes=node-00002"):
            self.assertEqual(request("GET", self.url + path, "reader-token")[0], 200, path)
        # Answers are cached: the same requests again are answered without new reviews, the same way.
        for _ in range(5):
            self.assertEqual(request("GET", self.url + "/metrics", "prom-token")[0], 200)
            self.assertEqual(request("GET", self.url + "/metrics", "nobody-token")[0], 403)

    def test_the_webhook_with_its_shared_secret_or_an_allowed_token(self):
        status, _, body = request("POST", self.url + "/webhook", WEBHOOK_SECRET, ALERT)
        self.assertEqual((status, body.strip()), (202, "evaluation triggered"))
        self.assertEqual(request("POST", self.url + "/webhook", "alertmanager-token", ALERT)[0], 202)
        self.assertEqual(request("POST", self.url + "/webhook", None, ALERT)[0], 401)
        self.assertEqual(request("POST", self.url + "/webhook", "wrong-secret", ALERT)[0], 401)

    def test_a_review_that_cannot_be_made_is_503_and_not_remembered(self):
        before = self.denied()
        # The next request the simulator classes as "discovery" (every path but nodes and leases: the
        # reviews among them) is refused 403, as when the controller's service account lacks RBAC
        # for tokenreviews. "fresh-token" has not been reviewed yet, so its review is that request.
        self.stack.fault(match="discovery", status=403, count=1)
        try:
            status, headers, body = request("GET", self.url + "/metrics", "fresh-token")
            self.assertEqual(status, 503, body)
            self.assertIn("cannot check credentials", body)
            self.assertIsNotNone(headers.get("Retry-After"))
        finally:
            self.stack.clear_faults()
        # Not cached: the next request asks again, and gets in.
        self.assertEqual(request("GET", self.url + "/metrics", "fresh-token")[0], 200)
        after = self.denied()
        self.assertEqual(after["review_failed"], before.get("review_failed", 0) + 1)

    def test_denials_are_counted_by_reason(self):
        before = self.denied()
        request("GET", self.url + "/nodes")
        request("GET", self.url + "/nodes", "nobody-token")
        after = self.denied()
        self.assertEqual(after["unauthenticated"], before["unauthenticated"] + 1)
        self.assertEqual(after["forbidden"], before["forbidden"] + 1)
        # Logged at most once a minute per client and reason: an earlier test's refusal may be the
        # line.
        log = self.controller.proc.output()
        self.assertRegex(log, r"web: GET /\S+ refused \(401 unauthenticated")
        self.assertRegex(log, r"web: GET /\S+ refused \(403 forbidden")
        for token in TOKENS:
            self.assertNotIn(token, log, "never log a token")


if __name__ == "__main__":
    unittest.main()
