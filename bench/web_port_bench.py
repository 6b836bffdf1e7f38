#!/usr/bin/env python3
"""The controller's web port under hostile load (issue 43): the figures behind
test/integration/test_web_port.py, at a realistic cluster size.

The real binary (`-s 1`, production web options, `-probeaddr` on a port of its own) against
run_bench.py's Cluster (real Prometheus and pushgateway, the simulator with N realistic nodes, 4
rules), loaded by build/web_load for a few seconds per scenario:

  quiet         no load: the probes alone (the reference)
  idle-64       256 half-sent requests from 64 source addresses (held until -web_header_timeout)
  idle-1        256 half-sent requests from one address (64 held, the rest answered 503 at once)
  flood         1,000 requests/s to /api/v1/history?nodes=<a few nodes> on 8 kept-alive connections
  idle+flood    idle-64 and flood at once: the issue's acceptance load
  flood-new     the flood with a new connection per request (Connection: close)
  flood-all     the flood, each request naming every node (the page asks for the rows it shows)

Meanwhile, as the kubelet and Prometheus would: /healthz on the probe port and /metrics on the web
port, each on a fresh connection every 0.2 s; and nodes flipped hot and cold through the
pushgateway, each flip timed from the push to the label change on a watch (the `-s 1` reaction,
as in run_bench.py). Per scenario: the probes' latency (p50/p99/max) and failures, the flood's rate,
statuses and latency, what became of the idle connections, the controller's RSS (start/max/end),
CPU seconds (per thread too), threads, its web counters, and the CPU of everything else on the
machine (it is shared). The body sizes of /metrics and /api/v1/history. Markdown tables on
stdout, everything in --out (JSON).

The web port over TLS (-web_tls_cert_file) is not measured: web_load speaks plain HTTP only.

  bench/web_port_bench.py --out /tmp/web_port.json                 # 100 nodes, 15 s a scenario (~2 min)
  bench/web_port_bench.py --nodes 20 --seconds 6 --out /tmp/w.json # quick check
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "test", "integration"))
from harness import BUILD_DIR, CONTROLLER, free_port, http, wait_until  # noqa: E402
from run_bench import Cluster, Watcher, controller_metrics, flip, start_controller, summary  # noqa: E402

WEB_LOAD = os.path.join(BUILD_DIR, "web_load")
PROBE_BOUND_S = 1.0  # the acceptance: /healthz and a scrape within 1 s, every time
REACTION_TARGET_S = 2.5  # -s 1, push to mark, p99 (RESULTS.md, "Controller at scale")

# name, what, web_load flags (source addresses per scenario, so that no scenario meets another's
# connections in the server's per-client count; the probes come from 127.0.0.1).
SCENARIOS = [
    ("quiet", "no load (probes only)", []),
    ("idle-64", "256 idle half-sent requests, 64 addresses",
     ["--idle=256", "--idle_from=127.0.10.1", "--idle_sources=64"]),
    ("idle-1", "256 idle half-sent requests, one address",
     ["--idle=256", "--idle_from=127.0.11.1", "--idle_sources=1"]),
    ("flood", "1,000 req/s to /api/v1/history (4 nodes), 8 kept-alive connections",
     ["--flood_rps=1000", "--flood_conns=8", "--flood_path={few}", "--flood_from=127.0.12.1", "--flood_sources=4"]),
    ("idle+flood", "256 idle (64 addresses) + 1,000 req/s at once",
     ["--idle=256", "--idle_from=127.0.13.1", "--idle_sources=64",
      "--flood_rps=1000", "--flood_conns=8", "--flood_path={few}", "--flood_from=127.0.14.1", "--flood_sources=4"]),
    ("flood-new", "1,000 req/s to /api/v1/history (4 nodes), a new connection each",
     ["--flood_rps=1000", "--flood_conns=8", "--flood_new_connections", "--flood_path={few}",
      "--flood_from=127.0.15.1", "--flood_sources=16"]),
    ("flood-all", "1,000 req/s to /api/v1/history of every node, 8 kept-alive connections",
     ["--flood_rps=1000", "--flood_conns=8", "--flood_path={all}", "--flood_from=127.0.16.1", "--flood_sources=4"]),
]


def thread_cpu(pid):
    """{tid: utime+stime seconds} of every thread of `pid`."""
    hz = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[tid] = (int(fields[11]) + int(fields[12])) / hz
        except OSError:
            pass
    return out


def process_cpu(pid):
    """utime+stime seconds of `pid` (0 once it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def machine_busy():
    """(busy, total, softirq) CPU seconds of all cores together, from /proc/stat. Softirq is the
    kernel's network processing (loopback here), counted in no process's CPU time."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]  # user .. softirq; guest is within user
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(v) - v[3] - v[4]) / hz, sum(v) / hz, v[6] / hz


def body_size(url):
    code, body = http("GET", url)
    assert code == 200, (url, code, body[:200])
    return len(body.encode())


def sizes(ctl, history_nodes, all_nodes):
    return {"metrics": body_size(ctl.url + "/metrics"),
            "history_flood": body_size(ctl.url + "/api/v1/history?nodes=" + ",".join(history_nodes)),
            "history_all_nodes": body_size(ctl.url + "/api/v1/history?nodes=" + ",".join(all_nodes)),
            "state": body_size(ctl.url + "/api/v1/state")}


def web_counters(ctl):
    return {k: v for k, v in controller_metrics(ctl).items()
            if k.startswith("dynamic_scheduler_web_") or k == "dynamic_scheduler_cycles_total"}


def run_scenario(name, what, flags, args, cluster, watcher, ctl, probe_port, flood_paths, flip_nodes, rng):
    pid = ctl.proc.proc.pid
    cmd = [WEB_LOAD, "--target=127.0.0.1:%d" % ctl.port, "--watch_pid=%d" % pid, "--json",
           "--duration=%g" % args.seconds, "--warmup=1",
           "--probe=127.0.0.1:%d/healthz" % probe_port, "--probe=127.0.0.1:%d/metrics" % ctl.port,
           "--probe_every=0.2", "--probe_timeout=5", "--probe_slo=%g" % PROBE_BOUND_S,
           *(f.format(**flood_paths) for f in flags)]
    before = web_counters(ctl)
    stack = {p.name: p.proc.pid for p in cluster.stack.procs if p.alive()}
    stack0 = {k: process_cpu(v) for k, v in stack.items()}
    self0 = sum(os.times()[:2])
    cpu0, busy0, load0 = thread_cpu(pid), machine_busy(), os.getloadavg()[0]
    t0 = time.monotonic()
    load = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    floors, reactions, failed = [], [], 0
    try:
        time.sleep(1)  # the load in place
        # Flips while the load runs, each at a random phase of the cycle and of the scrape.
        while time.monotonic() - t0 < args.seconds - 4:
            node = flip_nodes[(len(reactions) + failed) // 2 % len(flip_nodes)]
            for hot in (True, False):
                time.sleep(rng.uniform(0, 1))
                f, r = flip(cluster, watcher, node, hot, 10)
                if f is not None:
                    floors.append(f)
                if r is None:
                    failed += 1
                else:
                    reactions.append(r)
    finally:
        out, err = load.communicate(timeout=args.seconds + 60)
    if load.returncode != 0:
        raise AssertionError("web_load failed (%d): %s" % (load.returncode, err))
    res = json.loads(out)
    busy1, cpu1 = machine_busy(), thread_cpu(pid)
    stack_cpu = {k: round(process_cpu(v) - stack0[k], 2) for k, v in stack.items()}
    stack_cpu["this script"] = round(sum(os.times()[:2]) - self0, 2)
    after = web_counters(ctl)
    threads = sorted((round(cpu1[t] - cpu0.get(t, 0.0), 2) for t in cpu1), reverse=True)
    busy = busy1[0] - busy0[0]
    softirq = busy1[2] - busy0[2]
    ours = res["process"]["cpu_s"] + res["tool_cpu_s"] + sum(stack_cpu.values()) + softirq
    return {"name": name, "what": what, "web_load": res, "command": " ".join(cmd),
            "reaction": {"reaction": summary(reactions), "floor": summary(floors), "failed": failed},
            "threads_cpu_s": [t for t in threads if t > 0],
            "stack_cpu_s": stack_cpu,
            # Both cores: busy seconds over the scenario, and of them what this run did not use
            # (the machine is shared; the controller's figures include waiting for a core).
            "machine": {"busy_pct": 100.0 * busy / max(1e-9, busy1[1] - busy0[1]),
                        "total_cpu_s": round(busy1[1] - busy0[1], 2),
                        "busy_cpu_s": round(busy, 2), "softirq_cpu_s": round(softirq, 2),
                        "others_cpu_s": round(max(0.0, busy - ours), 2),
                        "others_pct": 100.0 * max(0.0, busy - ours) / max(1e-9, busy1[1] - busy0[1]),
                        "load_before": load0, "load_after": os.getloadavg()[0]},
            "controller_counters": {k: after.get(k, 0) - before.get(k, 0) for k in sorted(after)}}


def fmt_lat(s):
    return "%.0f / %.0f / %.0f ms" % (s["p50"] * 1000, s["p99"] * 1000, s["max"] * 1000) if s["n"] else "-"


def table(res):
    """Two Markdown tables: what the clients saw, and what it cost."""
    L = ["| load | /healthz (probe port): p50 / p99 / max, failed | /metrics (web port): p50 / p99 / max, failed "
         "| flood: answered/s, statuses, p50 / p99 / max | idle: open (max, at the end), closed by the server "
         "(statuses), life p50 | `-s 1` reaction: p50 / max (flips) |",
         "|---|---|---|---|---|---|"]
    for s in res["scenarios"]:
        w = s["web_load"]
        probes = {p["target"].rsplit("/", 1)[1]: p for p in w["probes"]}
        cells = ["%s, %d of %d" % (fmt_lat(probes[k]["latency_s"]), probes[k]["failures"], probes[k]["count"])
                 for k in ("healthz", "metrics")]
        if "flood" in w:
            f = w["flood"]
            errs = sum(f["errors"].values())
            cells.append("%.0f, %s%s, %s" % (f["achieved_rps"], " ".join("%s: %d" % kv for kv in sorted(f["statuses"].items())),
                                             ", errors %d" % errs if errs else "", fmt_lat(f["latency_s"])))
        else:
            cells.append("-")
        if "idle" in w:
            i = w["idle"]
            cells.append("%d, %d; %d (%s), %.2f s" % (i["open_max"], i["open_at_end"], i["closed_by_server"],
                                                  " ".join("%s: %d" % kv for kv in sorted(i["statuses"].items())),
                                                  i["life_s"]["p50"]))
        else:
            cells.append("-")
        r = s["reaction"]
        cells.append("%.2f / %.2f s (%d%s)" % (r["reaction"]["p50"], r["reaction"]["max"], r["reaction"]["n"],
                                               ", %d failed" % r["failed"] if r["failed"] else "")
                     if r["reaction"]["n"] else "- (%d failed)" % r["failed"])
        L.append("| %s | %s |" % (s["what"], " | ".join(cells)))
    L += ["", "| load | controller CPU s (% of one core) | its busiest thread / the next 4, CPU s | RSS start / max / end "
          "| threads (max) | web_load CPU s | both cores: busy, of it softirq, of it not this run's |",
          "|---|---|---|---|---|---|---|"]
    for s in res["scenarios"]:
        w, pr, m = s["web_load"], s["web_load"]["process"], s["machine"]
        th = s["threads_cpu_s"]
        L.append("| %s | %.2f (%.0f %%) | %s / %s | %.1f / %.1f / %.1f MB | %d | %.2f | %.0f %%, %.0f %%, %.0f %% |" % (
            s["what"], pr["cpu_s"], 100 * pr["cpu_s"] / w["elapsed_s"], th[0] if th else 0,
            " ".join("%.2f" % t for t in th[1:5]) or "-",
            pr["rss_kb_start"] / 1024, pr["rss_kb_max"] / 1024, pr["rss_kb_end"] / 1024, pr["threads_max"],
            w["tool_cpu_s"], m["busy_pct"], 100 * m["softirq_cpu_s"] / m["total_cpu_s"], m["others_pct"]))
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=15, help="load per scenario")
    ap.add_argument("--history-nodes", type=int, default=4, help="nodes named in the flood's /api/v1/history")
    ap.add_argument("--scenarios", default=",".join(s[0] for s in SCENARIOS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True, help="JSON file for every figure")
    args = ap.parse_args()
    if not os.access(WEB_LOAD, os.X_OK):
        sys.exit("%s not found: ninja -C %s web_load" % (WEB_LOAD, BUILD_DIR))
    wanted = args.scenarios.split(",")
    rng = random.Random(args.seed)
    res = {"command": " ".join(["bench/web_port_bench.py"] + sys.argv[1:]),
           "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "nodes": args.nodes,
           "seconds": args.seconds, "cores": os.cpu_count(), "load_before": os.getloadavg()[0], "scenarios": [],
           # Which binary: the build directory is rebuilt while people work.
           "binary_built": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(os.path.getmtime(CONTROLLER))),
           "git_head": subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                                      text=True).stdout.strip()}
    cluster = Cluster(args.nodes)
    ctl = watcher = None
    try:
        t = time.monotonic()
        cluster.start()
        watcher = Watcher(cluster)
        watcher.start()
        print("stack up in %.1f s (%d nodes)" % (time.monotonic() - t, args.nodes), flush=True)
        probe_port = free_port()
        ctl = start_controller(cluster, 1, extra=["-probeaddr", "127.0.0.1:%d" % probe_port])
        ctl.wait_ready(60)
        res["ready_seconds"] = time.monotonic() - ctl.start_time
        names = cluster.names
        history_nodes = names[1:1 + args.history_nodes]
        flip_nodes = names[-3:]
        flood_path = "/api/v1/history?nodes=" + ",".join(history_nodes)
        flood_paths = {"few": flood_path, "all": "/api/v1/history?nodes=" + ",".join(names)}
        wait_until(lambda: json.loads(ctl.get(flood_path)[1]).get("nodes"), 30, what="the history's series")
        for _ in range(5):  # every path rendered a few times: the RSS below is steady state's
            for path in ("/metrics", "/api/v1/state", flood_path, "/nodes", "/status"):
                ctl.get(path)
        res["flood_paths"] = flood_paths
        res["body_bytes_start"] = sizes(ctl, history_nodes, names)
        print("ready in %.1f s; bodies: %s" % (res["ready_seconds"], json.dumps(res["body_bytes_start"])), flush=True)
        for name, what, flags in SCENARIOS:
            if name not in wanted:
                continue
            s = run_scenario(name, what, flags, args, cluster, watcher, ctl, probe_port, flood_paths, flip_nodes, rng)
            res["scenarios"].append(s)
            w = s["web_load"]
            print("%s: probes %s; flood %s; idle %s; reaction %s; controller %s" % (
                name, json.dumps({p["target"]: [p["failures"], p["latency_s"]] for p in w["probes"]}),
                json.dumps({k: w["flood"][k] for k in ("achieved_rps", "statuses", "errors", "latency_s")})
                if "flood" in w else "-",
                json.dumps({k: w["idle"][k] for k in ("open_max", "closed_by_server", "statuses", "life_s")})
                if "idle" in w else "-",
                json.dumps(s["reaction"]["reaction"]), json.dumps(w["process"])), flush=True)
            if not ctl.proc.alive():
                raise AssertionError("the controller died under %s" % name)
        res["body_bytes_end"] = sizes(ctl, history_nodes, names)
        res["load_after"] = os.getloadavg()[0]
    except BaseException:
        if ctl is not None:
            print("controller log (tail):\n" + ctl.proc.output()[-3000:], file=sys.stderr)
        raise
    finally:
        if watcher is not None:
            watcher.stopped = True
        if ctl is not None:
            ctl.stop()
        cluster.stop()
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
    print("\nbodies at the end: %s" % json.dumps(res["body_bytes_end"]))
    print(table(res))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
