"""-log_format=json: the real binary at high verbosity against the simulator and real Prometheus,
with a kubeconfig that holds a bearer token, a basic-auth password and a client key. Every line it
writes is one JSON object with the keys of Kubernetes components' JSON logs, the structured fields
are keys of their own, and none of the credentials appears anywhere in its output."""
import base64
import json
import os
import re
import secrets
import signal
import subprocess

import yaml

from harness import CONTROLLER, CPU_RULES, Controller, StackTestCase, wait_until

RULES = CPU_RULES.format(metric="max by (node) (log_cpu)")


def json_lines(output):
    """Every line parsed as one JSON object (the test fails at the first that is not)."""
    lines = []
    for line in output.splitlines():
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise AssertionError("not a JSON line (%s): %r" % (e, line))
        if not isinstance(obj, dict):
            raise AssertionError("not a JSON object: %r" % line)
        lines.append(obj)
    return lines


class JsonLogsIT(StackTestCase):
    STACK = {"nodes": 4, "control_plane": 1}

    def kubeconfig_with_secrets(self):
        """The simulator's client-certificate kubeconfig with a token of our own (registered with
        the simulator) and a basic-auth user and password added to the same user."""
        token = "tok-" + secrets.token_hex(16)
        password = "pw-" + secrets.token_hex(16)
        self.stack.sim_admin("POST", "/sim/tokens", {"token": token, "user": "dynamic-scheduler", "readOnly": False})
        with open(self.stack.kubeconfig) as f:
            kc = yaml.safe_load(f)
        user = kc["users"][0]["user"]
        user.update({"token": token, "username": "admin", "password": password})
        key_data = user["client-key-data"]
        path = os.path.join(self.stack.dir, "kubeconfig-secrets")
        with open(path, "w") as f:
            yaml.safe_dump(kc, f)
        key_pem = base64.b64decode(key_data).decode()
        key_lines = [l for l in key_pem.splitlines() if l and not l.startswith("-----")]
        return path, [token, password, key_data] + key_lines

    def test_every_line_is_json_with_fields_and_no_secret(self):
        kubeconfig, secret_values = self.kubeconfig_with_secrets()
        self.stack.push("log_cpu", "n3", 95, {"node": "node-00003"})
        c = Controller(self.stack, RULES, kubeconfig=kubeconfig, name="json-logs",
                       args=["-log_format=json", "-v=4", "-leader_elect", "-leader_elect_namespace", "default",
                             "-leader_elect_retry_period", "0.5"])
        try:
            wait_until(lambda: self.stack.labelled() == ["node-00003"], 30, what="node-00003 marked")
            c.wait_cycles(2)
            # An error line: a broken rule file, read at once on SIGHUP, is refused.
            with open(c.rule_file, "w") as f:
                f.write("rules:\n  - {name: cpu, query: x, threshold: high}\n")
            c.proc.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: "rule file not reloaded" in c.proc.output(), 10, what="the refusal logged")
        finally:
            self.assertEqual(c.stop(), 0)
        output = c.proc.output()
        lines = json_lines(output)
        self.assertGreater(len(lines), 5, output)
        for obj in lines:
            self.assertIsInstance(obj.get("ts"), float, obj)
            self.assertGreater(obj["ts"], 1.6e12, "milliseconds since the epoch: %r" % obj)
            self.assertRegex(obj.get("caller", ""), r"^([\w.-]+/)?[\w.-]+\.(cc|h):\d+$", obj)
            self.assertIsInstance(obj.get("msg"), str, obj)
            if "v" in obj:
                self.assertIsInstance(obj["v"], int, obj)
        # The structured fields are keys, not text in the message.
        marked = [o for o in lines if o.get("node") == "node-00003" and o["msg"].startswith("set status=presure")]
        self.assertEqual(len(marked), 1, output)
        self.assertEqual(marked[0]["v"], 0)
        self.assertNotIn("node-00003", marked[0]["msg"])
        self.assertIn("reason", marked[0])
        leader = [o for o in lines if o["msg"] == "leader election: now the leader"]
        self.assertEqual(len(leader), 1, output)
        self.assertEqual(leader[0]["term"], 1)
        self.assertEqual(leader[0]["lease"], "default/dynamic-scheduler")
        # -v=4 shows the VLOG(1) cycle lines, with their verbosity.
        cycles = [o for o in lines if "cycle" in o and o.get("v") == 1]
        self.assertTrue(cycles, output)
        # An error line: no "v" (klog's JSON marks errors so), the error under "err".
        errors = [o for o in lines if o["msg"] == "rule file not reloaded"]
        self.assertEqual(len(errors), 1, output)
        self.assertNotIn("v", errors[0])
        self.assertIn("threshold", errors[0]["err"])
        self.assertEqual(errors[0]["file"], c.rule_file)
        # No credential anywhere, nor the header that would carry one.
        for s in secret_values + ["Authorization", "Bearer"]:
            self.assertNotIn(s, output)

    def test_log_format_errors(self):
        rule_file = os.path.join(self.stack.dir, "logs-rule.yaml")
        with open(rule_file, "w") as f:
            f.write(RULES)
        # An unknown format: a start-up error that names the flag.
        r = subprocess.run([CONTROLLER, "-log_format=yaml", "-r", rule_file, "-prom", self.stack.prom,
                            "-kubeconfig", self.stack.kubeconfig], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("-log_format must be text or json", r.stderr)
        # With json, a start-up error is a JSON error line too.
        r = subprocess.run([CONTROLLER, "-log_format=json", "-s", "0", "-r", rule_file, "-prom", self.stack.prom,
                            "-kubeconfig", self.stack.kubeconfig], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        lines = json_lines(r.stderr)
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertNotIn("v", lines[0])
        self.assertIn("-s must be", lines[0]["err"])


if __name__ == "__main__":
    import unittest
    unittest.main()
