"""The review APIs of the Kubernetes API simulator -- authentication.k8s.io/v1 TokenReview and
SelfSubjectReview, authorization.k8s.io/v1 SubjectAccessReview and SelfSubjectAccessReview -- and
RBAC's nonResourceURLs rules behind them, checked with real clients: kubectl and the official
Python client (Debian's python3-kubernetes).

A web port behind Kubernetes authentication (controller-runtime's secure metrics serving,
kube-rbac-proxy) sends its caller's bearer token in a TokenReview, then asks a SubjectAccessReview
whether that user may do the request's verb (the lowercased HTTP method) on its path."""
import json
import os
import tempfile
import unittest

import kubernetes
from kubernetes.client.rest import ApiException

from harness import Stack, kubectl_version

API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"

# The controller's user (its client certificate and its token) may review tokens and access, as
# its service account needs to in production; the others are callers of its web port.
RBAC = {"users": {
    "dynamic-scheduler": [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
    ],
    "metrics-reader": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    "debugger": [{"nonResourceURLs": ["/debug/*"], "verbs": ["get", "post"]}],
    "anything": [{"nonResourceURLs": ["*"], "verbs": ["*"]}],
    # A resource rule never grants a path, whatever it names.
    "node-viewer": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list"]}],
    "system:serviceaccount:monitoring:prometheus": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
}}

TOKENS = {
    "mr-token": {"user": "metrics-reader"},
    "nv-token": {"user": "node-viewer"},
    "sa-token": {"user": "system:serviceaccount:monitoring:prometheus", "uid": "5b6c-prom"},
    "grp-token": {"user": "alice", "groups": ["team-a", "team-b"]},
}


class SimAuthReviewsIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ds-simauth-")
        rbac_file = os.path.join(cls.tmp, "rbac.json")
        with open(rbac_file, "w") as f:
            json.dump(RBAC, f)
        cls.stack = Stack(nodes=2, control_plane=0, sim_args=["-rbac", rbac_file])
        cls.stack.dir = cls.tmp
        cls.stack.start_sim()
        for token, spec in TOKENS.items():
            cls.stack.sim_admin("POST", "/sim/tokens", dict(spec, token=token))
        # The controller's own kubeconfig: client certificate CN=dynamic-scheduler.
        cls.controller = cls.client(cls.stack.kubeconfig)

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()

    @classmethod
    def token_kubeconfig(cls, token):
        """A kubeconfig for the simulator that sends `token`."""
        path = os.path.join(cls.tmp, "kubeconfig-" + token)
        with open(os.path.join(cls.stack.sim_dir, "kubeconfig-token")) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("token: sim-token", "token: " + token))
        return path

    @classmethod
    def client(cls, kubeconfig):
        cfg = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        return kubernetes.client.ApiClient(cfg)

    def token_review(self, token, audiences=None, api=None):
        body = kubernetes.client.V1TokenReview(
            api_version="authentication.k8s.io/v1", kind="TokenReview",
            spec=kubernetes.client.V1TokenReviewSpec(token=token, audiences=audiences))
        return kubernetes.client.AuthenticationV1Api(api or self.controller).create_token_review(body)

    def sar(self, user=None, groups=None, path=None, verb="get", resource=None, api=None):
        spec = kubernetes.client.V1SubjectAccessReviewSpec(user=user, groups=groups)
        if path is not None:
            spec.non_resource_attributes = kubernetes.client.V1NonResourceAttributes(path=path, verb=verb)
        if resource is not None:
            spec.resource_attributes = kubernetes.client.V1ResourceAttributes(verb=verb, **resource)
        body = kubernetes.client.V1SubjectAccessReview(
            api_version="authorization.k8s.io/v1", kind="SubjectAccessReview", spec=spec)
        return kubernetes.client.AuthorizationV1Api(api or self.controller).create_subject_access_review(body)

    def raw_sar(self, spec, metadata=None):
        """A SubjectAccessReview the Python client would not build; (HTTP status, body)."""
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        if metadata is not None:
            body["metadata"] = metadata
        try:
            self.controller.call_api("/apis/authorization.k8s.io/v1/subjectaccessreviews", "POST",
                                     body=body, header_params={"Content-Type": "application/json"},
                                     auth_settings=["BearerToken"], _preload_content=False)
        except ApiException as e:
            return e.status, json.loads(e.body)
        raise AssertionError("the review was accepted: %s" % spec)

    def kubectl(self, *args, **kw):
        return self.stack.kubectl(*args, **kw)

    # --- TokenReview ---
    def test_token_review_of_a_known_token(self):
        r = self.token_review("mr-token")
        self.assertEqual(r.kind, "TokenReview")
        self.assertEqual(r.spec.token, "mr-token")
        self.assertTrue(r.status.authenticated)
        self.assertEqual(r.status.user.username, "metrics-reader")
        self.assertEqual(r.status.user.groups, ["system:authenticated"])
        self.assertIsNone(r.status.user.uid)
        self.assertIsNone(r.status.error)
        self.assertEqual(r.status.audiences, [API_AUDIENCE], "no audiences asked: the API server's own")

    def test_token_review_of_a_service_account_token(self):
        u = self.token_review("sa-token").status.user
        self.assertEqual(u.username, "system:serviceaccount:monitoring:prometheus")
        self.assertEqual(u.uid, "5b6c-prom")
        self.assertEqual(u.groups, ["system:serviceaccounts", "system:serviceaccounts:monitoring",
                                    "system:authenticated"])

    def test_token_review_keeps_configured_groups(self):
        u = self.token_review("grp-token").status.user
        self.assertEqual(u.groups, ["team-a", "team-b", "system:authenticated"])

    def test_token_review_of_an_unknown_token(self):
        r = self.token_review("no-such-token")
        self.assertFalse(r.status.authenticated, "authenticated is omitempty: absent, not true")
        self.assertEqual(r.status.error, "invalid bearer token")
        self.assertIsNone(r.status.user.username)
        self.assertIsNone(r.status.audiences)

    def test_token_review_audiences(self):
        self.assertEqual(self.token_review("mr-token", audiences=["other", API_AUDIENCE]).status.audiences,
                         [API_AUDIENCE])
        r = self.token_review("mr-token", audiences=["https://other.example.com"])
        self.assertFalse(r.status.authenticated, "a token for the API server is not one for another audience")
        self.assertEqual(r.status.error, "invalid bearer token")

    def test_token_review_after_revocation(self):
        self.stack.sim_admin("POST", "/sim/tokens", {"token": "short-lived", "user": "metrics-reader"})
        self.assertTrue(self.token_review("short-lived").status.authenticated)
        self.stack.sim_admin("DELETE", "/sim/tokens?token=short-lived")
        self.assertFalse(self.token_review("short-lived").status.authenticated)

    def test_token_review_without_a_token_is_a_bad_request(self):
        with self.assertRaises(ApiException) as cm:
            self.token_review("")
        self.assertEqual(cm.exception.status, 400)
        status = json.loads(cm.exception.body)
        self.assertEqual((status["kind"], status["reason"], status["message"]),
                         ("Status", "BadRequest", "token is required for TokenReview in authentication"))

    def test_token_review_needs_create_permission(self):
        with self.assertRaises(ApiException) as cm:
            self.token_review("sa-token", api=self.client(self.token_kubeconfig("mr-token")))
        self.assertEqual(cm.exception.status, 403)
        status = json.loads(cm.exception.body)
        self.assertEqual(status["reason"], "Forbidden")
        self.assertEqual(status["message"],
                         'tokenreviews.authentication.k8s.io is forbidden: User "metrics-reader" cannot '
                         'create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope')
        self.assertEqual(status["details"], {"group": "authentication.k8s.io", "kind": "tokenreviews"})

    def test_reviews_are_create_only(self):
        admin = self.client(self.stack.admin_kubeconfig)
        with self.assertRaises(ApiException) as cm:
            admin.call_api("/apis/authentication.k8s.io/v1/tokenreviews", "GET",
                                     auth_settings=["BearerToken"], _preload_content=False)
        self.assertEqual(cm.exception.status, 405)
        self.assertEqual(json.loads(cm.exception.body)["reason"], "MethodNotAllowed")

    def test_kubectl_create_token_review(self):
        path = os.path.join(self.tmp, "tokenreview.json")
        with open(path, "w") as f:
            json.dump({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                       "spec": {"token": "sa-token"}}, f)
        # The controller's kubeconfig; --validate=false: the simulator serves no OpenAPI.
        out = json.loads(self.kubectl("create", "-f", path, "-o", "json", "--validate=false",
                                      kubeconfig=self.stack.kubeconfig).stdout)
        self.assertEqual(out["metadata"], {"creationTimestamp": None})
        self.assertTrue(out["status"]["authenticated"])
        self.assertEqual(out["status"]["user"]["username"], "system:serviceaccount:monitoring:prometheus")
        r = self.kubectl("create", "-f", path, "-o", "json", "--validate=false",
                         kubeconfig=self.token_kubeconfig("nv-token"), check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Error from server (Forbidden)", r.stderr)
        self.assertIn('User "node-viewer" cannot create resource "tokenreviews"', r.stderr)

    # --- SubjectAccessReview ---
    def test_sar_allows_a_path_the_rules_grant(self):
        s = self.sar(user="metrics-reader", groups=["system:authenticated"], path="/metrics").status
        self.assertTrue(s.allowed)
        self.assertFalse(s.denied)
        self.assertEqual(s.reason, 'RBAC: allowed by ClusterRoleBinding "sim:metrics-reader" of ClusterRole '
                                   '"sim:metrics-reader" to User "metrics-reader"')

    def test_sar_denies_another_verb_or_path(self):
        for path, verb in (("/metrics", "post"), ("/metrics/extra", "get"), ("/webhook", "post")):
            s = self.sar(user="metrics-reader", groups=["system:authenticated"], path=path, verb=verb).status
            self.assertFalse(s.allowed, (path, verb))
            self.assertFalse(s.denied, "RBAC has no opinion; it never denies outright")
            self.assertIsNone(s.reason)

    def test_sar_prefix_and_wildcard_urls(self):
        self.assertTrue(self.sar(user="debugger", path="/debug/pprof/heap").status.allowed)
        self.assertTrue(self.sar(user="debugger", path="/debug/", verb="post").status.allowed)
        self.assertFalse(self.sar(user="debugger", path="/debugger").status.allowed)
        self.assertFalse(self.sar(user="debugger", path="/debug/x", verb="delete").status.allowed)
        self.assertTrue(self.sar(user="anything", path="/webhook", verb="post").status.allowed)

    def test_sar_resource_and_path_rules_never_cross(self):
        self.assertFalse(self.sar(user="node-viewer", path="/metrics").status.allowed)
        self.assertTrue(self.sar(user="node-viewer", resource={"resource": "nodes", "group": ""}).status.allowed)
        self.assertFalse(self.sar(user="metrics-reader", resource={"resource": "nodes"}, verb="list").status.allowed)
        self.assertFalse(self.sar(user="anything", resource={"resource": "pods", "namespace": "x"}).status.allowed)

    def test_sar_for_a_service_account_from_a_token_review(self):
        """The web port's two steps: who is the token, then may that user get /metrics."""
        u = self.token_review("sa-token").status.user
        s = self.sar(user=u.username, groups=u.groups, path="/metrics").status
        self.assertTrue(s.allowed)
        self.assertEqual(s.reason, 'RBAC: allowed by ClusterRoleBinding "sim:system:serviceaccount:monitoring:'
                                   'prometheus" of ClusterRole "sim:system:serviceaccount:monitoring:prometheus" '
                                   'to ServiceAccount "prometheus/monitoring"')
        self.assertFalse(self.sar(user=u.username, groups=u.groups, path="/webhook", verb="post").status.allowed)

    def test_sar_of_an_unlisted_user_is_allowed(self):
        """Users the -rbac file does not list are the simulator's admins."""
        s = self.sar(user="admin", path="/metrics", verb="post").status
        self.assertTrue(s.allowed)
        self.assertTrue(self.sar(user="admin", resource={"resource": "nodes"}, verb="delete").status.allowed)

    def test_sar_of_groups_alone(self):
        self.assertTrue(self.sar(groups=["system:masters"], path="/metrics").status.allowed)
        s = self.sar(groups=["system:authenticated"], path="/healthz").status
        self.assertTrue(s.allowed, "system:public-info-viewer")
        self.assertIn('to Group "system:authenticated"', s.reason)
        self.assertTrue(self.sar(user="metrics-reader", groups=["system:authenticated"], path="/apis/apps/v1").status.allowed)
        self.assertFalse(self.sar(user="metrics-reader", path="/apis").status.allowed,
                         "the discovery roles are bound to system:authenticated, which the review does not name")
        self.assertFalse(self.sar(groups=["team-a"], path="/metrics").status.allowed)

    def test_sar_needs_create_permission(self):
        with self.assertRaises(ApiException) as cm:
            self.sar(user="metrics-reader", path="/metrics", api=self.client(self.token_kubeconfig("mr-token")))
        self.assertEqual(cm.exception.status, 403)
        status = json.loads(cm.exception.body)
        self.assertEqual(status["message"],
                         'subjectaccessreviews.authorization.k8s.io is forbidden: User "metrics-reader" cannot '
                         'create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the '
                         'cluster scope')
        # A read-only user may not create either.
        ro = self.client(os.path.join(self.stack.sim_dir, "kubeconfig-readonly"))
        with self.assertRaises(ApiException) as cm:
            self.sar(user="metrics-reader", path="/metrics", api=ro)
        self.assertEqual(cm.exception.status, 403)

    def test_sar_validation(self):
        code, status = self.raw_sar({})
        self.assertEqual((code, status["code"], status["reason"]), (422, 422, "Invalid"))
        self.assertEqual(status["message"],
                         '.authorization.k8s.io "" is invalid: [spec.resourceAttributes: Invalid value: null: '
                         'exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: '
                         'Invalid value: "": at least one of user or group must be specified]')
        self.assertEqual(status["details"]["group"], "authorization.k8s.io")
        self.assertEqual([(c["reason"], c["field"]) for c in status["details"]["causes"]],
                         [("FieldValueInvalid", "spec.resourceAttributes"), ("FieldValueInvalid", "spec.user")])

        code, status = self.raw_sar({"user": "u", "resourceAttributes": {"resource": "nodes"},
                                     "nonResourceAttributes": {"path": "/metrics", "verb": "get"}})
        self.assertEqual(code, 422)
        self.assertEqual(status["details"]["causes"][0]["field"], "spec.nonResourceAttributes")
        self.assertEqual(status["details"]["causes"][0]["message"],
                         'Invalid value: {"Path":"/metrics","Verb":"get"}: cannot be specified in combination '
                         'with resourceAttributes')

        code, status = self.raw_sar({"user": "u", "nonResourceAttributes": {"path": "/metrics", "verb": "get"}},
                                    metadata={"name": "x"})
        self.assertEqual(code, 422)
        self.assertEqual([c["field"] for c in status["details"]["causes"]], ["metadata"])
        self.assertTrue(status["details"]["causes"][0]["message"].endswith(": must be empty"))

        # Through the Python client's own models: the ApiException carries the same Status.
        with self.assertRaises(ApiException) as cm:
            self.sar(path="/metrics")
        self.assertEqual(cm.exception.status, 422)
        self.assertEqual(json.loads(cm.exception.body)["details"]["causes"][0]["field"], "spec.user")

    def test_sar_wrong_field_type_is_a_bad_request(self):
        code, status = self.raw_sar({"user": 5, "nonResourceAttributes": {"path": "/metrics", "verb": "get"}})
        self.assertEqual((code, status["reason"]), (400, "BadRequest"))
        self.assertIn("cannot unmarshal number into Go struct field SubjectAccessReviewSpec.spec.user of type "
                      "string", status["message"])

    def test_kubectl_create_subject_access_review(self):
        path = os.path.join(self.tmp, "sar.json")
        with open(path, "w") as f:
            json.dump({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                       "spec": {"user": "metrics-reader", "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}},
                      f)
        out = json.loads(self.kubectl("create", "-f", path, "-o", "json", "--validate=false",
                                      kubeconfig=self.stack.kubeconfig).stdout)
        self.assertEqual(out["kind"], "SubjectAccessReview")
        self.assertEqual(out["spec"]["nonResourceAttributes"], {"path": "/metrics", "verb": "get"})
        self.assertTrue(out["status"]["allowed"])

    # --- the caller's own reviews ---
    def test_self_subject_access_review(self):
        api = kubernetes.client.AuthorizationV1Api(self.client(self.token_kubeconfig("mr-token")))
        body = lambda verb: kubernetes.client.V1SelfSubjectAccessReview(
            api_version="authorization.k8s.io/v1", kind="SelfSubjectAccessReview",
            spec=kubernetes.client.V1SelfSubjectAccessReviewSpec(
                non_resource_attributes=kubernetes.client.V1NonResourceAttributes(path="/metrics", verb=verb)))
        self.assertTrue(api.create_self_subject_access_review(body("get")).status.allowed)
        self.assertFalse(api.create_self_subject_access_review(body("post")).status.allowed)

    def test_kubectl_auth_can_i(self):
        mr = self.token_kubeconfig("mr-token")
        self.assertEqual(self.kubectl("auth", "can-i", "get", "/metrics", kubeconfig=mr).stdout.strip(), "yes")
        r = self.kubectl("auth", "can-i", "post", "/metrics", kubeconfig=mr, check=False)
        self.assertEqual((r.returncode, r.stdout.strip()), (1, "no"))
        r = self.kubectl("auth", "can-i", "get", "/metrics", kubeconfig=self.token_kubeconfig("nv-token"), check=False)
        self.assertEqual((r.returncode, r.stdout.strip()), (1, "no"))
        self.assertEqual(self.kubectl("auth", "can-i", "list", "nodes", kubeconfig=self.token_kubeconfig("nv-token"))
                         .stdout.strip(), "yes")
        # The admin's certificate user is unlisted: everything.
        self.assertEqual(self.kubectl("auth", "can-i", "post", "/webhook").stdout.strip(), "yes")

    @unittest.skipIf(kubectl_version() < (1, 28), "kubectl auth whoami (SelfSubjectReview v1) is from 1.28")
    def test_kubectl_auth_whoami(self):
        out = json.loads(self.kubectl("auth", "whoami", "-o", "json",
                                      kubeconfig=self.token_kubeconfig("grp-token")).stdout)
        self.assertEqual(out["kind"], "SelfSubjectReview")
        self.assertEqual(out["status"]["userInfo"], {"username": "alice",
                                                     "groups": ["team-a", "team-b", "system:authenticated"]})
        out = json.loads(self.kubectl("auth", "whoami", "-o", "json").stdout)
        self.assertEqual(out["status"]["userInfo"]["username"], "admin")
        self.assertIn("sim", out["status"]["userInfo"]["groups"], "a certificate's O is its user's group")

    # --- discovery, and RBAC on the request path ---
    def test_discovery(self):
        out = self.kubectl("api-resources", "--api-group=authentication.k8s.io", "-o", "name").stdout.split()
        self.assertEqual(sorted(out), ["selfsubjectreviews.authentication.k8s.io", "tokenreviews.authentication.k8s.io"])
        out = self.kubectl("api-resources", "--api-group=authorization.k8s.io", "-o", "wide").stdout
        self.assertIn("subjectaccessreviews", out)
        self.assertIn("selfsubjectaccessreviews", out)
        resources = kubernetes.client.AuthenticationV1Api(self.controller).get_api_resources().resources
        tr = [r for r in resources if r.name == "tokenreviews"][0]
        self.assertEqual((tr.kind, tr.namespaced, tr.verbs), ("TokenReview", False, ["create"]))

    def test_listed_users_get_paths_their_rules_or_the_defaults_grant(self):
        nv = self.client(self.token_kubeconfig("nv-token"))
        # /version: system:public-info-viewer, bound to every authenticated user.
        self.assertEqual(kubernetes.client.VersionApi(nv).get_code().major, "1")
        with self.assertRaises(ApiException) as cm:
            nv.call_api("/metrics", "GET", auth_settings=["BearerToken"], _preload_content=False)
        self.assertEqual(cm.exception.status, 403)
        status = json.loads(cm.exception.body)
        self.assertEqual(status["message"], 'forbidden: User "node-viewer" cannot get path "/metrics"')
        # metrics-reader may: the simulator serves no /metrics, so it is not found.
        mr = self.client(self.token_kubeconfig("mr-token"))
        with self.assertRaises(ApiException) as cm:
            mr.call_api("/metrics", "GET", auth_settings=["BearerToken"], _preload_content=False)
        self.assertEqual(cm.exception.status, 404)


if __name__ == "__main__":
    unittest.main()
