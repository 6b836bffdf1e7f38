"""The README's demo must keep working: run it briefly and check that it labels and unlabels
nodes and leaves no process behind."""
import os
import pty
import re
import signal
import subprocess
import threading
import time
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def run_on_a_terminal(args, env, timeout):
    """Runs args with stdout on a pseudo-terminal, as a person at a terminal sees it: (exit code,
    everything written to the terminal, stderr)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(args, env=env, stdout=slave, stderr=subprocess.PIPE, text=False)
    os.close(slave)
    chunks = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: read_or_eof(master), b"")))
    reader.start()
    try:
        _, err = p.communicate(timeout=timeout)
    finally:
        reader.join(10)
        os.close(master)
    return p.returncode, b"".join(chunks).decode(errors="replace").replace("\r\n", "\n"), err.decode(errors="replace")


def read_or_eof(fd):
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the other side closed
        return b""


class DemoIT(unittest.TestCase):
    def start_detached(self):
        """The demo in a process group of its own, as a shell runs a job; returns it and its
        output up to the web page's line (the stack is up)."""
        env = dict(os.environ, DEMO_DURATION="0", TERM="dumb")
        p = subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "scripts", "demo.py")], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        lines = []
        for line in p.stdout:
            lines.append(line)
            if "web page" in line:
                break
        return p, lines

    def assert_nothing_left_behind(self, out):
        # Only this demo's processes: other suites may run their own stacks in parallel.
        work_dir = [l.split()[-1] for l in out.splitlines() if l.strip().startswith("work dir")][0]
        ps = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
        for line in ps.splitlines():
            if work_dir in line and " Z" not in line:
                self.fail("left behind: " + line)

    def test_demo_runs_labels_and_cleans_up(self):
        # On a terminal, as the README's first command runs it: the view is redrawn in place.
        env = dict(os.environ, DEMO_DURATION="45", TERM="xterm", COLUMNS="72")
        code, out, err = run_on_a_terminal(["/usr/bin/python3", os.path.join(ROOT, "scripts", "demo.py")], env, 240)
        r = subprocess.CompletedProcess([], code, out, err)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        frames = r.stdout.split("\033[H\033[2J")
        self.assertGreater(len(frames), 20, "a frame a second, each drawn over the last")
        last = frames[-1]
        self.assertIn("NODE", last)
        self.assertIn("recent changes", last)
        self.assertRegex(last, r"UNLABELLED .*node-", "each change with its reason, on the screen")
        changes = last.split("recent changes (newest last):")[1].strip().splitlines()
        self.assertTrue(changes)
        for line in changes:  # cut to the terminal, never wrapped
            self.assertLessEqual(len(line), 72, line)
        self.assertRegex(last, r"LABELLED +node-\d+: \S+ [\d.]+ (%|MiB|MB)? ?[<>]",
                         "short: node, rule, value and threshold")
        self.assertIn("LABELLED", r.stdout)
        self.assertIn("UNLABELLED", r.stdout)
        self.assertIn("no process left behind", r.stdout)
        self.assertIn("rules: cpu > 80% (clears <= 65%", r.stdout)
        self.assertNotIn("%%", r.stdout)
        self.assertRegex(r.stdout, r"web page +http://127\.0\.0\.1:\d+/ ", "the page's URL is printed")
        self.assertNotRegex(r.stdout, r"\d\.\d+e\+\d\d", "byte values in MB or GB, not 1.074e+08")
        self.assert_nothing_left_behind(r.stdout)

    def test_ctrl_c_stops_cleanly(self):
        # Ctrl-C at a terminal sends SIGINT to the whole foreground process group: the demo, and
        # Prometheus, the pushgateway and the simulator it started. It must stop without a
        # traceback (issue 40: the pushgateway went first and push_all raised).
        p, lines = self.start_detached()
        time.sleep(3)  # a few pushes into the loop
        os.killpg(p.pid, signal.SIGINT)
        out, _ = p.communicate(timeout=60)
        out = "".join(lines) + out
        self.assertEqual(p.returncode, 0, out[-3000:])
        self.assertNotIn("Traceback", out)
        self.assertIn("stopped; no process left behind.", out)
        self.assert_nothing_left_behind(out)

    def test_a_part_of_the_stack_exiting_first_is_named_not_a_traceback(self):
        # The order Ctrl-C can take: the pushgateway and the others go before the demo sees its
        # own SIGINT. Here they alone get it: the demo names them and stops, exit 1.
        p, lines = self.start_detached()
        children = subprocess.run(["pgrep", "-s", str(p.pid)], capture_output=True, text=True).stdout.split()
        for pid in children:
            if int(pid) != p.pid:
                os.kill(int(pid), signal.SIGINT)
        out, _ = p.communicate(timeout=60)
        out = "".join(lines) + out
        self.assertEqual(p.returncode, 1, out[-3000:])
        self.assertNotIn("Traceback", out)
        self.assertRegex(out, r"(pushgateway|prometheus|kube-sim)[^\n]* exited \(")
        self.assertIn("stopped; no process left behind.", out)

    def test_rebalance_demo_moves_pods_off_the_hot_node(self):
        env = dict(os.environ, DEMO_DURATION="35")
        r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "demo.py"), "--rebalance"], env=env,
                           capture_output=True, text=True, timeout=240)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        out = r.stdout
        # Marked first, then evicted (one pod per cool-down), and the replacements went elsewhere.
        # Each change in short ("node-00002: cpu 86.7 % > 80 %"), the full line in changes.log.
        marked = re.search(r'(?<!UN)MARKED +node-00002: cpu \d', out)
        self.assertIsNotNone(marked, out[-3000:])
        self.assertNotRegex(out, r"UNMARKED +node-00002: cpu [\d.]+ > 80", "a mark is labelled as a mark")
        self.assertRegex(out, r"EVICTED +demo/web-\S+ from node-00002 to node-0000[3-6]")
        self.assertIn("EVICTED", out)
        self.assertLess(marked.start(), out.index("EVICTED"), out[-3000:])
        self.assertNotIn("BOUNCE", out)
        self.assertRegex(out, r"effect: [1-9]\d* evictions, \d+ replacements, 0 bounce-backs")
        # The seed's loop side by side, measured: every eviction shown is counted, none came back
        # with the mark, and the same evictions replayed without it through the scheduler model
        # all go back (the other workers are full by requests, so the scheduler picks the hot node).
        evicted = len(re.findall(r"^\S+ +EVICTED ", out, re.M))
        self.assertGreater(evicted, 0, out[-3000:])
        with_mark = re.search(r"^  with the mark +(\d+) evictions, (\d+) back$", out, re.M)
        without = re.search(r"^  without the mark +(\d+) evictions, (\d+) back ", out, re.M)
        self.assertIsNotNone(with_mark, out[-3000:])
        self.assertIsNotNone(without, out[-3000:])
        self.assertEqual(int(with_mark.group(1)), evicted)
        self.assertEqual(int(with_mark.group(2)), len(re.findall(r"^\S+ +BOUNCE ", out, re.M)))
        self.assertEqual((int(without.group(1)), int(without.group(2))), (evicted, evicted))
        side = out[out.index("side by side"):out.index("stopped;")]
        for line in side.splitlines():
            self.assertLessEqual(len(line), 72, line)
        self.assertIn("no process left behind", out)
        self.assertRegex(out, r"web page +http://127\.0\.0\.1:\d+/ ")


if __name__ == "__main__":
    unittest.main()
