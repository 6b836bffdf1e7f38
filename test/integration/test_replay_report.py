"""report.html of `dynamic-scheduler replay` in a real headless browser (Debian's chromium,
chromium-driver and python3-selenium): a replay.json built here, with names that try to inject
markup, rendered by the same functions the subcommand calls (build/test/render_report), opened
from disk. The page is self-contained (the browser fetches nothing), every name shows as text, and
the charts, tables and comparison hold what this test computes on its own from the marks."""
import datetime
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import BUILD_DIR
from test_web import start_browser, webdriver

RENDER = os.path.join(BUILD_DIR, "test", "render_report")
FROM = datetime.datetime(2026, 11, 20, tzinfo=datetime.timezone.utc)
TO_SECONDS = 2 * 86400
EVIL_NODE = '<img src=x onerror="document.title=\'pwned\'">'
EVIL_RULE = "<b>cpu</b>"


def at(seconds):
    return (FROM + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def replay_doc(marks_by_node, rules):
    """A replay.json from {node: [(start, end or None, [rules])]} (seconds after FROM)."""
    nodes, total_marks, total_seconds = {}, 0, 0
    for name, marks in marks_by_node.items():
        secs = sum((TO_SECONDS if e is None else e) - s for s, e, _ in marks)
        nodes[name] = {"marks": [{"start": at(s), "end": None if e is None else at(e), "rules": r}
                                 for s, e, r in marks], "marked_seconds": secs}
        total_marks += len(marks)
        total_seconds += secs
    return {"from": at(0), "to": at(TO_SECONDS), "step_seconds": 60, "rules": rules, "nodes": nodes,
            "totals": {"marks": total_marks, "marked_node_seconds": total_seconds,
                       "max_marked_at_once": max_at_once(marks_by_node, None),
                       "capped_node_seconds": 0, "unmatched_series": 0}}


def max_at_once(marks_by_node, rule):
    """The most nodes marked at one time, by `rule` (None: any): a sweep over the ends."""
    events = []
    for marks in marks_by_node.values():
        for s, e, r in marks:
            if rule is None or rule in r:
                events.append((s, 1))
                if e is not None:
                    events.append((e, -1))
    best = cur = 0
    for _, d in sorted(events):  # at one time an end (-1) before a start (+1)
        cur += d
        best = max(best, cur)
    return best


class ReplayReportIT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if webdriver is None and os.environ.get("DS_SKIP_BROWSER") == "1":
            raise unittest.SkipTest("DS_SKIP_BROWSER=1")
        if webdriver is None:
            raise RuntimeError("python3-selenium is not installed (scripts/install-deps.sh installs it); "
                               "DS_SKIP_BROWSER=1 skips this test")
        cls.dir = tempfile.mkdtemp(prefix="ds-replay-report-")
        cls.driver = start_browser(os.path.join(cls.dir, "profile"))

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def render(self, doc, other=None):
        path = os.path.join(self.dir, "replay.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        out = os.path.join(self.dir, "report.html")
        cmd = [RENDER, path, out]
        if other is not None:
            other_path = os.path.join(self.dir, "other.json")
            with open(other_path, "w") as f:
                json.dump(other, f)
            cmd += [other_path, "rule.yaml", "tuned.yaml"]
        subprocess.run(cmd, check=True, timeout=60)
        self.driver.get("file://" + out)
        return out

    def marks(self):
        # 40 nodes: node i is marked by cpu over [i * 600, i * 600 + 3600) -- six overlap at most --
        # and every fifth also by the evil rule for an hour; the evil node flaps (5 minutes apart).
        m = {}
        for i in range(40):
            m["node-%02d" % i] = [(i * 600, i * 600 + 3600, ["cpu"])]
            if i % 5 == 0:
                m["node-%02d" % i].append((90000 + i * 60, 93600, [EVIL_RULE]))
        m[EVIL_NODE] = [(0, 600, ["cpu"]), (900, None, ["cpu", EVIL_RULE])]
        return m

    def test_page(self):
        marks = self.marks()
        doc = replay_doc(marks, ["cpu", EVIL_RULE])
        doc["workloads"] = [{"namespace": "shop", "kind": "Deployment", "name": "web-%d" % i,
                             "cpu_p95_cores": 2.0, "cpu_request_cores": 0.5, "memory_p95_bytes": None,
                             "memory_request_bytes": 1e9, "hot_node_seconds_share": (30 - i) / 465}
                            for i in range(30)]
        doc["workloads"][0]["name"] = EVIL_NODE
        self.render(doc)

        self.assertEqual(self.js("return document.title"), "dynamic-scheduler replay")
        self.assertEqual(self.js("return document.querySelectorAll('img, script, link').length"), 0)
        # Nothing was fetched: no CDN, no file beside it.
        self.assertEqual(self.js("return performance.getEntriesByType('resource').length"), 0)
        # One chart for any rule, then one per rule, each scaled to its own most-marked count.
        charts = self.js("""return Array.from(document.querySelectorAll('.chart'), (c) =>
            [c.querySelector('h3').textContent, Number(c.querySelector('svg').dataset.max),
             c.querySelector('svg path').getBBox().height])""")
        self.assertEqual([c[0] for c in charts],
                         ["marked nodes, any rule", "marked by cpu", "marked by " + EVIL_RULE])
        self.assertEqual([c[1] for c in charts],
                         [max_at_once(marks, None), max_at_once(marks, "cpu"), max_at_once(marks, EVIL_RULE)])
        for c in charts:
            self.assertGreater(c[2], 10, c)  # drawn, not a flat line

        rows = self.js("""return Array.from(document.querySelectorAll('table.nodes tbody tr'),
            (tr) => Array.from(tr.children, (td) => td.textContent))""")
        self.assertEqual(len(rows), len(marks))
        evil = [r for r in rows if r[0] == EVIL_NODE]
        self.assertEqual(len(evil), 1)
        # Two marks, one flap (set again 300 s after it went), marked from 900 s to the end.
        self.assertEqual(evil[0][1:4], ["2", "1d 23h", "1"])
        self.assertEqual(evil[0][5], "1d 23h")
        self.assertEqual(rows[0][0], EVIL_NODE)  # the most marked time first

        workloads = self.js("""return Array.from(document.querySelectorAll('table.workloads tbody tr'),
            (tr) => tr.children[0].textContent)""")
        self.assertEqual(len(workloads), 20)
        self.assertEqual(workloads[0], "shop/Deployment/" + EVIL_NODE)
        self.assertEqual(self.js("return document.querySelectorAll('table.workloads .over').length"), 20)

    def test_compare_side_by_side(self):
        a = self.marks()
        # The tuned file: every other node is never marked, the rest as before.
        b = {n: m for i, (n, m) in enumerate(sorted(a.items())) if i % 2 == 0}
        self.render(replay_doc(a, ["cpu"]), replay_doc(b, ["cpu"]))
        self.assertEqual(self.js("return document.title"), "dynamic-scheduler replay")
        totals = self.js("""return Array.from(document.querySelectorAll('table.compare-totals tbody tr'),
            (tr) => Array.from(tr.children, (td) => td.textContent))""")
        by = {r[0]: r[1:] for r in totals}
        marks_a = sum(len(m) for m in a.values())
        marks_b = sum(len(m) for m in b.values())
        self.assertEqual(by["marks"][:2], [str(marks_a), str(marks_b)])
        self.assertEqual(by["most marked at once"][:2],
                         [str(max_at_once(a, None)), str(max_at_once(b, None))])
        differ = self.js("""return Array.from(document.querySelectorAll('table.compare-nodes tbody tr'),
            (tr) => tr.children[0].textContent)""")
        self.assertEqual(sorted(differ), sorted(set(a) - set(b)))
        side = self.js("""return Array.from(document.querySelectorAll('.side .chart'),
            (c) => c.getBoundingClientRect().top)""")
        self.assertEqual(len(side), 2)
        self.assertEqual(side[0], side[1])  # beside each other, not one under the other


if __name__ == "__main__":
    unittest.main()
