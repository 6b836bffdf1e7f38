"""The README's demo must keep working: run it briefly and check that it labels and unlabels
nodes and leaves no process behind."""
import os
import subprocess
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class DemoIT(unittest.TestCase):
    def test_demo_runs_labels_and_cleans_up(self):
        env = dict(os.environ, DEMO_DURATION="45")
        r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "demo.py")], env=env,
                           capture_output=True, text=True, timeout=240)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        self.assertIn("LABELLED", r.stdout)
        self.assertIn("UNLABELLED", r.stdout)
        self.assertIn("no process left behind", r.stdout)
        self.assertIn("rules: cpu > 80% (clears <= 65%", r.stdout)
        self.assertNotIn("%%", r.stdout)
        self.assertRegex(r.stdout, r"web page +http://127\.0\.0\.1:\d+/ ", "the page's URL is printed")
        self.assertNotRegex(r.stdout, r"\d\.\d+e\+\d\d", "byte values in MB or GB, not 1.074e+08")
        # Only this demo's processes: other suites may run their own stacks in parallel.
        work_dir = [l.split()[-1] for l in r.stdout.splitlines() if l.strip().startswith("work dir")][0]
        ps = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
        for line in ps.splitlines():
            if work_dir in line and " Z" not in line:
                self.fail("left behind: " + line)

    def test_rebalance_demo_moves_pods_off_the_hot_node(self):
        env = dict(os.environ, DEMO_DURATION="35")
        r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "demo.py"), "--rebalance"], env=env,
                           capture_output=True, text=True, timeout=240)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        out = r.stdout
        # Marked first, then evicted (one pod per cool-down), and the replacements went elsewhere.
        self.assertIn("MARKED", out)
        self.assertIn("EVICTED", out)
        self.assertLess(out.index("MARKED"), out.index("EVICTED"), out[-3000:])
        self.assertNotIn("BOUNCE", out)
        self.assertRegex(out, r"effect: [1-9]\d* evictions, \d+ replacements, 0 bounce-backs")
        self.assertIn("no process left behind", out)
        self.assertRegex(out, r"web page +http://127\.0\.0\.1:\d+/ ")


if __name__ == "__main__":
    unittest.main()
