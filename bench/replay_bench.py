#!/usr/bin/env python3
"""The replay's speed (docs/replay.md): N nodes x 4 rules x D days at a 60 s step against a real
Prometheus whose history is backfilled with promtool, offline (-nodes_file). Prints the wall time,
the peak RSS of the replay, and where the time went (its own summary line: Prometheus, decode,
decisions). Usage: bench/replay_bench.py [--nodes 1000] [--days 7] [--build build]
Targets (issue 26): 1,000 nodes x 4 rules x 7 days in <= 60 s wall, RSS <= 200 MB, on 2 cores."""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "integration"))
from harness import free_port, wait_until  # noqa: E402

# Two metrics, four rules: two queries over each, as a rule file with cpu and memory rules and a
# level or a pool would ask; each rule is its own query over every node.
RULES = """rules:
  - {name: cpu, query: bench_cpu, threshold: 85, clearThreshold: 70, for: 5m}
  - {name: cpu-avg, query: "avg_over_time(bench_cpu[10m])", threshold: 80, for: 0s}
  - {name: mem, query: bench_mem, threshold: 90, clearThreshold: 80}
  - {name: mem-rel, query: bench_mem, threshold: 25, relativeTo: mean}
missingDataGrace: 3m
"""


def history(path, nodes, start, steps):
    """Each node: a daily wave plus its own phase, and a hot hour now and then."""
    with open(path, "w") as f:
        for metric, base in (("bench_cpu", 50), ("bench_mem", 60)):
            f.write("# TYPE %s gauge\n" % metric)
            for n in range(nodes):
                name = "node-%05d" % n
                phase = (n * 37) % 1440
                lines = []
                for k in range(steps):
                    v = base + 20 * math.sin(2 * math.pi * ((k + phase) % 1440) / 1440)
                    if (k + n * 53) % 2000 < 60:
                        v += 30
                    lines.append('%s{node="%s"} %.1f %d\n' % (metric, name, v, start + 60 * k))
                f.write("".join(lines))
        f.write("# EOF\n")


def node_list(nodes):
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
            "items": [{"metadata": {"name": "node-%05d" % n, "labels": {"kubernetes.io/hostname": "node-%05d" % n}},
                       "status": {"addresses": [{"type": "InternalIP", "address": "10.1.%d.%d" % (n // 250, n % 250)}]}}
                      for n in range(nodes)]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--days", type=float, default=7)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--keep", default="",
                    help="directory to keep the backfilled TSDB in and reuse on the next run "
                         "(same --nodes and --days): backfilling a week of 1,000 nodes takes minutes")
    args = ap.parse_args()
    d = args.keep or tempfile.mkdtemp(prefix="ds-replay-bench-")
    os.makedirs(d, exist_ok=True)
    prom = None
    try:
        steps = int(args.days * 1440)
        gen = backfill = 0.0
        meta = os.path.join(d, "history.json")
        if args.keep and os.path.exists(meta):
            with open(meta) as f:
                m = json.load(f)
            assert (m["nodes"], m["steps"]) == (args.nodes, steps), "--keep holds another history"
            start = m["start"]
        else:
            start = (int(time.time()) // 3600 - 3) * 3600 - steps * 60
            t = time.time()
            history(os.path.join(d, "h.om"), args.nodes, start, steps)
            gen = time.time() - t
            t = time.time()
            subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
                            os.path.join(d, "h.om"), os.path.join(d, "data")], check=True,
                           stdout=subprocess.DEVNULL)
            backfill = time.time() - t
            os.remove(os.path.join(d, "h.om"))
            with open(meta, "w") as f:
                json.dump({"nodes": args.nodes, "steps": steps, "start": start}, f)
        port = free_port()
        with open(os.path.join(d, "prometheus.yml"), "w") as f:
            f.write("global: {scrape_interval: 1m}\n")
        prom = subprocess.Popen(["prometheus", "--config.file=" + os.path.join(d, "prometheus.yml"),
                                 "--storage.tsdb.path=" + os.path.join(d, "data"),
                                 "--storage.tsdb.retention.time=30d",
                                 "--web.listen-address=127.0.0.1:%d" % port],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = "http://127.0.0.1:%d" % port

        def ready():
            try:
                return urllib.request.urlopen(url + "/-/ready", timeout=2).status == 200
            except OSError:
                return False
        wait_until(ready, 120, what="Prometheus ready")
        with open(os.path.join(d, "rule.yaml"), "w") as f:
            f.write(RULES)
        with open(os.path.join(d, "nodes.json"), "w") as f:
            json.dump(node_list(args.nodes), f)
        cmd = [os.path.join(args.build, "dynamic-scheduler"), "replay", "-r", os.path.join(d, "rule.yaml"),
               "-prom", url, "-nodes_file", os.path.join(d, "nodes.json"), "-from", str(start + 30),
               "-to", str(start + 30 + (steps - 1) * 60), "-step", "60", "-query_timeout", "60",
               "-out", os.path.join(d, "out")]
        t = time.time()
        out_path = os.path.join(d, "replay.log")
        with open(out_path, "w") as out:
            p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
            # wait4: this child's own peak RSS (promtool's, also a child, must not count).
            _, status, usage = os.wait4(p.pid, 0)
        wall = time.time() - t
        rss_mb = usage.ru_maxrss / 1024
        code = os.waitstatus_to_exitcode(status)
        with open(out_path) as f:
            print(f.read())
        print("history: %d nodes x 2 metrics x %d steps generated in %.1f s, backfilled in %.1f s"
              % (args.nodes, steps, gen, backfill))
        print("replay: %d nodes x 4 rules x %.1f days at 60 s: %.1f s wall, peak RSS %.0f MB (exit %d)"
              % (args.nodes, args.days, wall, rss_mb, code))
        return code
    finally:
        if prom is not None:
            prom.terminate()
            prom.wait(30)
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
