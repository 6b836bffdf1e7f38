"""deploy/ and examples/: the manifests render and have the fields a production install needs,
the default rules load in the real binary, the Prometheus rules pass promtool, the image carries
the binary's libraries, and push.sh pushes the kubelet's memory.available for cgroup v1 and v2,
which the default rules then turn into a label."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import yaml

from harness import CONTROLLER, KUSTOMIZE_KUBECTL, Controller, Stack, http, kubectl_version, kustomize, wait_until

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOY = os.path.join(ROOT, "deploy")
BASE = os.path.join(DEPLOY, "base")
PUSH = os.path.join(BASE, "push.sh")


def render():
    return kustomize(".")


def find(docs, kind, name=None):
    got = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"].startswith(name))]
    assert got, "no %s %s" % (kind, name)
    return got[0]


def check_container_hardening(test, pod_spec, container):
    sc = container["securityContext"]
    test.assertTrue(sc["readOnlyRootFilesystem"])
    test.assertFalse(sc["allowPrivilegeEscalation"])
    test.assertEqual(sc["capabilities"]["drop"], ["ALL"])
    test.assertTrue(pod_spec["securityContext"]["runAsNonRoot"])
    test.assertNotEqual(pod_spec["securityContext"].get("runAsUser", 0), 0)
    for k in ("requests", "limits"):
        test.assertIn("memory", container["resources"][k])
        test.assertIn("cpu", container["resources"][k])


def check_probes_on_their_own_port(test, dep):
    """The kubelet's probes go to -probeaddr's listener (a container port named `probes`, not the
    web port): /status for readiness, /healthz for liveness, plain HTTP."""
    c = dep["spec"]["template"]["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    test.assertEqual(ports["probes"], 9001)
    test.assertEqual(len(set(ports.values())), len(ports), ports)
    test.assertIn("-probeaddr=:%d" % ports["probes"], c["args"])
    test.assertIn("-webaddr=:9000", c["args"])
    for probe, path in (("readinessProbe", "/status"), ("livenessProbe", "/healthz")):
        test.assertEqual(c[probe]["httpGet"], {"path": path, "port": "probes"}, probe)  # no scheme: HTTP


class RenderedManifestsTest(unittest.TestCase):
    """deploy/rendered/ (for kubectl before 1.22, which cannot build deploy/) holds exactly what
    `kubectl kustomize` builds from each kustomization: the same objects, compared as parsed
    documents so that kustomize versions that order or format them differently agree."""

    def test_rendered_files_equal_the_live_build(self):
        if kubectl_version() < KUSTOMIZE_KUBECTL:
            self.skipTest("NOT CHECKED: kubectl %d.%d cannot build deploy/ (kustomize before 4.1); deploy/rendered/ "
                          "is compared with the live build only with kubectl >= %d.%d" %
                          (kubectl_version() + KUSTOMIZE_KUBECTL))
        key = lambda d: (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
        names = {".": "default", "admission": "admission", "admission-taint": "admission-taint"}
        names.update({os.path.join("overlays", o): o for o in os.listdir(os.path.join(DEPLOY, "overlays"))})
        self.assertEqual(sorted(os.listdir(os.path.join(DEPLOY, "rendered"))),
                         sorted(n + ".yaml" for n in names.values()), "one rendered file per kustomization")
        for kustomization, name in names.items():
            with open(os.path.join(DEPLOY, "rendered", name + ".yaml")) as f:
                rendered = sorted((d for d in yaml.safe_load_all(f) if d), key=key)
            self.assertEqual(rendered, sorted(kustomize(kustomization), key=key),
                             "deploy/rendered/%s.yaml is stale: run scripts/render-deploy.sh" % name)


class ManifestsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = render()

    def test_everything_namespaced_and_present(self):
        kinds = sorted(d["kind"] for d in self.docs)
        self.assertEqual(kinds, sorted(["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
                                        "ConfigMap", "Deployment", "Deployment", "Service", "Service", "DaemonSet",
                                        "Role", "Role", "RoleBinding", "PodDisruptionBudget"]))
        for d in self.docs:
            if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
                self.assertEqual(d["metadata"]["namespace"], "dynamic-scheduler", d["metadata"]["name"])

    def test_the_explain_role_reads_the_service_proxy_only_and_is_bound_to_nobody(self):
        """kubectl dynamic-scheduler's Role (docs/operating.md): get on services/proxy of the
        controller's Service only, by the ids the API server authorizes (the Service with its port
        name and scheme); bound to nobody: whoever installs decides who may ask."""
        role = find(self.docs, "Role", "dynamic-scheduler-explain")
        self.assertEqual(role["rules"], [{"apiGroups": [""], "resources": ["services/proxy"],
                                          "resourceNames": ["dynamic-scheduler", "dynamic-scheduler:http",
                                                            "http:dynamic-scheduler:http",
                                                            "https:dynamic-scheduler:http"],
                                          "verbs": ["get"]}])
        service = find(self.docs, "Service", "dynamic-scheduler")
        self.assertIn("http", [p["name"] for p in service["spec"]["ports"]], "the port the names say")
        self.assertFalse([d for d in self.docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")
                          and d["roleRef"]["name"] == "dynamic-scheduler-explain"])

    def test_rbac_is_least_privilege(self):
        role = find(self.docs, "ClusterRole")
        self.assertEqual(role["rules"], [{"apiGroups": [""], "resources": ["nodes"],
                                          "verbs": ["get", "list", "watch", "patch"]},
                                         {"apiGroups": ["events.k8s.io"], "resources": ["events"],
                                          "verbs": ["create", "patch"]}])
        text = json.dumps(role["rules"][0])
        for forbidden in ("secrets", "*", "delete", "update", "create"):
            self.assertNotIn('"%s"' % forbidden, text)
        binding = find(self.docs, "ClusterRoleBinding")
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": "dynamic-scheduler",
                                                "namespace": "dynamic-scheduler"}])
        self.assertEqual(binding["roleRef"]["name"], "dynamic-scheduler")
        # Leader election: one lease, in the controller's own namespace.
        role = find(self.docs, "Role", "dynamic-scheduler-leader-election")
        self.assertEqual(role["metadata"]["namespace"], "dynamic-scheduler")
        self.assertEqual(role["rules"], [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["dynamic-scheduler"],
             "verbs": ["get", "update"]}])
        rb = find(self.docs, "RoleBinding", "dynamic-scheduler-leader-election")
        self.assertEqual((rb["roleRef"]["kind"], rb["roleRef"]["name"]), ("Role", role["metadata"]["name"]))
        self.assertEqual(rb["subjects"], binding["subjects"])

    def test_rebalance_rbac_is_opt_in_and_evicts_only_through_the_eviction_api(self):
        self.assertFalse([d for d in self.docs if "rebalance" in d["metadata"]["name"]],
                         "not installed unless rebalancing is turned on")
        with open(os.path.join(DEPLOY, "overlays", "rebalance", "rbac-rebalance.yaml")) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        role = find(docs, "ClusterRole", "dynamic-scheduler-rebalance")
        self.assertEqual(role["rules"], [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["persistentvolumeclaims", "persistentvolumes"],
             "verbs": ["get"]},
            {"apiGroups": ["apps"], "resources": ["deployments", "replicasets", "statefulsets", "daemonsets"],
             "verbs": ["get"]},
            {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": ["list"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]}])
        binding = find(docs, "ClusterRoleBinding", "dynamic-scheduler-rebalance")
        self.assertEqual(binding["roleRef"]["name"], "dynamic-scheduler-rebalance")
        self.assertEqual(binding["subjects"], find(self.docs, "ClusterRoleBinding")["subjects"])
        # The eviction ledger: get and update of its one lease, in the controller's namespace only.
        ledger = find(docs, "Role", "dynamic-scheduler-eviction-ledger")
        self.assertEqual(ledger["rules"], [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                                            "resourceNames": ["dynamic-scheduler-evictions"],
                                            "verbs": ["get", "update"]}])
        self.assertEqual(find(docs, "RoleBinding", "dynamic-scheduler-eviction-ledger")["subjects"],
                         find(self.docs, "ClusterRoleBinding")["subjects"])

    def test_controller_deployment(self):
        dep = find(self.docs, "Deployment", "dynamic-scheduler")
        self.assertEqual(dep["spec"]["replicas"], 2, "leader election: one writer, one standby")
        self.assertEqual(dep["spec"]["strategy"]["type"], "RollingUpdate")
        pod = dep["spec"]["template"]["spec"]
        self.assertEqual(pod["serviceAccountName"], "dynamic-scheduler")
        c = pod["containers"][0]
        self.assertIn("-leader_elect", c["args"])
        env = {e["name"]: e for e in c["env"]}
        self.assertEqual(env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.namespace")
        anti = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
        self.assertEqual(anti["podAffinityTerm"]["labelSelector"]["matchLabels"], dep["spec"]["selector"]["matchLabels"])
        pdb = find(self.docs, "PodDisruptionBudget")
        self.assertEqual((pdb["spec"]["minAvailable"], pdb["spec"]["selector"]), (1, dep["spec"]["selector"]))
        check_container_hardening(self, pod, c)
        check_probes_on_their_own_port(self, dep)
        self.assertIn("-r=/etc/dynamic-scheduler/rule.yaml", c["args"])
        mount = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/dynamic-scheduler"][0]
        vol = [v for v in pod["volumes"] if v["name"] == mount["name"]][0]
        cm = find(self.docs, "ConfigMap", "dynamic-scheduler-rules")
        self.assertEqual(vol["configMap"]["name"], cm["metadata"]["name"], "mounts the generated ConfigMap")
        self.assertIn("rule.yaml", cm["data"])
        svc = find(self.docs, "Service", "dynamic-scheduler")
        self.assertEqual(svc["spec"]["ports"], [{"name": "http", "port": 9000, "targetPort": "http"}],
                         "the web port only: the probe port is the kubelet's")
        self.assertEqual(svc["spec"]["selector"], dep["spec"]["selector"]["matchLabels"])
        # The default install is the demo: plain HTTP, no authentication, no NetworkPolicy (the kinds
        # above), and the annotations a generic scrape job follows.
        self.assertFalse([a for a in c["args"] if a.startswith("-web_")], c["args"])
        self.assertEqual(svc["metadata"]["annotations"], {"prometheus.io/scrape": "true", "prometheus.io/port": "9000"})

    def test_configmap_rules_load_in_the_real_binary(self):
        cm = find(self.docs, "ConfigMap", "dynamic-scheduler-rules")
        self.assertIn("3 rules", check_config(self, cm["data"]["rule.yaml"]))

    def test_pushgateway_and_daemonset(self):
        gw = find(self.docs, "Deployment", "pushgateway")
        check_container_hardening(self, gw["spec"]["template"]["spec"], gw["spec"]["template"]["spec"]["containers"][0])
        self.assertIn("--persistence.file=", gw["spec"]["template"]["spec"]["containers"][0]["args"])
        ds = find(self.docs, "DaemonSet")
        pod = ds["spec"]["template"]["spec"]
        c = pod["containers"][0]
        check_container_hardening(self, pod, c)
        env = {e["name"]: e for e in c["env"]}
        self.assertEqual(env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName")
        self.assertEqual(env["NODE_IP"]["valueFrom"]["fieldRef"]["fieldPath"], "status.hostIP")
        self.assertEqual(env["PUSHGATEWAY_URL"]["value"], "http://pushgateway:9091")
        for m in c["volumeMounts"]:
            self.assertTrue(m["readOnly"], m)
        script_cm = [v for v in pod["volumes"] if v["name"] == "script"][0]["configMap"]["name"]
        with open(PUSH) as f:
            self.assertEqual(find(self.docs, "ConfigMap", "push-script")["data"]["push.sh"], f.read())
        self.assertTrue(script_cm.startswith("push-script"))


class ExamplesTest(unittest.TestCase):
    def affinity_term(self, affinity):
        terms = affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(len(terms), 1)
        self.assertTrue(1 <= terms[0]["weight"] <= 100)
        return terms[0]["preference"]["matchExpressions"][0]

    def test_affinity_snippet_and_deployment(self):
        with open(os.path.join(ROOT, "examples", "affinity.yaml")) as f:
            expr = self.affinity_term(yaml.safe_load(f)["affinity"])
        self.assertEqual(expr, {"key": "status", "operator": "NotIn", "values": ["presure"]})
        with open(os.path.join(ROOT, "examples", "deployment.yaml")) as f:
            dep = yaml.safe_load(f)
        self.assertEqual(self.affinity_term(dep["spec"]["template"]["spec"]["affinity"]), expr)

    def test_sample_rule_files_load(self):
        for name, want in [("rule-legacy.yaml", "legacy format"), ("rule-hysteresis.yaml", "current format"),
                           ("rule-memory-available.yaml", "current format"),
                           ("rule-mimir.yaml", "current format"),
                           ("rule-relative.yaml", "cpu-skew: > mean + 20 (clears at mean + 10, for 60 s"),
                           ("rule-relative.yaml", "memory_available: < mean - "),
                           ("rule-prediction.yaml", "predicted: the daily P95 of the last 8 finished days "
                                                    "(Europe/Berlin), half-life 2 d"),
                           ("rule-taint.yaml", "mark status=presure and taint example.com/hot=true:PreferNoSchedule"),
                           ("rule-graded.yaml", "levels, coolest first: warm (status=warm), hot (status=presure)"),
                           ("rule-psi.yaml", "memory_pressure: > 10 (clears at 5, for 60 s): "
                                             "node:dynamic_scheduler_memory_pressure_some:percent"),
                           ("rule-rebalance.yaml", "rebalance: evicts from nodes marked for 120 s"),
                           ("rule-balance.yaml", "by the rules cpu-balance (cpu, balance: to the mean) "
                                                 "cpu-full (cpu)"),
                           ("rule-balance-requests.yaml", "cpu-requests: > mean + 20 (clears at mean + 10"),
                           ("rule-rebalance.yaml", "drains nodes below cpu 15 % and memory 25 % for 3600 s "
                                                   "(marked status=underused, 1 at once)")]:
            r = subprocess.run([CONTROLLER, "-r", os.path.join(ROOT, "examples", name), "-check_config"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, name + ": " + r.stderr)
            self.assertIn(want, r.stdout)


class TaintOverlayTest(unittest.TestCase):
    """deploy/overlays/taint: the base install in taint mode. It renders offline, replaces only the
    rule file (which the Deployment then mounts), marks with the taint taint mode's admission policy allows,
    keeps the base's rules, and loads in the real binary."""

    def test_overlay_renders_and_loads(self):
        docs = render_overlay("taint")
        base = render()
        self.assertEqual(sorted((d["kind"], d["metadata"]["name"].split("-")[0]) for d in docs),
                         sorted((d["kind"], d["metadata"]["name"].split("-")[0]) for d in base + lock_down_objects()),
                         "the same objects as the base, and the web port's lock-down")
        cm = find(docs, "ConfigMap", "dynamic-scheduler-rules")
        self.assertEqual(cm["metadata"]["namespace"], "dynamic-scheduler")
        dep = find(docs, "Deployment", "dynamic-scheduler")
        mounted = [v["configMap"]["name"] for v in dep["spec"]["template"]["spec"]["volumes"] if "configMap" in v]
        self.assertIn(cm["metadata"]["name"], mounted, "the Deployment mounts the overlay's rule file")
        rules = yaml.safe_load(cm["data"]["rule.yaml"])
        self.assertEqual(rules["mark"], "taint")
        self.assertEqual(rules["taint"]["effect"], "PreferNoSchedule")
        # The admission policy of taint mode (deploy/admission-taint) allows this taint.
        policy = find(kustomize("admission-taint"), "ValidatingAdmissionPolicy")
        variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
        self.assertEqual(variables["taintKey"], "'%s'" % rules["taint"]["key"])
        self.assertEqual(variables["mayTaint"], "true")
        with open(os.path.join(BASE, "rule.yaml")) as f:
            self.assertEqual(rules["rules"], yaml.safe_load(f)["rules"], "keep the rules in step with deploy/base")
        self.assertIn("taint dynamic-scheduler.io/pressure=presure:PreferNoSchedule",
                      check_config(self, cm["data"]["rule.yaml"]))


class PrometheusConfigTest(unittest.TestCase):
    def test_recording_rules_pass_promtool_unit_tests(self):
        d = os.path.join(DEPLOY, "prometheus")
        r = subprocess.run(["promtool", "test", "rules", "recording-rules_test.yml"], cwd=d, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run(["promtool", "check", "rules", "recording-rules.yml"], cwd=d, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_psi_example_rules_pass_promtool_unit_tests(self):
        # examples/rule-psi.yaml queries what examples/psi-recording-rules.yml records.
        d = os.path.join(ROOT, "examples")
        r = subprocess.run(["promtool", "test", "rules", "psi-recording-rules_test.yml"], cwd=d, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run(["promtool", "check", "rules", "psi-recording-rules.yml"], cwd=d, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(d, "psi-recording-rules.yml")) as f:
            recorded = {x["record"] for g in yaml.safe_load(f)["groups"] for x in g["rules"]}
        with open(os.path.join(d, "rule-psi.yaml")) as f:
            queries = [x["query"] for x in yaml.safe_load(f)["rules"]]
        self.assertIn("node:dynamic_scheduler_memory_pressure_some:percent", queries)
        self.assertTrue(set(queries) & recorded)

    def test_requests_example_rules_pass_promtool_unit_tests(self):
        # examples/rule-balance-requests.yaml queries what examples/requests-recording-rules.yml
        # records from kube-state-metrics: requests per node and per pod, finished pods left out.
        d = os.path.join(ROOT, "examples")
        r = subprocess.run(["promtool", "test", "rules", "requests-recording-rules_test.yml"], cwd=d,
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(d, "requests-recording-rules.yml")) as f:
            recorded = {x["record"] for g in yaml.safe_load(f)["groups"] for x in g["rules"]}
        with open(os.path.join(d, "rule-balance-requests.yaml")) as f:
            cfg = yaml.safe_load(f)
        self.assertIn(cfg["rules"][0]["query"], recorded)
        self.assertIn(cfg["rebalance"]["podUsage"]["cpu"], recorded)

    def test_scrape_config(self):
        with open(os.path.join(DEPLOY, "prometheus", "scrape-config.yml")) as f:
            cfg = yaml.safe_load(f)
        jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
        node = jobs["kubernetes-node-exporter"]
        self.assertEqual(node["kubernetes_sd_configs"], [{"role": "node"}])
        relabel = node["relabel_configs"][0]
        self.assertEqual(relabel["source_labels"], ["__meta_kubernetes_node_address_InternalIP"])
        self.assertEqual((relabel["target_label"], relabel["replacement"]), ("__address__", "${1}:9100"))
        self.assertEqual(node["relabel_configs"][1]["target_label"], "node")
        self.assertTrue(jobs["pushgateway"]["honor_labels"])
        # Debian's Prometheus is built without kubernetes_sd; promtool checks the rest.
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "p.yml")
            with open(p, "w") as f:
                yaml.safe_dump({"scrape_configs": [jobs["pushgateway"]]}, f)
            r = subprocess.run(["promtool", "check", "config", p], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_default_rules_query_the_recording_rules(self):
        with open(os.path.join(BASE, "rule.yaml")) as f:
            queries = {r["query"] for r in yaml.safe_load(f)["rules"]}
        with open(os.path.join(DEPLOY, "prometheus", "recording-rules.yml")) as f:
            recorded = {r["record"] for g in yaml.safe_load(f)["groups"] for r in g["rules"]}
        self.assertEqual(queries, recorded)


def render_overlay(name):
    return kustomize(os.path.join("overlays", name))


def check_config(test, rule_text):
    """-check_config of the real binary on a rule file's text: its stdout."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(rule_text)
        f.flush()
        r = subprocess.run([CONTROLLER, "-r", f.name, "-check_config"], capture_output=True, text=True)
    test.assertEqual(r.returncode, 0, r.stderr)
    return r.stdout


class OverlaysTest(unittest.TestCase):
    """deploy/overlays/: each variant renders offline on top of deploy/base and changes only what it
    says."""

    def test_every_overlay_renders_with_the_whole_base(self):
        base = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"].rsplit("-", 1)[0])
                for d in render()}
        names = sorted(os.listdir(os.path.join(DEPLOY, "overlays")))
        self.assertTrue({"production", "dry-run", "rebalance", "taint", "job", "cronjob"} <= set(names), names)
        for name in names:
            with self.subTest(overlay=name):
                got = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"].rsplit("-", 1)[0])
                       for d in render_overlay(name)}
                want = base - ONE_PASS_DROPS if name in ONE_PASS_OVERLAYS else base
                self.assertLessEqual(want, got, "an overlay keeps every resource of the base")

    def test_dry_run_only_adds_the_flag_and_runs_one_replica(self):
        base, dry = find(render(), "Deployment", "dynamic-scheduler"), find(render_overlay("dry-run"), "Deployment",
                                                                             "dynamic-scheduler")
        dry = without_lock_down(self, dry)
        args = dry["spec"]["template"]["spec"]["containers"][0]["args"]
        self.assertEqual(args, base["spec"]["template"]["spec"]["containers"][0]["args"] + ["-dry_run"])
        self.assertEqual(dry["spec"]["replicas"], 1)
        dry["spec"]["replicas"] = base["spec"]["replicas"]
        dry["spec"]["template"]["spec"]["containers"][0]["args"] = args[:-1]
        self.assertEqual(dry, base)

    def test_production_is_the_default_install_locked_down(self):
        base, prod = render(), render_overlay("production")
        self.assertEqual(without_lock_down(self, find(prod, "Deployment", "dynamic-scheduler")),
                         find(base, "Deployment", "dynamic-scheduler"))
        key = lambda d: (d["kind"], d["metadata"]["name"])
        self.assertEqual(sorted(map(key, prod)), sorted(map(key, base + lock_down_objects())))
        self.assertEqual(sorted(key(d) for d in base if d not in prod),
                         [("Deployment", "dynamic-scheduler"), ("Service", "dynamic-scheduler")],
                         "everything else of the base as it is")

    def test_rebalance_adds_its_rbac_and_rules_and_starts_dry(self):
        docs = render_overlay("rebalance")
        role = find(docs, "ClusterRole", "dynamic-scheduler-rebalance")
        self.assertNotIn("delete", [v for r in role["rules"] for v in r["verbs"]])
        binding = find(docs, "ClusterRoleBinding", "dynamic-scheduler-rebalance")
        self.assertEqual(binding["subjects"][0]["namespace"], "dynamic-scheduler")
        cms = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("dynamic-scheduler-rules")]
        self.assertEqual(len(cms), 1, "the overlay's rule file replaces the base's")
        dep = find(docs, "Deployment", "dynamic-scheduler")
        mounted = [v["configMap"]["name"] for v in dep["spec"]["template"]["spec"]["volumes"] if "configMap" in v]
        self.assertIn(cms[0]["metadata"]["name"], mounted)
        text = cms[0]["data"]["rule.yaml"]
        self.assertIn("rebalance: DRY RUN", check_config(self, text))
        rules = yaml.safe_load(text)
        with open(os.path.join(BASE, "rule.yaml")) as f:
            base_rules = yaml.safe_load(f)
        del rules["rebalance"]
        self.assertEqual(rules, base_rules, "the same rules as deploy/base/rule.yaml, plus rebalance:")


# The overlays that run one pass (-once) as a Job or a CronJob instead of the controller's
# Deployment: they drop the Deployment, its Service and its PodDisruptionBudget.
ONE_PASS_OVERLAYS = {"job": "Job", "cronjob": "CronJob"}
ONE_PASS_DROPS = {("Deployment", "dynamic-scheduler", "dynamic"), ("Service", "dynamic-scheduler", "dynamic"),
                  ("PodDisruptionBudget", "dynamic-scheduler", "dynamic")}


class OnePassOverlaysTest(unittest.TestCase):
    """deploy/overlays/job and deploy/overlays/cronjob: `-once` from a Job, and every 2 minutes from a
    CronJob with concurrencyPolicy: Forbid (the guard: -once runs no leader election), with the base's
    ServiceAccount, RBAC, rule ConfigMap and hardening, and nothing of the web port."""

    @classmethod
    def setUpClass(cls):
        cls.base = render()
        cls.overlays = {o: render_overlay(o) for o in ONE_PASS_OVERLAYS}

    def workload(self, name):
        docs = self.overlays[name]
        got = [d for d in docs if d["kind"] == ONE_PASS_OVERLAYS[name]]
        self.assertEqual(len(got), 1, name)
        return got[0]

    def test_the_cronjob_runs_every_two_minutes_one_at_a_time(self):
        cj = self.workload("cronjob")
        self.assertEqual(cj["apiVersion"], "batch/v1")
        spec = cj["spec"]
        self.assertEqual(spec["schedule"], "*/2 * * * *")
        self.assertEqual(spec["concurrencyPolicy"], "Forbid")
        self.assertGreaterEqual(spec["successfulJobsHistoryLimit"], 1)
        self.assertGreaterEqual(spec["failedJobsHistoryLimit"], 1)
        job = spec["jobTemplate"]["spec"]
        self.assertEqual(job["backoffLimit"], 0, "a failed pass waits for the next run")
        self.assertLess(job["activeDeadlineSeconds"], 120, "a pass ends before the next is due")

    def test_the_job_is_bounded(self):
        job = self.workload("job")
        self.assertEqual(job["apiVersion"], "batch/v1")
        self.assertIn("backoffLimit", job["spec"])
        self.assertGreater(job["spec"]["activeDeadlineSeconds"], 0)

    def test_the_pod_runs_once_hardened_with_the_base_account_and_rules(self):
        base_pod = find(self.base, "Deployment", "dynamic-scheduler")["spec"]["template"]["spec"]
        for name, docs in self.overlays.items():
            with self.subTest(overlay=name):
                pod = pod_spec(self.workload(name))
                self.assertEqual(pod["restartPolicy"], "Never")
                self.assertEqual(pod["serviceAccountName"], base_pod["serviceAccountName"])
                self.assertEqual(pod["securityContext"], base_pod["securityContext"])
                (c,) = pod["containers"]
                check_container_hardening(self, pod, c)
                self.assertEqual(c["securityContext"], base_pod["containers"][0]["securityContext"])
                self.assertIn("-once", c["args"])
                self.assertIn("-r=/etc/dynamic-scheduler/rule.yaml", c["args"])
                self.assertFalse([a for a in c["args"] if a.split("=")[0] in
                                  ("-leader_elect", "-webaddr", "-probeaddr") or a.startswith("-web_")], c["args"])
                for absent in ("ports", "readinessProbe", "livenessProbe"):
                    self.assertNotIn(absent, c)
                mount = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/dynamic-scheduler"][0]
                vol = [v for v in pod["volumes"] if v["name"] == mount["name"]][0]
                cm = find(docs, "ConfigMap", "dynamic-scheduler-rules")
                self.assertEqual(vol["configMap"]["name"], cm["metadata"]["name"], "mounts the generated ConfigMap")
                self.assertEqual(cm["data"], find(self.base, "ConfigMap", "dynamic-scheduler-rules")["data"])
                self.assertEqual(self.workload(name)["metadata"]["namespace"], "dynamic-scheduler")

    def test_the_same_rbac_and_no_web_port(self):
        rbac = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
        key = lambda d: (d["kind"], d["metadata"]["name"])
        for name, docs in self.overlays.items():
            with self.subTest(overlay=name):
                self.assertEqual(sorted((d for d in docs if d["kind"] in rbac), key=key),
                                 sorted((d for d in self.base if d["kind"] in rbac), key=key))
                names = {key(d) for d in docs}
                for gone in (("Deployment", "dynamic-scheduler"), ("Service", "dynamic-scheduler"),
                             ("PodDisruptionBudget", "dynamic-scheduler")):
                    self.assertNotIn(gone, names, "a pass serves no page, /metrics or webhook")
                self.assertEqual(sorted(key(d) for d in docs if d["kind"] == "NetworkPolicy"), [])


COMPONENTS = os.path.join(DEPLOY, "components")
WEB_TLS_SECRET = "dynamic-scheduler-web-tls"
WEB_TLS_DIR = "/var/run/secrets/dynamic-scheduler/web-tls"
LOCK_DOWN_ARGS = ["-web_auth=kubernetes", "-web_tls_cert_file=%s/tls.crt" % WEB_TLS_DIR,
                  "-web_tls_key_file=%s/tls.key" % WEB_TLS_DIR]
# What the overlays' prometheus and alertmanager are: the Prometheus Operator's pod labels
# (kube-prometheus, kube-prometheus-stack), kube-prometheus' service accounts, in "monitoring"
# (where deploy/base/rule.yaml's prometheus.url points).
MONITORING = "monitoring"


def lock_down_objects():
    """The objects deploy/components/ add to an install: the web port's RBAC and the NetworkPolicy."""
    docs = []
    for rel in ("web-auth/rbac-web.yaml", "network-policy/networkpolicy.yaml"):
        with open(os.path.join(COMPONENTS, rel)) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    return docs


def without_lock_down(test, dep):
    """An overlay's controller Deployment with what deploy/components/web-auth changes checked and
    taken out again: the three flags, the web port's name (https), the TLS Secret's volume and its
    read-only mount (a directory: a subPath mount would never see a renewed certificate)."""
    dep = json.loads(json.dumps(dep))
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    for a in LOCK_DOWN_ARGS:
        test.assertEqual(c["args"].count(a), 1, a)
        c["args"].remove(a)
    web = [p for p in c["ports"] if p["containerPort"] == 9000]
    test.assertEqual(web, [{"name": "https", "containerPort": 9000}])
    web[0]["name"] = "http"
    mounts = [m for m in c["volumeMounts"] if m["name"] == "web-tls"]
    test.assertEqual(mounts, [{"name": "web-tls", "mountPath": WEB_TLS_DIR, "readOnly": True}])
    c["volumeMounts"].remove(mounts[0])
    vols = [v for v in pod["volumes"] if v["name"] == "web-tls"]
    test.assertEqual(vols, [{"name": "web-tls", "secret": {"secretName": WEB_TLS_SECRET}}])
    pod["volumes"].remove(vols[0])
    return dep


def container_args(docs):
    """(name, args, env) of every container of every workload in a rendered install."""
    out = []
    for d in docs:
        pod = pod_spec(d)
        if pod is not None:
            for c in pod["containers"]:
                out.append((d["metadata"]["name"], c.get("args", []), c.get("env", [])))
    return out


def pod_spec(d):
    """The pod spec of a workload (a CronJob's through its job template), or None."""
    if d["kind"] in ("Deployment", "DaemonSet", "StatefulSet", "Job"):
        return d["spec"]["template"]["spec"]
    if d["kind"] == "CronJob":
        return d["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return None


def install_names():
    """Every kustomization that installs the controller: "." (the default) and each overlay."""
    return ["."] + [os.path.join("overlays", o) for o in sorted(os.listdir(os.path.join(DEPLOY, "overlays")))]


class LockedDownOverlaysTest(unittest.TestCase):
    """Every overlay locks the web port down (deploy/components/): TLS from the Secret, -web_auth=kubernetes
    with its RBAC, a NetworkPolicy that lets only Prometheus and Alertmanager reach the web port, and
    the probes on a port of their own that only the pod's node reaches (docs/operating.md)."""

    @classmethod
    def setUpClass(cls):
        # The one-pass overlays serve no web port: nothing to lock down (OnePassOverlaysTest).
        cls.overlays = {o: render_overlay(o) for o in sorted(os.listdir(os.path.join(DEPLOY, "overlays")))
                        if o not in ONE_PASS_OVERLAYS}

    def test_every_overlay_has_tls_auth_and_the_probe_port(self):
        for name, docs in self.overlays.items():
            with self.subTest(overlay=name):
                dep = find(docs, "Deployment", "dynamic-scheduler")
                check_probes_on_their_own_port(self, dep)
                without_lock_down(self, dep)  # checks the flags, the volume and the mount
                svc = find(docs, "Service", "dynamic-scheduler")
                self.assertEqual(svc["spec"]["ports"], [{"name": "https", "port": 9000, "targetPort": "https"}],
                                 "TLS on the web port; the probe port stays off the Service")
                self.assertNotIn("annotations", svc["metadata"],
                                 "no prometheus.io/ annotations: a generic job sends no token")

    def test_network_policy(self):
        for name, docs in self.overlays.items():
            with self.subTest(overlay=name):
                dep = find(docs, "Deployment", "dynamic-scheduler")
                nps = [d for d in docs if d["kind"] == "NetworkPolicy"]
                self.assertEqual(len(nps), 1)
                np = nps[0]
                self.assertEqual(np["apiVersion"], "networking.k8s.io/v1")
                self.assertEqual(np["metadata"]["namespace"], dep["metadata"]["namespace"])
                spec = np["spec"]
                self.assertEqual(spec["podSelector"], {"matchLabels": dep["spec"]["selector"]["matchLabels"]})
                # Ingress only: egress (the API server, Prometheus, DNS) stays open.
                self.assertEqual(spec["policyTypes"], ["Ingress"])
                self.assertNotIn("egress", spec)
                web = [p["containerPort"] for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]
                       if p["name"] == "https"]
                # One rule: the web port, from Prometheus' and Alertmanager's pods (namespace AND pod
                # selector in one entry each). Nothing for the probe port: its only client, the
                # kubelet, comes from the pod's own node, which a NetworkPolicy always lets in.
                self.assertEqual(spec["ingress"], [{
                    "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": MONITORING}},
                              "podSelector": {"matchLabels": {"app.kubernetes.io/name": app}}}
                             for app in ("prometheus", "alertmanager")],
                    "ports": [{"protocol": "TCP", "port": web[0]}]}])

    def test_web_auth_rbac(self):
        for name, docs in self.overlays.items():
            with self.subTest(overlay=name):
                sa = find(docs, "ServiceAccount")["metadata"]
                me = {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}
                roles = {d["metadata"]["name"]: d["rules"] for d in docs if d["kind"] == "ClusterRole"}
                bindings = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ClusterRoleBinding"}
                # The controller asks the API server about each caller, and may do nothing else more.
                self.assertEqual(roles["dynamic-scheduler-web-auth"], [
                    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                    {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
                     "verbs": ["create"]}])
                self.assertEqual(bindings["dynamic-scheduler-web-auth"]["subjects"], [me])
                # Readers: exactly what the SubjectAccessReviews ask (web/access_policy.h): get on the
                # URL /metrics; for the rest, the Service's proxy subresource in the controller's
                # namespace (get to read, create to post), named as the controller reviews it.
                self.assertEqual(roles["dynamic-scheduler-metrics-reader"],
                                 [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
                ns_roles = {(d["metadata"]["namespace"], d["metadata"]["name"]): d["rules"]
                            for d in docs if d["kind"] == "Role"}
                ns_bindings = {(d["metadata"]["namespace"], d["metadata"]["name"]): d
                               for d in docs if d["kind"] == "RoleBinding"}
                svc = find(docs, "Service")
                self.assertEqual(ns_roles[(sa["namespace"], "dynamic-scheduler-viewer")], [
                    {"apiGroups": [""], "resources": ["services/proxy"],
                     "resourceNames": [svc["metadata"]["name"]],
                     "verbs": ["get"]}])
                self.assertEqual(ns_roles[(sa["namespace"], "dynamic-scheduler-webhook")], [
                    {"apiGroups": [""], "resources": ["services/proxy"],
                     "resourceNames": [svc["metadata"]["name"]], "verbs": ["create"]}])
                self.assertEqual(bindings["dynamic-scheduler-metrics-reader"]["subjects"],
                                 [{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": MONITORING}])
                hook = ns_bindings[(sa["namespace"], "dynamic-scheduler-webhook")]
                self.assertEqual(hook["subjects"],
                                 [{"kind": "ServiceAccount", "name": "alertmanager-main", "namespace": MONITORING}])
                self.assertEqual(hook["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                   "name": "dynamic-scheduler-webhook"})
                for b in ("dynamic-scheduler-metrics-reader", "dynamic-scheduler-web-auth"):
                    self.assertEqual(bindings[b]["roleRef"], {"apiGroup": "rbac.authorization.k8s.io",
                                                               "kind": "ClusterRole", "name": b})
                # The Service the roles name is the one the controller reviews (-web_auth_service).
                args = find(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
                self.assertEqual(svc["metadata"]["name"], "dynamic-scheduler")
                self.assertFalse([a for a in args if a.startswith("-web_auth_service")],
                                 "the default names the Service")
                self.assertFalse([b for b in list(bindings.values()) + list(ns_bindings.values())
                                  if b["roleRef"]["name"] == "dynamic-scheduler-viewer"],
                                 "people are bound by the cluster's admins, not by the install")
                # The lock-down grants the controller's service account nothing but the two reviews.
                lock_down = {(d["kind"], d["metadata"]["name"]) for d in lock_down_objects()}
                added = rbac_rules_for([d for d in docs if (d["kind"], d["metadata"]["name"]) in lock_down],
                                       sa["namespace"], sa["name"])
                self.assertEqual([(r["apiGroups"], r["resources"], r["verbs"]) for r in added],
                                 [(["authentication.k8s.io"], ["tokenreviews"], ["create"]),
                                  (["authorization.k8s.io"], ["subjectaccessreviews"], ["create"])])

    def test_the_default_install_has_none_of_it(self):
        key = lambda d: (d["kind"], d["metadata"]["name"])
        self.assertEqual({key(d) for d in lock_down_objects()} & {key(d) for d in render()}, set(),
                         "deploy/ is the demo: no NetworkPolicy, no web-port RBAC")

    def test_cert_manager_issues_the_secret_the_pods_mount(self):
        with open(os.path.join(DEPLOY, "cert-manager", "web-tls.yaml")) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        self.assertEqual({d["apiVersion"] for d in docs}, {"cert-manager.io/v1"})
        self.assertEqual({d["metadata"]["namespace"] for d in docs}, {"dynamic-scheduler"})
        issuers = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "Issuer"}
        certs = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "Certificate"}
        serving = [c for c in certs.values() if c["secretName"] == WEB_TLS_SECRET]
        self.assertEqual(len(serving), 1)
        serving = serving[0]
        self.assertIn("dynamic-scheduler.dynamic-scheduler.svc", serving["dnsNames"])
        self.assertIn("server auth", serving["usages"])
        self.assertEqual(serving["privateKey"]["rotationPolicy"], "Always")
        # The chain: serving <- a CA Issuer <- its CA Certificate <- a self-signed Issuer.
        ca_issuer = issuers[serving["issuerRef"]["name"]]
        ca_cert = [c for c in certs.values() if c["secretName"] == ca_issuer["ca"]["secretName"]][0]
        self.assertTrue(ca_cert["isCA"])
        self.assertEqual(issuers[ca_cert["issuerRef"]["name"]], {"selfSigned": {}})


class MonitoringCredentialsTest(unittest.TestCase):
    """How Prometheus and Alertmanager reach the locked-down web port: deploy/prometheus/scrape-config.yml's
    job, servicemonitor.yaml and alertmanager.yml send a token over TLS and check the certificate against
    the names the Certificate gives it, and point at what the overlays serve."""

    @classmethod
    def setUpClass(cls):
        docs = render_overlay("production")
        cls.svc = find(docs, "Service", "dynamic-scheduler")
        cls.host = "%s.%s.svc" % (cls.svc["metadata"]["name"], cls.svc["metadata"]["namespace"])
        with open(os.path.join(DEPLOY, "cert-manager", "web-tls.yaml")) as f:
            cls.dns_names = [d for d in yaml.safe_load_all(f) if d and d["kind"] == "Certificate"
                             and d["spec"]["secretName"] == WEB_TLS_SECRET][0]["spec"]["dnsNames"]

    def test_scrape_job(self):
        cfg = load_yaml(os.path.join(PROM_DIR, "scrape-config.yml"))
        job = {j["job_name"]: j for j in cfg["scrape_configs"]}["dynamic-scheduler"]
        self.assertEqual(job["scheme"], "https")
        self.assertEqual(job["authorization"],
                         {"credentials_file": "/var/run/secrets/kubernetes.io/serviceaccount/token"})
        tls = job["tls_config"]
        self.assertNotIn("insecure_skip_verify", tls, "only as a commented-out fallback")
        self.assertTrue(tls["ca_file"])
        self.assertIn(tls["server_name"], self.dns_names)
        self.assertEqual(tls["server_name"], self.host)
        sd = job["kubernetes_sd_configs"]
        self.assertEqual(sd, [{"role": "endpoints", "namespaces": {"names": [self.svc["metadata"]["namespace"]]}}])
        keep = [r for r in job["relabel_configs"] if r.get("action") == "keep"][0]
        self.assertEqual(keep["source_labels"],
                         ["__meta_kubernetes_service_name", "__meta_kubernetes_endpoint_port_name"])
        self.assertRegex("%s;%s" % (self.svc["metadata"]["name"], self.svc["spec"]["ports"][0]["name"]),
                         "^(?:%s)$" % keep["regex"])
        # Debian's promtool has no kubernetes_sd: the rest, with a static target, and without looking
        # for the token and CA files (which exist only in Prometheus' pod).
        job = dict(job)
        del job["kubernetes_sd_configs"]
        job["static_configs"] = [{"targets": ["10.0.0.1:9000"]}]
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "p.yml")
            with open(p, "w") as f:
                yaml.safe_dump({"scrape_configs": [job]}, f)
            r = subprocess.run(["promtool", "check", "config", "--syntax-only", p], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_service_monitor(self):
        sm = load_yaml(os.path.join(PROM_DIR, "servicemonitor.yaml"))
        self.assertEqual((sm["apiVersion"], sm["kind"]), ("monitoring.coreos.com/v1", "ServiceMonitor"))
        # The job label is the Service's name: the job the alerts name.
        self.assertEqual(self.svc["metadata"]["name"], "dynamic-scheduler")
        self.assertEqual(sm["metadata"]["namespace"], self.svc["metadata"]["namespace"])
        for k, v in sm["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(self.svc["metadata"]["labels"].get(k), v, k)
        (ep,) = sm["spec"]["endpoints"]
        self.assertEqual((ep["port"], ep["path"], ep["scheme"]),
                         (self.svc["spec"]["ports"][0]["name"], "/metrics", "https"))
        self.assertEqual(ep["bearerTokenFile"], "/var/run/secrets/kubernetes.io/serviceaccount/token")
        self.assertEqual(ep["tlsConfig"], {"serverName": self.host,
                                           "ca": {"secret": {"name": WEB_TLS_SECRET, "key": "ca.crt"}}})
        self.assertNotIn("insecureSkipVerify", json.dumps(sm))

    def test_alertmanager_receiver(self):
        r = subprocess.run(["amtool", "check-config", "alertmanager.yml"], cwd=PROM_DIR, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        cfg = load_yaml(os.path.join(PROM_DIR, "alertmanager.yml"))
        hooks = [w for rcv in cfg["receivers"] for w in rcv.get("webhook_configs", [])]
        self.assertEqual(len(hooks), 1)
        self.assertEqual(hooks[0]["url"], "https://%s:%d/webhook" % (self.host, self.svc["spec"]["ports"][0]["port"]))
        http_config = hooks[0]["http_config"]
        self.assertTrue(http_config["authorization"]["credentials_file"])
        self.assertTrue(http_config["tls_config"]["ca_file"])
        self.assertNotIn("insecure_skip_verify", http_config["tls_config"])


class ManifestFlagsTest(unittest.TestCase):
    """The flags the manifests give the controller exist in the binary (its --help), are documented in
    docs/reference.md, and, with their values, pass the binary's own checks (-check_config validates
    every flag before it exits; the rule file is the install's ConfigMap)."""

    @classmethod
    def setUpClass(cls):
        cls.installs = {name: kustomize(name) for name in install_names()}
        r = subprocess.run([CONTROLLER, "--help"], capture_output=True, text=True)
        cls.help = r.stdout + r.stderr

    def flags(self, args):
        return sorted({re.match(r"--?([A-Za-z_][\w-]*)", a).group(1) for a in args if a.startswith("-")})

    def test_every_flag_is_in_help_and_documented(self):
        with open(os.path.join(ROOT, "docs", "reference.md")) as f:
            table = f.read().split("\n### Flags\n", 1)[1].split("\n### ", 1)[0]
        seen = set()
        for name, docs in self.installs.items():
            args = [a for w, a, _ in container_args(docs) if w == "dynamic-scheduler"][0]
            seen |= set(self.flags(args))
        self.assertTrue({"probeaddr", "web_auth", "web_tls_cert_file", "web_tls_key_file"} <= seen, seen)
        missing = [f for f in sorted(seen) if not re.search(r"^\s+-%s \(" % re.escape(f), self.help, re.M)]
        self.assertEqual(missing, [], "flags in deploy/ that %s --help does not list (rebuild it?)" % CONTROLLER)
        undocumented = [f for f in sorted(seen) if "`-%s`" % f not in table]
        self.assertEqual(undocumented, [], "flags in deploy/ without a row in docs/reference.md's flag table")

    def test_every_install_passes_check_config(self):
        for name, docs in self.installs.items():
            with self.subTest(install=name):
                ((_, args, env),) = [(w, a, e) for w, a, e in container_args(docs) if w == "dynamic-scheduler"]
                cm = find(docs, "ConfigMap", "dynamic-scheduler-rules")
                with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
                    f.write(cm["data"]["rule.yaml"])
                    f.flush()
                    args = ["-r=" + f.name if a.startswith("-r=") else a for a in args]
                    self.assertIn("-r=" + f.name, args)
                    environ = {"PATH": os.environ["PATH"]}
                    environ.update({e["name"]: "dynamic-scheduler" for e in env if "valueFrom" in e})
                    r = subprocess.run([CONTROLLER] + args + ["-check_config"], capture_output=True, text=True,
                                       env=environ)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn(": OK: ", r.stdout)


class DockerfileTest(unittest.TestCase):
    def test_the_build_stage_copies_every_folder_the_binary_is_built_from(self):
        with open(os.path.join(DEPLOY, "Dockerfile")) as f:
            copied = set(re.findall(r"^COPY (\S+) ", f.read(), re.M))
        with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
            cmake = f.read().split("if(NOT DS_BUILD_TESTS)")[0]  # what a build without tests reads
        folders = set(re.findall(r"\b([a-z]+)/\w+\.cc\b", cmake)) | set(re.findall(r"add_subdirectory\((\w+)\)", cmake))
        # Files the build reads by path: the page's assets and the script that embeds them.
        folders |= set(re.findall(r"\$\{CMAKE_SOURCE_DIR\}/([a-z]+)/", cmake))
        folders -= {"test"}  # the fuzz targets (DS_FUZZ only)
        self.assertTrue(folders, "no source folder found in CMakeLists.txt")
        self.assertLessEqual(folders, copied)

    def test_runtime_stage_has_every_library_the_binary_needs(self):
        with open(os.path.join(DEPLOY, "Dockerfile")) as f:
            text = f.read()
        runtime = text.split("FROM debian:bookworm-slim")[1]
        pkgs = set(re.findall(r"\b(lib[\w.+-]+|ca-certificates)\b", runtime.split("rm -rf")[0]))
        needed = subprocess.run(["readelf", "-d", CONTROLLER], capture_output=True, text=True).stdout
        base = {"libc6", "libstdc++6", "libgcc-s1"}  # in debian:bookworm-slim
        base |= {"libasan8", "libubsan1"}  # only in -DDS_SANITIZE=ON test builds, never in the image
        for lib in re.findall(r"NEEDED.*\[(.+)\]", needed):
            path = subprocess.run(["sh", "-c", "ldconfig -p | awk '$1==\"%s\"{print $NF; exit}'" % lib],
                                  capture_output=True, text=True).stdout.strip()
            owner = ""
            for candidate in (path, os.path.realpath(path)):  # merged /usr: dpkg may know either
                owner = owner or subprocess.run(["dpkg", "-S", candidate], capture_output=True,
                                                text=True).stdout.split(":")[0]
            self.assertTrue(owner in pkgs or owner in base, "%s (%s) is not installed by the Dockerfile" % (lib, owner))
        self.assertIn("USER 65532", text)
        self.assertIn("-DDS_BUILD_TESTS=OFF", text)
        self.assertIn("tzdata", runtime.split("rm -rf")[0], "rebalance.timeZone needs the tz database")


def write_tree(root, files):
    for rel, content in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(content)


MEMINFO = "MemTotal:        4000000 kB\nMemFree:          500000 kB\nInactive(file):   300000 kB\n"
CAPACITY = 4000000 * 1024


def kubelet_available(usage, inactive):
    return CAPACITY - max(0, usage - inactive)


class PushScriptTest(unittest.TestCase):
    """push.sh against fixture cgroup trees, a real pushgateway and Prometheus, then the default
    memory.available rule labelling the node."""

    @classmethod
    def setUpClass(cls):
        cls.stack = Stack(nodes=4, control_plane=1,
                          rule_files=[os.path.join(DEPLOY, "prometheus", "recording-rules.yml")]).start()
        cls.tmp = tempfile.mkdtemp(prefix="ds-push-")
        with open(os.path.join(cls.tmp, "meminfo"), "w") as f:
            f.write(MEMINFO)

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_push(self, cgroup_root, node="node-00002", ip="10.0.0.2", **extra):
        env = {"PATH": os.environ["PATH"], "PUSHGATEWAY_URL": self.stack.pgw, "NODE_NAME": node, "NODE_IP": ip,
               "CGROUP_ROOT": cgroup_root, "MEMINFO": os.path.join(self.tmp, "meminfo"), **extra}
        env = {k: v for k, v in env.items() if v is not None}
        return subprocess.run(["sh", PUSH], env=env, capture_output=True, text=True, timeout=30)

    def pushed(self, node):
        code, body = http("GET", self.stack.pgw + "/api/v1/metrics")
        for group in json.loads(body)["data"]:
            if group["labels"].get("instance") == node and group["labels"]["job"] == "CollectK8sCgroupsMem":
                m = group["k8s_node_memory_available_bytes"]["metrics"][0]
                mib = group["k8_node_cgroups_mem_available"]["metrics"][0]
                return float(m["value"]), float(mib["value"]), m["labels"]
        return None

    def v1_tree(self, usage, inactive):
        root = tempfile.mkdtemp(dir=self.tmp)
        write_tree(root, {"memory/memory.usage_in_bytes": "%d\n" % usage,
                          "memory/memory.stat": "cache 1\ninactive_file 5\ntotal_inactive_file %d\ntotal_rss 9\n" % inactive})
        return root

    def test_cgroup_v1(self):
        root = self.v1_tree(3_000_000_000, 500_000_000)
        r = self.run_push(root)
        self.assertEqual(r.returncode, 0, r.stderr)
        value, mib, labels = self.pushed("node-00002")
        self.assertEqual(value, kubelet_available(3_000_000_000, 500_000_000))
        self.assertEqual(mib, value // 1048576)
        self.assertEqual((labels["node"], labels["ip"]), ("node-00002", "10.0.0.2"))

    def test_cgroup_v2(self):
        root = tempfile.mkdtemp(dir=self.tmp)
        write_tree(root, {"cgroup.controllers": "cpu memory pids\n", "memory.current": "2500000000\n",
                          "memory.stat": "anon 1\nfile 2\ninactive_file 700000000\nactive_file 3\n"})
        r = self.run_push(root, node="node-00003", ip="10.0.0.3")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.pushed("node-00003")[0], kubelet_available(2_500_000_000, 700_000_000))

    def test_cgroup_v2_root_without_memory_current(self):
        root = tempfile.mkdtemp(dir=self.tmp)
        write_tree(root, {"cgroup.controllers": "cpu memory\n", "memory.stat": "inactive_file 100000000\n"})
        r = self.run_push(root, node="node-00004", ip="10.0.0.4")
        self.assertEqual(r.returncode, 0, r.stderr)
        usage = (4000000 - 500000) * 1024
        self.assertEqual(self.pushed("node-00004")[0], kubelet_available(usage, 100_000_000))

    def test_working_set_floored_at_zero(self):
        root = self.v1_tree(100, 5000)
        r = self.run_push(root, DRY_RUN="1", PUSHGATEWAY_URL=None)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('k8s_node_memory_available_bytes{node="node-00002",ip="10.0.0.2"} %d' % CAPACITY, r.stdout)

    def test_bad_inputs(self):
        r = self.run_push(os.path.join(self.tmp, "nonexistent"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("neither cgroup v2 memory files nor a v1 memory/ controller", r.stderr)
        broken = self.v1_tree(1, 1)
        os.remove(os.path.join(broken, "memory", "memory.stat"))
        r = self.run_push(broken)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot read %s/memory/memory.stat" % broken, r.stderr)
        r = self.run_push(self.v1_tree(1, 1), NODE_NAME=None)
        self.assertEqual(r.returncode, 2)
        self.assertIn("NODE_NAME is not set", r.stderr)
        r = self.run_push(self.v1_tree(1, 1), PUSHGATEWAY_URL="http://127.0.0.1:1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("push to http://127.0.0.1:1/metrics/job/CollectK8sCgroupsMem/instance/node-00002 failed", r.stderr)

    def test_default_rules_label_the_node_push_sh_reports(self):
        # node-00004 has 400 MB available (< 500 MiB); node-00003 has plenty.
        low = self.v1_tree(CAPACITY - 400_000_000, 0)
        high = self.v1_tree(1_000_000_000, 0)
        self.assertEqual(self.run_push(low, node="node-00004", ip="10.0.0.4").returncode, 0)
        self.assertEqual(self.run_push(high, node="node-00003", ip="10.0.0.3").returncode, 0)
        self.stack.wait_value('node:dynamic_scheduler_memory_available:bytes{node="node-00004"}', 400_000_000, 20)
        with open(os.path.join(BASE, "rule.yaml")) as f:
            rules = f.read()
        c = Controller(self.stack, rules)  # -prom and -s 1 on the command line win over rule.yaml
        try:
            wait_until(lambda: self.stack.labelled() == ["node-00004"], 30, what="node-00004 labelled")
            hold = c.holds("node-00004")[0]
            self.assertEqual((hold["rule"], hold["value"]), ("memory_available", 400_000_000))
        finally:
            c.stop()
            self.stack.reset_marks()


class AdmissionPolicyTest(unittest.TestCase):
    """The ValidatingAdmissionPolicy: its shape (only the controller's service account, only UPDATEs
    of Nodes, only the controller's label key and its ownership annotation), and its CEL executed
    against example Node updates by a CEL evaluator (npm @marcbachmann/cel-js, pinned in
    test/admission/package-lock.json)."""

    def test_policy_shape(self):
        docs = kustomize("admission")
        policy = find(docs, "ValidatingAdmissionPolicy")
        binding = find(docs, "ValidatingAdmissionPolicyBinding")
        self.assertEqual(policy["apiVersion"], "admissionregistration.k8s.io/v1")
        self.assertEqual(binding["spec"]["policyName"], policy["metadata"]["name"])
        self.assertEqual(binding["spec"]["validationActions"], ["Deny"])
        rule = policy["spec"]["matchConstraints"]["resourceRules"][0]
        self.assertEqual((rule["resources"], rule["operations"]), (["nodes"], ["UPDATE"]))
        cond = policy["spec"]["matchConditions"][0]["expression"]
        sa = find(render(), "ServiceAccount")["metadata"]
        self.assertIn("system:serviceaccount:%s:%s" % (sa["namespace"], sa["name"]), cond)
        with open(os.path.join(BASE, "rule.yaml")) as f:
            key = yaml.safe_load(f)["label"]["key"]
        variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
        self.assertEqual(variables["key"], "'%s'" % key)
        with open(os.path.join(ROOT, "rules", "ownership.h")) as f:
            held_by = re.search(r'kHeldByAnnotation = "([^"]+)"', f.read()).group(1)
        self.assertEqual(variables["annotation"], "'%s'" % held_by)
        with open(os.path.join(ROOT, "rules", "mark.h")) as f:
            mark_h = f.read()
        self.assertEqual(variables["taintKey"],
                         "'%s'" % re.search(r'kDefaultTaintKey = "([^"]+)"', mark_h).group(1))
        self.assertEqual(variables["taintEffect"],
                         "'%s'" % re.search(r'kTaintEffect = "([^"]+)"', mark_h).group(1))
        # The mode: label mode's policy lets no taint be written; taint mode's is the same policy
        # with only variables.mayTaint true.
        self.assertEqual(variables["mayTaint"], "false")
        taint_policy = find(kustomize("admission-taint"), "ValidatingAdmissionPolicy")
        self.assertEqual({v["name"]: v["expression"] for v in taint_policy["spec"]["variables"]},
                         dict(variables, mayTaint="true"))
        self.assertEqual(dict(taint_policy, spec=dict(taint_policy["spec"], variables=[])),
                         dict(policy, spec=dict(policy["spec"], variables=[])))
        self.assertEqual(find(kustomize("admission-taint"), "ValidatingAdmissionPolicyBinding"), binding)
        text = json.dumps(policy["spec"]["validations"])
        self.assertEqual(re.findall(r"'([^']*)'", text), [], "keys only through variables.key and variables.annotation")
        # A denial must be a 403: a 422 would look like a failed JSON Patch test to the controller.
        self.assertEqual({v.get("reason") for v in policy["spec"]["validations"]}, {"Forbidden"})
        for needle in ("variables.newLabels", "variables.oldLabels", "variables.newAnnotations",
                       "variables.oldAnnotations", "variables.annotation", "variables.taintsField",
                       "variables.newTaints.filter", "variables.oldTaints.filter"):
            self.assertIn(needle, text)
        # Balanced parentheses and quotes in every CEL expression (a cheap syntax sanity check).
        for e in list(variables.values()) + [v["expression"] for v in policy["spec"]["validations"]] + [cond]:
            self.assertEqual(e.count("("), e.count(")"), e)
            self.assertEqual(e.count("'") % 2, 0, e)

    def test_policy_cel_against_example_updates(self):
        import copy
        policy = find(kustomize("admission-taint"), "ValidatingAdmissionPolicy")
        label_policy = find(kustomize("admission"), "ValidatingAdmissionPolicy")
        sa = find(render(), "ServiceAccount")["metadata"]
        me = "system:serviceaccount:%s:%s" % (sa["namespace"], sa["name"])
        base = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": "n1", "resourceVersion": "7",
                             "labels": {"kubernetes.io/hostname": "n1", "team": "a"},
                             "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
                "spec": {"podCIDR": "10.244.1.0/24", "taints": [{"key": "gpu", "effect": "NoSchedule"}]},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}}

        def edit(fn, start=base):
            new = copy.deepcopy(start)
            fn(new)
            return new
        labelled = edit(lambda n: n["metadata"]["labels"].update(status="presure"))
        bare = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}, "spec": {}}
        labels_msg, remove_msg, ann_msg, remove_ann_msg, spec_msg, taint_msg = [
            v["message"] for v in policy["spec"]["validations"]]
        held_by = "dynamic-scheduler.io/held-by"  # the controller's ownership annotation (rules/ownership.h)
        record = '{"label":"status","value":"presure","rules":[{"rule":"cpu","since":"2026-11-23T12:00:00Z"}]}'
        record2 = '{"label":"status","value":"presure","rules":[{"rule":"cpu","since":"2026-11-23T12:00:00Z"},' \
                  '{"rule":"memory","since":"2026-11-23T12:05:00Z"}]}'
        ours = {"key": "dynamic-scheduler.io/pressure", "value": "presure", "effect": "PreferNoSchedule"}
        gpu = {"key": "gpu", "effect": "NoSchedule"}
        tainted = edit(lambda n: (n["spec"]["taints"].append(dict(ours)),
                                  n["metadata"]["annotations"].update({held_by: record})))
        untainted_bare = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n3"}, "spec": {"podCIDR": "x"}}
        unreachable = edit(lambda n: n["spec"]["taints"].append(
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-11-26T01:02:03Z"}))
        # The node as the controller leaves it: our label and our record beside a foreign annotation.
        held = edit(lambda n: n["metadata"]["annotations"].update({held_by: record}), labelled)
        # A node with labels but no annotations field at all, and the same node once we hold it.
        unannotated = edit(lambda n: n["metadata"].pop("annotations"))
        unannotated_held = edit(lambda n: (n["metadata"]["labels"].update(status="presure"),
                                           n["metadata"].update(annotations={held_by: record})), unannotated)
        cases = [  # name, user, old, new, denied messages (None: the policy does not apply)
            ("set our label", me, base, labelled, []),
            ("remove our label", me, labelled, base, []),
            ("change our label's value", me, labelled, edit(lambda n: n["metadata"]["labels"].update(status="x"), labelled), []),
            ("a node with no labels or annotations at all", me, bare,
             edit(lambda n: n["metadata"].update(labels={"status": "presure"}), bare), []),
            ("heartbeat-only difference in status", me, base,
             edit(lambda n: n["status"]["conditions"][0].update(status="False")), []),
            ("add a foreign label", me, base, edit(lambda n: n["metadata"]["labels"].update(other="1")), [labels_msg]),
            ("change a foreign label", me, base, edit(lambda n: n["metadata"]["labels"].update(team="b")), [labels_msg]),
            ("remove a foreign label", me, base, edit(lambda n: n["metadata"]["labels"].pop("team")), [remove_msg]),
            ("change an annotation", me, base,
             edit(lambda n: n["metadata"]["annotations"].update({"node.alpha.kubernetes.io/ttl": "30"})), [ann_msg]),
            ("add an annotation", me, base, edit(lambda n: n["metadata"]["annotations"].update(x="1")), [ann_msg]),
            ("add a taint", me, base, edit(lambda n: n["spec"]["taints"].append({"key": "hot", "effect": "NoSchedule"})),
             [taint_msg]),
            # Taint mode: our taint (key and effect) may come and go beside the others, nothing else.
            ("add our taint and record beside a foreign taint", me, base, tainted, []),
            ("remove our taint and record, the foreign taint kept", me, tainted, base, []),
            ("add our taint to a node without taints", me, untainted_bare,
             edit(lambda n: n["spec"].update(taints=[dict(ours)]), untainted_bare), []),
            ("remove our only taint, no taints field left", me,
             edit(lambda n: n["spec"].update(taints=[dict(ours)]), untainted_bare), untainted_bare, []),
            ("change our taint's value", me, tainted,
             edit(lambda n: n["spec"]["taints"][1].update(value="x"), tainted), []),
            # A foreign NoExecute taint the node lifecycle controller stamped with timeAdded: our
            # write carries it back unchanged (allowed); one that drops the stamp changes their taint.
            ("add our taint beside a foreign NoExecute taint, its timeAdded kept", me, unreachable,
             edit(lambda n: n["spec"]["taints"].append(dict(ours)), unreachable), []),
            ("remove our taint, a foreign NoExecute taint's timeAdded kept", me,
             edit(lambda n: n["spec"]["taints"].append(dict(ours)), unreachable), unreachable, []),
            ("add our taint, dropping a foreign taint's timeAdded", me, unreachable,
             edit(lambda n: (n["spec"]["taints"][1].pop("timeAdded"), n["spec"]["taints"].append(dict(ours))),
                  unreachable), [taint_msg]),
            ("remove a foreign taint while adding ours", me, base,
             edit(lambda n: n["spec"].update(taints=[dict(ours)])), [taint_msg]),
            ("change a foreign taint's effect", me, base,
             edit(lambda n: n["spec"]["taints"][0].update(effect="NoExecute")), [taint_msg]),
            ("our key with another effect", me, base,
             edit(lambda n: n["spec"]["taints"].append(dict(ours, effect="NoSchedule"))), [taint_msg]),
            ("reorder the foreign taints", me,
             edit(lambda n: n["spec"]["taints"].append({"key": "b", "effect": "NoSchedule"})),
             edit(lambda n: n["spec"].update(taints=[{"key": "b", "effect": "NoSchedule"}, gpu])), [taint_msg]),
            ("our taint and a cordon at once", me, base,
             edit(lambda n: (n["spec"]["taints"].append(dict(ours)), n["spec"].update(unschedulable=True))),
             [spec_msg]),
            ("drop the podCIDR", me, base, edit(lambda n: n["spec"].pop("podCIDR")), [spec_msg]),
            ("cordon", me, base, edit(lambda n: n["spec"].update(unschedulable=True)), [spec_msg]),
            ("foreign label, annotation and taint at once", me, base,
             edit(lambda n: (n["metadata"]["labels"].update(team="c"), n["metadata"]["annotations"].clear(),
                             n["spec"].pop("taints"))), [labels_msg, remove_ann_msg, taint_msg]),
            # The ownership annotation, written and removed with the label (and on its own).
            ("set our label and our annotation beside foreign annotations", me, base, held, []),
            ("change only our annotation", me, held,
             edit(lambda n: n["metadata"]["annotations"].update({held_by: record2}), held), []),
            ("remove only our annotation (annotation-only merge patch)", me, held, labelled, []),
            ("remove our label and our annotation (JSON Patch test, remove, remove)", me, held, base, []),
            ("add our label and annotation to a node without annotations", me, unannotated, unannotated_held, []),
            ("add our annotation alone to a node without annotations", me, unannotated,
             edit(lambda n: n["metadata"].update(annotations={held_by: record}), unannotated), []),
            ("remove our label and our only annotation, no annotations field left", me, unannotated_held,
             unannotated, []),
            ("remove our only annotation, an empty annotations map left", me, unannotated_held,
             edit(lambda n: n["metadata"]["annotations"].clear(), unannotated_held), []),
            ("add a foreign annotation beside ours", me, held,
             edit(lambda n: n["metadata"]["annotations"].update(x="1"), held), [ann_msg]),
            ("change a foreign annotation while setting ours", me, base,
             edit(lambda n: n["metadata"]["annotations"].update({"node.alpha.kubernetes.io/ttl": "30"}), held),
             [ann_msg]),
            ("remove a foreign annotation while removing ours", me, held,
             edit(lambda n: n["metadata"]["annotations"].clear(), base), [remove_ann_msg]),
            ("remove a foreign annotation, keeping ours", me, held,
             edit(lambda n: n["metadata"]["annotations"].pop("node.alpha.kubernetes.io/ttl"), held), [remove_ann_msg]),
            ("drop the whole annotations field of a node with foreign annotations", me, held,
             edit(lambda n: n["metadata"].pop("annotations"), labelled), [remove_ann_msg]),
            ("set dynamic-scheduler.io/other", me, base,
             edit(lambda n: n["metadata"]["annotations"].update({"dynamic-scheduler.io/other": record})), [ann_msg]),
            ("set dynamic-scheduler.io/other beside our annotation", me, held,
             edit(lambda n: n["metadata"]["annotations"].update({"dynamic-scheduler.io/other": record}), held),
             [ann_msg]),
            ("add a foreign annotation to a node without annotations", me, unannotated,
             edit(lambda n: n["metadata"].update(annotations={"x": "1"}), unannotated), [ann_msg]),
            ("anybody else may touch our annotation and others", "kubernetes-admin", held,
             edit(lambda n: n["metadata"].update(annotations={"dynamic-scheduler.io/other": "1"}), held), None),
            ("anybody else may do anything", "kubernetes-admin", base,
             edit(lambda n: (n["metadata"]["labels"].clear(), n["spec"].update(unschedulable=True))), None),
            ("another service account too", "system:serviceaccount:kube-system:node-controller", base,
             edit(lambda n: n["spec"]["taints"].clear()), None),
        ]
        admission = os.path.join(ROOT, "test", "admission")
        self.assertTrue(os.path.isdir(os.path.join(admission, "node_modules", "@marcbachmann", "cel-js")),
                        "run scripts/install-deps.sh (npm ci in test/admission)")

        def evaluate(spec, cases):
            payload = {"policy": spec, "cases": [
                {"name": name, "username": user, "oldObject": old, "object": new} for name, user, old, new, _ in cases]}
            r = subprocess.run(["node", os.path.join(admission, "evaluate.mjs")], input=json.dumps(payload),
                               capture_output=True, text=True, timeout=60, cwd=admission)
            self.assertEqual(r.returncode, 0, r.stderr)
            results = {x["name"]: x for x in json.loads(r.stdout)}
            self.assertEqual(len(results), len(cases), "case names must be unique")
            for name, _, _, _, want in cases:
                with self.subTest(name):
                    got = results[name]
                    self.assertIsNone(got["error"], name)
                    if want is None:
                        self.assertFalse(got["matched"], name)
                    else:
                        self.assertTrue(got["matched"], name)
                        self.assertEqual(got["denied"], want, name)
        # Taint mode (deploy/admission-taint): the cases as listed.
        evaluate(policy["spec"], cases)

        # Label mode (deploy/admission): the same updates, and every one by the controller that
        # adds, changes or removes our taint is denied as well (its other denials stay).
        def our_taints(node):
            return [t for t in node["spec"].get("taints", [])
                    if (t["key"], t["effect"]) == (ours["key"], ours["effect"])]
        label_cases = []
        for name, user, old, new, want in cases:
            if want is not None and our_taints(old) != our_taints(new) and taint_msg not in want:
                want = want + [taint_msg]
            label_cases.append((name, user, old, new, want))
        newly_denied = sum(1 for a, b in zip(cases, label_cases) if a[4] == [] and b[4])
        self.assertGreaterEqual(newly_denied, 7, "the taint cases allowed in taint mode")
        for name in ("add our taint and record beside a foreign taint", "remove our only taint, no taints field left",
                     "change our taint's value"):
            self.assertEqual(dict((c[0], c[4]) for c in label_cases)[name], [taint_msg], name)
        evaluate(label_policy["spec"], label_cases)
        print("\nadmission policy: %d example updates evaluated in each mode, %d (taint) and %d (label) denied as "
              "expected" % (len(cases), sum(1 for c in cases if c[4]), sum(1 for c in label_cases if c[4])))


def rbac_rules_for(docs, namespace, name):
    """The rules RBAC grants the service account namespace/name in the rendered manifests, in the
    simulator's -rbac form: ClusterRole rules apply everywhere, Role rules in the Role's namespace."""
    roles = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
             for d in docs if d["kind"] in ("Role", "ClusterRole")}
    rules = []
    for b in docs:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if {"kind": "ServiceAccount", "name": name, "namespace": namespace} not in b["subjects"]:
            continue
        ref = b["roleRef"]
        ns = b["metadata"].get("namespace", "") if b["kind"] == "RoleBinding" else ""
        role = roles[(ref["kind"], ns if ref["kind"] == "Role" else "", ref["name"])]
        for r in role["rules"]:
            rules.append(dict(r, namespace=ns))
    return rules


class RbacIT(unittest.TestCase):
    """The simulator enforces exactly the RBAC that deploy/ grants the controller's service account
    (its client certificate's user): the controller, with leader election, must do its whole job
    within it, and anything beyond it must be refused."""

    @classmethod
    def setUpClass(cls):
        docs = render()
        sa = find(docs, "ServiceAccount")["metadata"]
        cls.ns = sa["namespace"]
        cls.rules = rbac_rules_for(docs, sa["namespace"], sa["name"])
        cls.tmp = tempfile.mkdtemp(prefix="ds-rbac-")
        path = os.path.join(cls.tmp, "rbac.json")
        with open(path, "w") as f:
            json.dump({"users": {"dynamic-scheduler": cls.rules}}, f)
        cls.stack = Stack(nodes=6, sim_args=["-rbac", path]).start()

    @classmethod
    def tearDownClass(cls):
        cls.stack.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def forbidden(self):
        return {k: v for k, v in self.stack.sim_admin("GET", "/sim/stats")["requests"].items()
                if k.startswith("forbidden")}

    def test_controller_works_within_the_deploy_rbac(self):
        self.assertEqual(len(self.rules), 4, self.rules)
        before = self.forbidden()
        rules = "rules:\n  - {name: cpu, query: 'max by (node) (rbac_cpu)', threshold: 80, clearThreshold: 60}\n"
        c = Controller(self.stack, rules, args=["-leader_elect", "-leader_elect_namespace", self.ns,
                                               "-leader_elect_retry_period", "1", "-leader_elect_renew_deadline",
                                               "3", "-leader_elect_lease_duration", "4"], name="rbac")
        try:
            wait_until(lambda: c.metric("dynamic_scheduler_leader") == 1, 20, what="leader under the deploy RBAC")
            self.stack.push("rbac_cpu", "n2", 95, {"node": "node-00002"})
            wait_until(lambda: self.stack.labelled() == ["node-00002"], 30, what="labelled")
            self.stack.push("rbac_cpu", "n2", 10, {"node": "node-00002"})
            wait_until(lambda: self.stack.labelled() == [], 30, what="unlabelled")
            # Marked again: the repeat is counted in the first Event's series (a PATCH the role allows).
            self.stack.push("rbac_cpu", "n2", 95, {"node": "node-00002"})
            wait_until(lambda: self.stack.labelled() == ["node-00002"], 30, what="labelled again")

            def mark_events():
                out = self.stack.kubectl("get", "events.v1.events.k8s.io", "-n", "default", "-o", "json").stdout
                return [(e["regarding"]["name"], e["reason"], e["action"], e.get("series", {}).get("count"))
                        for e in json.loads(out)["items"] if e["reason"] in ("Marked", "Unmarked")]
            wait_until(lambda: mark_events() == [("node-00002", "Marked", "Mark", 2),
                                                 ("node-00002", "Unmarked", "Unmark", None)], 20,
                       what="events.k8s.io/v1 Events, the repeat in the series")
            self.assertEqual(self.stack.kubectl("get", "lease", "-n", self.ns, "dynamic-scheduler", "-o",
                                                "jsonpath={.spec.holderIdentity}").stdout.split("_")[0],
                             socket_hostname())
            self.assertEqual(self.forbidden(), before, "nothing the controller did was refused")
        finally:
            self.assertEqual(c.stop(), 0)
        self.assertIn("released lease", c.proc.output())

    def test_taint_mode_works_within_the_deploy_rbac(self):
        """Taint mode needs nothing more: the taint goes on and off with `patch`, and the fresh read
        after a 409 (injected here) with `get`."""
        before = self.forbidden()
        rules = ("mark: taint\nrules:\n  - {name: cpu, query: 'max by (node) (rbac_taint_cpu)', threshold: 80, "
                 "clearThreshold: 60}\n")
        self.stack.fault(match="patch", status=409, count=1)
        c = Controller(self.stack, rules, name="rbac-taint")
        node = "node-00003"

        def ours():
            taints = json.loads(self.stack.kubectl("get", "node", node, "-o", "json").stdout)["spec"].get("taints", [])
            return [t for t in taints if t["key"] == "dynamic-scheduler.io/pressure"]
        try:
            self.stack.push("rbac_taint_cpu", "n3", 95, {"node": node})
            wait_until(lambda: len(ours()) == 1, 30, what="tainted")
            wait_until(lambda: c.metric('dynamic_scheduler_taint_writes_total{op="conflict"}') == 1, 10,
                       what="the injected 409 was met with a fresh read")
            self.stack.push("rbac_taint_cpu", "n3", 10, {"node": node})
            wait_until(lambda: ours() == [], 30, what="taint removed")
            self.assertEqual(self.forbidden(), before, "nothing the controller did was refused")
        finally:
            self.stack.clear_faults()
            self.assertEqual(c.stop(), 0)

    def test_everything_else_is_refused(self):
        sa_kc = self.stack.kubeconfig  # the controller's own credentials (client certificate)
        for args, want in [
                (["delete", "node", "node-00003"], 'nodes "node-00003" is forbidden: User "dynamic-scheduler" '
                                                   'cannot delete resource "nodes" in API group "" at the cluster scope'),
                (["get", "lease", "-n", self.ns, "someone-else"], 'cannot get resource "leases" in API group '
                                                                   '"coordination.k8s.io" in the namespace "%s"' % self.ns),
                (["get", "lease", "-n", "kube-system", "dynamic-scheduler"], 'in the namespace "kube-system"'),
                (["get", "lease", "-n", self.ns], 'cannot list resource "leases"')]:
            r = self.stack.kubectl(*args, kubeconfig=sa_kc, check=False)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn(want, r.stderr, args)
        # What it is granted works with the same credentials.
        self.stack.kubectl("label", "node", "node-00004", "status=presure", kubeconfig=sa_kc)
        self.stack.kubectl("label", "node", "node-00004", "status-", kubeconfig=sa_kc)
        # A lease name outside the Role: the controller never leads, says why, and writes nothing.
        c = Controller(self.stack, "rules:\n  - {name: cpu, query: 'max by (node) (rbac_cpu)', threshold: 80}\n",
                       args=["-leader_elect", "-leader_elect_namespace", self.ns, "-leader_elect_name", "other"],
                       name="rbac-other")
        try:
            wait_until(lambda: "forbidden" in c.proc.output(), 20, what="the refusal logged")
            self.assertEqual(c.metric("dynamic_scheduler_leader"), 0)
            # The error is a quoted field value in the log line: its quotes are escaped there.
            self.assertIn('leases.coordination.k8s.io "other" is forbidden', c.proc.output().replace('\\"', '"'))
        finally:
            c.stop()


def socket_hostname():
    import socket
    return socket.gethostname()


# --- The controller's own monitoring: deploy/prometheus/alerts.yml and deploy/grafana/. ---

PROM_DIR = os.path.join(DEPLOY, "prometheus")
DASHBOARD = os.path.join(DEPLOY, "grafana", "dynamic-scheduler.json")
# Labels a scrape adds (kubernetes_sd, the Prometheus Operator); any selector may use them.
TARGET_LABELS = {"job", "instance", "namespace", "pod", "service", "endpoint", "container"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = GROUPING | {"and", "or", "unless", "bool", "offset", "inf", "nan"}
RATE_FUNCTIONS = {"rate", "irate", "increase"}
PROMQL_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\[[^\]]*\]|\{[^}]*\}|[A-Za-z_:][\w:]*|\d+(?:\.\d+)?(?:e[+-]?\d+)?|\S')


def exported_metrics():
    """{name: (type, label names)} for every metric the /metrics handler writes, read from its golden
    rendering (test/testdata/golden/metrics.txt: web_test renders it from a view that sets
    every family): the `# TYPE` lines, and the label keys of each family's samples (a histogram's
    _bucket, _sum and _count series are its own; `le` is not counted as a label of it)."""
    with open(os.path.join(ROOT, "test", "testdata", "golden", "metrics.txt")) as f:
        text = f.read()
    types = dict(re.findall(r"^# TYPE ([A-Za-z_:][\w:]*) (\w+)$", text, re.M))
    labels = {name: set() for name in types}
    for name, body in re.findall(r"^([A-Za-z_:][\w:]*)\{(.*)\} \S+$", text, re.M):
        family = name if name in types else re.sub(r"_(bucket|sum|count)$", "", name)
        keys = set(re.findall(r'(\w+)="(?:[^"\\]|\\.)*"', body))
        labels[family] |= keys - {"le"} if types[family] == "histogram" else keys
    return {name: (types[name], labels[name]) for name in types}


def promql_problems(expr, exported):
    """What is wrong with one PromQL expression of ours: a metric the controller does not export (`up`
    aside), a label that neither the metric nor the scrape has, a counter outside rate()/increase(), or a
    gauge inside one. Histogram and summary series may carry _bucket, _sum or _count."""
    known = dict(exported)
    known["up"] = ("gauge", set())
    toks = PROMQL_TOKEN.findall(expr.replace("$__rate_interval", "5m").replace("$job", "x"))
    problems, used_labels, grouping_labels = [], set(), set()
    i = 0
    while i < len(toks):
        t = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if t in GROUPING and nxt == "(":
            j = toks.index(")", i)
            grouping_labels.update(x for x in toks[i + 2:j] if x != ",")
            i = j + 1
            continue
        # Not a metric: an operator or keyword, a function or an aggregation (`sum(`, `sum by (...) (`).
        if not re.fullmatch(r"[A-Za-z_:][\w:]*", t) or t in KEYWORDS or nxt in ("(", "by", "without"):
            if t.startswith("{"):
                problems.append("a selector without a metric name: %s" % t)
            i += 1
            continue
        name = t
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        series = None  # a histogram's or summary's _bucket, _sum or _count: counters, `le` on buckets
        if name not in known and base in known and known[base][0] in ("histogram", "summary"):
            name, series = base, name[len(base) + 1:]
        if name not in known:
            problems.append("%s is not exported" % t)
            i += 1
            continue
        kind, labels = known[name]
        if series is not None:
            kind, labels = "counter", labels | ({"le"} if series == "bucket" else set())
        used_labels |= labels
        if nxt.startswith("{"):
            for key in re.findall(r'(\w+)\s*(?:=~|!~|!=|=)', nxt):
                if key not in labels | TARGET_LABELS:
                    problems.append("%s has no label %s" % (name, key))
        in_rate = i >= 2 and toks[i - 1] == "(" and toks[i - 2] in RATE_FUNCTIONS
        if kind == "counter" and not in_rate:
            problems.append("counter %s outside rate()/increase()" % name)
        if kind != "counter" and in_rate:
            problems.append("%s %s inside rate()/increase()" % (kind, name))
        i += 2 if nxt.startswith("{") else 1
    for key in grouping_labels - used_labels - TARGET_LABELS:
        problems.append("no metric of the expression has the label %s" % key)
    return problems


def load_yaml(path):
    with open(path) as f:
        return yaml.safe_load(f)


def load_dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def dashboard_exprs(dash):
    """(panel id, refId, expr) of every query of every panel."""
    return [(p["id"], t["refId"], t["expr"]) for p in dash["panels"] for t in p.get("targets", [])]


class ExportedMetricsParseTest(unittest.TestCase):
    def test_the_source_parse_finds_the_metrics_and_their_labels(self):
        m = exported_metrics()
        self.assertGreaterEqual(len(m), 30, sorted(m))
        self.assertEqual(m["dynamic_scheduler_leader"], ("gauge", set()))
        self.assertEqual(m["dynamic_scheduler_label_writes_total"], ("counter", {"op"}))
        self.assertEqual(m["dynamic_scheduler_query_errors_total"], ("counter", {"rule"}))
        self.assertEqual(m["dynamic_scheduler_evictions_total"], ("counter", {"result"}))
        self.assertEqual(m["process_resident_memory_bytes"], ("gauge", set()))
        self.assertEqual(m["dynamic_scheduler_query_duration_seconds"], ("histogram", {"rule"}))
        self.assertEqual(m["dynamic_scheduler_build_info"], ("gauge", {"version", "commit", "revision", "compiler"}))
        self.assertEqual(m["dynamic_scheduler_rule_mean"], ("gauge", {"rule"}), "only with relative rules")

    def test_the_checker_finds_each_kind_of_mistake(self):
        m = exported_metrics()
        for expr, want in [
                ('sum by (op) (rate(dynamic_scheduler_label_writes_total{job=~"$job"}[$__rate_interval]))', []),
                ('up{job="dynamic-scheduler"} == 0', []),
                ("absent(up == 1) and on (instance) dynamic_scheduler_leader > bool 0", []),
                ("rate(dynamic_scheduler_label_writes_failed_total[5m])",
                 ["dynamic_scheduler_label_writes_failed_total is not exported"]),
                ('rate(dynamic_scheduler_label_writes_total{result="ok"}[5m])',
                 ["dynamic_scheduler_label_writes_total has no label result"]),
                ("sum by (result) (rate(dynamic_scheduler_label_writes_total[5m]))",
                 ["no metric of the expression has the label result"]),
                ("dynamic_scheduler_cycles_total", ["counter dynamic_scheduler_cycles_total outside rate()/increase()"]),
                ("rate(dynamic_scheduler_hot_nodes[5m])", ["gauge dynamic_scheduler_hot_nodes inside rate()/increase()"]),
                ('{__name__="dynamic_scheduler_leader"}', ['a selector without a metric name: {__name__="dynamic_scheduler_leader"}']),
                ("dynamic_scheduler_hot_nodes_bucket", ["dynamic_scheduler_hot_nodes_bucket is not exported"]),
                ("histogram_quantile(0.95, sum by (le) (rate(dynamic_scheduler_cycle_duration_seconds_bucket[5m])))", []),
                ("dynamic_scheduler_cycle_duration_seconds_count",
                 ["counter dynamic_scheduler_cycle_duration_seconds outside rate()/increase()"]),
                ('rate(dynamic_scheduler_query_duration_seconds_sum{le="1"}[5m])',
                 ["dynamic_scheduler_query_duration_seconds has no label le"])]:
            self.assertEqual(promql_problems(expr, m), want, expr)


class ReferenceMetricsTest(unittest.TestCase):
    """docs/reference.md's "Metrics" table is the one list of the metrics (README.md links to it)."""

    def test_the_reference_lists_every_exported_metric_with_its_type_and_labels(self):
        with open(os.path.join(ROOT, "docs", "reference.md")) as f:
            reference = f.read()
        self.assertEqual(reference.count("\n## Metrics\n"), 1, "docs/reference.md has one section ## Metrics")
        table = reference.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
        rows = re.findall(r"^\| `(\w+)` \| (\w+) \| ([^|]*)\|", table, re.M)
        listed = {name: (kind, set(re.findall(r"`(\w+)`", labels))) for name, kind, labels in rows}
        self.assertEqual(len(rows), len(listed), "each metric is listed once")
        self.assertEqual(listed, exported_metrics())


class AlertRulesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.groups = load_yaml(os.path.join(PROM_DIR, "alerts.yml"))["groups"]
        cls.alerts = [r for g in cls.groups for r in g["rules"]]

    def test_alerts_pass_promtool(self):
        for cmd in (["check", "rules", "alerts.yml"], ["test", "rules", "alerts_test.yml"]):
            r = subprocess.run(["promtool"] + cmd, cwd=PROM_DIR, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_every_alert_is_complete_and_tested_firing(self):
        names = [a["alert"] for a in self.alerts]
        self.assertEqual(len(names), len(set(names)))
        for a in self.alerts:
            self.assertRegex(a["for"], r"^\d+m$", a["alert"])
            self.assertIn(a["labels"]["severity"], ("critical", "warning"), a["alert"])
            self.assertEqual(set(a["annotations"]), {"summary", "description"}, a["alert"])
        cases = [c for t in load_yaml(os.path.join(PROM_DIR, "alerts_test.yml"))["tests"] for c in t["alert_rule_test"]]
        fired = {c["alertname"] for c in cases if c.get("exp_alerts")}
        silent = {c["alertname"] for c in cases if not c.get("exp_alerts")}
        self.assertEqual(fired, set(names), "every alert has a case that makes it fire")
        self.assertEqual(silent, set(names), "and one where it stays silent")

    def test_prometheusrule_has_the_same_groups(self):
        pr = load_yaml(os.path.join(PROM_DIR, "prometheusrule.yaml"))
        self.assertEqual((pr["apiVersion"], pr["kind"]), ("monitoring.coreos.com/v1", "PrometheusRule"))
        self.assertEqual(pr["metadata"]["namespace"], "dynamic-scheduler")
        self.assertEqual(pr["spec"]["groups"], self.groups)

    def test_alerts_name_only_exported_metrics(self):
        m = exported_metrics()
        for a in self.alerts:
            self.assertEqual(promql_problems(a["expr"], m), [], a["alert"])

    def test_up_alerts_and_the_docs_agree_on_the_job(self):
        jobs = {j for a in self.alerts for j in re.findall(r'\bup\{job="([^"]+)"\}', a["expr"])}
        self.assertEqual(jobs, {"dynamic-scheduler"})
        with open(os.path.join(ROOT, "docs", "operating.md")) as f:
            section = f.read().split("\n## Dashboard and alerts for the controller itself\n", 1)[1].split("\n## ", 1)[0]
        self.assertTrue('job="dynamic-scheduler"' in section,
                        "docs/operating.md, \"Dashboard and alerts\", names the job the alerts assume")


class DashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dash = load_dashboard()

    def test_shape(self):
        d = self.dash
        self.assertGreaterEqual(d["schemaVersion"], 36)
        variables = {v["name"]: v for v in d["templating"]["list"]}
        self.assertEqual((variables["datasource"]["type"], variables["datasource"]["query"]), ("datasource", "prometheus"))
        ds = {"type": "prometheus", "uid": "${datasource}"}
        ids = [p["id"] for p in d["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
        cells = {}
        for p in d["panels"]:
            g = p["gridPos"]
            self.assertLessEqual(g["x"] + g["w"], 24, p["title"])
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    self.assertNotIn((x, y), cells, "%s overlaps %s" % (p["title"], cells.get((x, y))))
                    cells[(x, y)] = p["title"]
            if p["type"] == "row":
                continue
            self.assertIn(p["type"], ("timeseries", "stat"), p["title"])
            self.assertEqual(p["datasource"], ds, p["title"])
            self.assertTrue(p["targets"], p["title"])
            refs = [t["refId"] for t in p["targets"]]
            self.assertEqual(len(refs), len(set(refs)), p["title"])
            for t in p["targets"]:
                self.assertEqual(t.get("datasource", ds), ds, p["title"])
        for v in variables.values():
            if v["type"] == "query":
                self.assertEqual(v["datasource"], ds, v["name"])

    def test_exprs_parse(self):
        # promtool parses PromQL only in rule files: each query becomes a recording rule.
        rules = [{"record": "dashboard:panel_%d_%s" % (pid, ref),
                  "expr": expr.replace("$__rate_interval", "5m").replace("$job", ".*")}
                 for pid, ref, expr in dashboard_exprs(self.dash)]
        self.assertGreaterEqual(len(rules), 20)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "dashboard.yml")
            with open(p, "w") as f:
                yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
            r = subprocess.run(["promtool", "check", "rules", p], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("SUCCESS: %d rules found" % len(rules), r.stdout)

    def test_every_query_names_metrics_the_controller_exports(self):
        m = exported_metrics()
        used = set()
        for pid, ref, expr in dashboard_exprs(self.dash):
            self.assertEqual(promql_problems(expr, m), [], "panel %d %s: %s" % (pid, ref, expr))
            used |= set(re.findall(r"\b(?:dynamic_scheduler_\w+|process_\w+)", expr))
        for v in self.dash["templating"]["list"]:
            if v["type"] == "query":
                metric, label = re.fullmatch(r"label_values\((\w+), *(\w+)\)", v["query"]["query"]).groups()
                self.assertIn(metric, m)
                self.assertIn(label, TARGET_LABELS | m[metric][1])
        # What the dashboard is for: marks, cycles, queries, writes, errors, leader, cache, rebalancing.
        for want in ("hot_nodes", "managed_nodes", "last_cycle_duration_seconds", "cycle_duration_seconds_bucket",
                     "rule_query_duration_seconds", "query_duration_seconds_bucket",
                     "label_writes_total", "label_write_errors_total", "query_errors_total", "leader",
                     "node_cache_lists_total", "node_cache_expired_relists_total", "node_cache_watch_restarts_total",
                     "evictions_total", "eviction_skips_total", "rebalance_bounce_backs_total",
                     "rebalance_reference_hot_total", "rebalance_reference_hot_marked_total",
                     "rebalance_episodes_total", "rebalance_episodes_evicted_total",
                     "rebalance_episodes_judged_total", "rebalance_episodes_relieved_total",
                     "rebalance_time_to_relief_seconds_bucket", "rebalance_episodes_relieved_evictions_total",
                     "rebalance_hot_node_seconds_total", "underused_nodes"):
            self.assertIn("dynamic_scheduler_" + want, used)


if __name__ == "__main__":
    unittest.main()
