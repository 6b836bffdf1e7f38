#!/usr/bin/env python3
"""The replay's speed (docs/replay.md): N nodes x 4 rules x D days at a 60 s step against a real
history store, offline (-nodes_file): Prometheus (history backfilled with promtool) or
VictoriaMetrics (history streamed through its import API). Prints the wall time, the peak RSS of
the replay, its own summary line of where the time went (the store, decode, decisions) and the
machine's load around the run.
Usage: bench/replay_bench.py [--store prometheus|victoria] [--nodes 1000] [--days 7] [--keep DIR]
Targets: issue 26, 1,000 nodes x 4 rules x 7 days in <= 60 s wall and <= 200 MB RSS on 2 cores;
issue 40, 30 days in <= 120 s and <= 200 MB, on Prometheus and on VictoriaMetrics."""
import argparse
import http.client
import json
import math
import multiprocessing
import os
import re
import shutil
import signal
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

METRICS = (("bench_cpu", 50), ("bench_mem", 60))
# promtool writes blocks of the largest of 2 h, 6 h, 18 h, 54 h... within --max-block-duration,
# aligned to multiples of it since the epoch: 18 h here.
BLOCK = 18 * 3600


def nice():
    """Generation and backfill yield the CPU to the other engineers' work (and to the replay)."""
    os.nice(10)


def values(base):
    """The daily wave's 1,440 values as text, without and with the hot hour's +30."""
    wave = [base + 20 * math.sin(2 * math.pi * i / 1440) for i in range(1440)]
    return ["%.1f" % v for v in wave], ["%.1f" % (v + 30) for v in wave]


def series_lines(metric, base_text, n, start, k0, k1, ts_suffix=""):
    """One node's samples k0 <= k < k1 (one a minute from `start`): a daily wave plus its own
    phase, and a hot hour now and then. Timestamps in seconds, or ms with ts_suffix "000"."""
    normal, hot = base_text
    prefix = '%s{node="node-%05d"} ' % (metric, n)
    phase, shift = (n * 37) % 1440, n * 53
    return "".join([prefix + (hot if (k + shift) % 2000 < 60 else normal)[(k + phase) % 1440] + " " +
                    str(start + 60 * k) + ts_suffix + "\n" for k in range(k0, k1)])


def block_file(args):
    """The OpenMetrics file of steps k0 <= k < k1 (one block of promtool's)."""
    path, nodes, start, k0, k1 = args
    with open(path, "w") as f:
        for metric, base in METRICS:
            text = values(base)
            f.write("# TYPE %s gauge\n" % metric)
            for n in range(nodes):
                f.write(series_lines(metric, text, n, start, k0, k1))
        f.write("# EOF\n")
    return path


def backfill_prometheus(d, nodes, start, steps):
    """One OpenMetrics file per 18 h block, each backfilled as that block: promtool parses its
    whole input once per block it writes, so a single 30-day file would be parsed 40 times (and
    files that straddled blocks would write overlapping ones). The next file is written while
    promtool reads the current one."""
    blocks = []
    k = 0
    while k < steps:
        t = start + 60 * k
        k1 = min(steps, k + (BLOCK - t % BLOCK + 59) // 60)
        blocks.append((os.path.join(d, "block-%03d.om" % len(blocks)), nodes, start, k, k1))
        k = k1
    data = os.path.join(d, "data")
    with multiprocessing.Pool(1, initializer=nice) as pool:
        ahead = pool.apply_async(block_file, (blocks[0],))
        for i in range(len(blocks)):
            path = ahead.get()
            if i + 1 < len(blocks):
                ahead = pool.apply_async(block_file, (blocks[i + 1],))
            subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics",
                            "--max-block-duration=18h", path, data], check=True,
                           stdout=subprocess.DEVNULL, preexec_fn=nice)
            os.remove(path)


def start_victoria(d, port, niced=False):
    cmd = ["victoria-metrics", "-storageDataPath=" + os.path.join(d, "vm-data"),
           "-httpListenAddr=127.0.0.1:%d" % port, "-retentionPeriod=100y",
           # No response cache: a second run of the bench must not be served the first one's
           # answers. (The replay asks with nocache=1 anyway, which bypasses it the same way; a
           # replay from before that change needs the flag to read any point at all.)
           "-search.disableCache", "-search.latencyOffset=0s"]
    log = open(os.path.join(d, "victoria.log"), "ab")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         preexec_fn=nice if niced else None)
    url = "http://127.0.0.1:%d" % port

    def healthy():
        if p.poll() is not None:
            raise SystemExit("victoria-metrics exited: see " + log.name)
        try:
            return urllib.request.urlopen(url + "/health", timeout=2).status == 200
        except OSError:
            return False
    wait_until(healthy, 120, what="VictoriaMetrics healthy")
    return p, url


def stop(p):
    p.send_signal(signal.SIGINT)  # both stores shut down cleanly on it (VictoriaMetrics flushes)
    try:
        p.wait(120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def import_part(args):
    """Streams every series of nodes n with n % parts == part to /api/v1/import/prometheus in one
    chunked POST (ms timestamps), one series per chunk: no file, nothing held but one series."""
    port, nodes, start, steps, part, parts = args

    def body():
        for metric, base in METRICS:
            text = values(base)
            for n in range(part, nodes, parts):
                yield series_lines(metric, text, n, start, 0, steps, "000").encode()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/api/v1/import/prometheus", body=body(), encode_chunked=True,
              headers={"Content-Type": "text/plain"})
    r = c.getresponse()
    text = r.read().decode(errors="replace")
    if r.status not in (200, 204):
        raise RuntimeError("import answered HTTP %d: %s" % (r.status, text[:500]))


def backfill_victoria(d, nodes, start, steps):
    """Two import streams at once (each generated in its own process), into a VictoriaMetrics
    started at nice 10 for the import only; flushed and stopped after it."""
    port = free_port()
    vm, url = start_victoria(d, port, niced=True)
    try:
        parts = 2
        with multiprocessing.Pool(parts, initializer=nice) as pool:
            pool.map(import_part, [(port, nodes, start, steps, i, parts) for i in range(parts)])
        urllib.request.urlopen(url + "/internal/force_flush", timeout=600).read()
    finally:
        stop(vm)


def victoria_settled(url):
    """No merge running and no row waiting: a run right after the import must not share the CPU
    with VictoriaMetrics' own background work."""
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    busy = 0.0
    for line in text.splitlines():
        if line.startswith(("vm_active_merges{", "vm_pending_rows{")):
            busy += float(line.rsplit(" ", 1)[1])
    return busy == 0


def cpu_seconds(pid):
    """A process's user + system CPU so far (/proc/<pid>/stat), its threads included."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds():
    """CPU seconds every core spent busy so far (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        t = [int(x) for x in f.readline().split()[1:]]
    return (sum(t[:8]) - t[3] - t[4]) / os.sysconf("SC_CLK_TCK")


def node_list(nodes):
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
            "items": [{"metadata": {"name": "node-%05d" % n, "labels": {"kubernetes.io/hostname": "node-%05d" % n}},
                       "status": {"addresses": [{"type": "InternalIP", "address": "10.1.%d.%d" % (n // 250, n % 250)}]}}
                      for n in range(nodes)]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--days", type=float, default=7)
    ap.add_argument("--store", choices=("prometheus", "victoria"), default="prometheus")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--keep", default="",
                    help="directory to keep the backfilled history in and reuse on the next run "
                         "(same --nodes and --days; one history per store): backfilling takes minutes")
    ap.add_argument("--backfill-only", action="store_true",
                    help="write the history into --keep and stop (no replay)")
    args = ap.parse_args()
    if args.backfill_only and not args.keep:
        ap.error("--backfill-only needs --keep")
    d = args.keep or tempfile.mkdtemp(prefix="ds-replay-bench-")
    os.makedirs(d, exist_ok=True)
    store = None
    try:
        steps = int(args.days * 1440)
        backfill = 0.0
        # history.json: Prometheus' TSDB in data/ (the name earlier --keep directories have).
        meta = os.path.join(d, "history.json" if args.store == "prometheus" else "history-victoria.json")
        if args.keep and os.path.exists(meta):
            with open(meta) as f:
                m = json.load(f)
            assert (m["nodes"], m["steps"]) == (args.nodes, steps), "--keep holds another history"
            start = m["start"]
        else:
            start = (int(time.time()) // 3600 - 3) * 3600 - steps * 60
            t = time.time()
            if args.store == "prometheus":
                shutil.rmtree(os.path.join(d, "data"), ignore_errors=True)
                backfill_prometheus(d, args.nodes, start, steps)
            else:
                shutil.rmtree(os.path.join(d, "vm-data"), ignore_errors=True)
                backfill_victoria(d, args.nodes, start, steps)
            backfill = time.time() - t
            with open(meta, "w") as f:
                json.dump({"nodes": args.nodes, "steps": steps, "start": start}, f)
            print("history: %d nodes x 2 metrics x %d steps generated and backfilled into %s in %.1f s"
                  % (args.nodes, steps, args.store, backfill), flush=True)
        if args.backfill_only:
            return 0
        port = free_port()
        if args.store == "prometheus":
            with open(os.path.join(d, "prometheus.yml"), "w") as f:
                f.write("global: {scrape_interval: 1m}\n")
            prom_log = open(os.path.join(d, "prometheus.log"), "ab")
            store = subprocess.Popen(
                ["prometheus", "--config.file=" + os.path.join(d, "prometheus.yml"),
                 "--storage.tsdb.path=" + os.path.join(d, "data"),
                 # Long enough to keep the oldest block; blocks as backfilled (18 h), so that no
                 # compaction starts during the run (the default maximum is a tenth of retention).
                 "--storage.tsdb.retention.time=%dd" % (math.ceil(args.days) + 30),
                 "--storage.tsdb.max-block-duration=18h",
                 "--web.listen-address=127.0.0.1:%d" % port],
                stdout=subprocess.DEVNULL, stderr=prom_log)
            prom_log.close()  # the child has its own
            url = "http://127.0.0.1:%d" % port

            def ready():
                try:
                    return urllib.request.urlopen(url + "/-/ready", timeout=2).status == 200
                except OSError:
                    return False
            wait_until(ready, 300, what="Prometheus ready")
        else:
            store, url = start_victoria(d, port)
            wait_until(lambda: victoria_settled(url), 900, interval=2, what="VictoriaMetrics' merges")
        with open(os.path.join(d, "rule.yaml"), "w") as f:
            f.write(RULES)
        with open(os.path.join(d, "nodes.json"), "w") as f:
            json.dump(node_list(args.nodes), f)
        cmd = [os.path.join(args.build, "dynamic-scheduler"), "replay", "-r", os.path.join(d, "rule.yaml"),
               "-prom", url, "-nodes_file", os.path.join(d, "nodes.json"), "-from", str(start + 30),
               "-to", str(start + 30 + (steps - 1) * 60), "-step", "60", "-query_timeout", "60",
               "-out", os.path.join(d, "out-" + args.store)]
        load_before = os.getloadavg()
        store_cpu, busy = cpu_seconds(store.pid), machine_busy_seconds()
        t = time.time()
        out_path = os.path.join(d, "replay.log")
        with open(out_path, "w") as out:
            p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
            # wait4: this child's own peak RSS (promtool's or the importers', also children, must
            # not count).
            _, status, usage = os.wait4(p.pid, 0)
        wall = time.time() - t
        store_cpu = cpu_seconds(store.pid) - store_cpu
        busy = machine_busy_seconds() - busy
        load_after = os.getloadavg()
        rss_mb = usage.ru_maxrss / 1024
        code = os.waitstatus_to_exitcode(status)
        with open(out_path) as f:
            log = f.read()
        print(log)
        totals = {}
        if code == 0:
            with open(os.path.join(d, "out-" + args.store, "replay.json")) as f:
                totals = json.load(f)["totals"]
        where = re.search(r"^time: .*$", log, re.M)
        print("replay: %s, %d nodes x 4 rules x %g days at 60 s: %d steps (%s outage steps), "
              "%.1f s wall, peak RSS %.0f MB, CPU %.1f s user + %.1f s sys; the store's CPU meanwhile %.1f s "
              "(exit %d)"
              % (args.store, args.nodes, args.days, totals.get("steps", 0), totals.get("outage_steps", "?"),
                 wall, rss_mb, usage.ru_utime, usage.ru_stime, store_cpu, code))
        print("where the time went: " + (where.group(0) if where else "(no time line)"))
        # What else ran: the machine is shared (2 cores, other engineers' builds and tests).
        others = max(0.0, busy - usage.ru_utime - usage.ru_stime - store_cpu)
        print("machine: load average (1, 5, 15 min) before %.2f %.2f %.2f, after %.2f %.2f %.2f; "
              "%d cores busy %.0f%% of the run, other processes' CPU %.1f s"
              % (load_before + load_after + (os.cpu_count(), 100 * busy / wall / os.cpu_count(), others)))
        return code
    finally:
        if store is not None:
            stop(store)
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
