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
        # Only this demo's processes: other suites may run their own stacks in parallel.
        work_dir = [l.split()[-1] for l in r.stdout.splitlines() if l.strip().startswith("work dir")][0]
        ps = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
        for line in ps.splitlines():
            if work_dir in line and " Z" not in line:
                self.fail("left behind: " + line)


if __name__ == "__main__":
    unittest.main()
