#!/usr/bin/env python3
"""What a `predict:` rule costs Prometheus, cached (as the controller does it) against naive.

For each node count, a real Prometheus (Debian's) is started on a TSDB backfilled with promtool:
10 days of one gauge per node (`bench_pred_cpu{node}`), a sample every --step seconds, peaking
daily. Then the queries are timed, with Prometheus's own figures (`stats=all`):

  day      the controller's query for one finished day, evaluated at its end:
           quantile_over_time(0.95, (bench_pred_cpu)[86400s:60s]). Cached, a rule sends 8 of
           these once (cold start), then one per new day, and none in a steady cycle.
  naive    the same 8 day queries again every cycle (what a controller without the cache sends).
  8d       one subquery over all 8 days, quantile_over_time(0.95, (bench_pred_cpu)[8d:1m]):
           the cheapest uncached form (one P95 over 8 days, not a weighted mean of daily P95s).

Writes bench/PREDICTION.md (the table and how it was made) unless --no-write.
  bench/prediction_cost.py                     # 1,000 and 10,000 nodes
  bench/prediction_cost.py --nodes 200 --no-write
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
METRIC = "bench_pred_cpu"
DAYS = 8
INTERVAL = 10  # the controller's default cycle, for the per-day figures


def write_history(path, nodes, step, now):
    start, end = (int(now) // 86400 - 10) * 86400, int(now) - 2 * 3600
    with open(path, "w") as f:
        f.write("# TYPE %s gauge\n" % METRIC)
        for n in range(nodes):
            peak = 40 + (n * 37) % 60  # peaks spread from 40 to 99
            name = "node-%05d" % n
            rows = []
            for t in range(start, end, step):
                hour = (t % 86400) / 3600
                rows.append('%s{node="%s"} %d %d\n' % (METRIC, name, peak if 10 <= hour < 14 else 30, t))
            f.write("".join(rows))
        f.write("# EOF\n")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(base, expr, at):
    url = base + "/api/v1/query?" + urllib.parse.urlencode(
        {"query": expr, "time": "%.3f" % at, "stats": "all", "timeout": "120s"})
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=180) as r:
            body = json.loads(r.read())
    except urllib.error.HTTPError as e:
        body = json.loads(e.read())
    wall = time.monotonic() - t0
    if body.get("status") != "success":
        return {"error": body.get("error", "?"), "wall": wall}
    stats = body["data"].get("stats", {})
    return {"wall": wall, "series": len(body["data"]["result"]),
            "exec": stats.get("timings", {}).get("execTotalTime", float("nan")),
            "samples": stats.get("samples", {}).get("totalQueryableSamples", 0),
            "peak": stats.get("samples", {}).get("peakSamples", 0)}


def measure(nodes, step, repeat):
    d = tempfile.mkdtemp(prefix="ds-pred-bench-")
    prom = None
    try:
        now = time.time()
        om = os.path.join(d, "history.om")
        t0 = time.monotonic()
        write_history(om, nodes, step, now)
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
                        om, os.path.join(d, "data")], check=True, stdout=subprocess.DEVNULL)
        os.remove(om)
        backfill = time.monotonic() - t0
        with open(os.path.join(d, "p.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1m\n")
        port = free_port()
        base = "http://127.0.0.1:%d" % port
        log = open(os.path.join(d, "prom.log"), "wb")
        prom = subprocess.Popen(["prometheus", "--config.file=" + os.path.join(d, "p.yml"),
                                 "--storage.tsdb.path=" + os.path.join(d, "data"),
                                 "--storage.tsdb.retention.time=30d",
                                 "--web.listen-address=127.0.0.1:%d" % port], stdout=log, stderr=log)
        for _ in range(600):
            try:
                if urllib.request.urlopen(base + "/-/ready", timeout=1).status == 200:
                    break
            except Exception:
                time.sleep(0.2)
        last_end = (int(now - 300) // 86400) * 86400  # the newest finished day's end (UTC)
        day_expr = "quantile_over_time(0.95, (\n%s\n)[86400s:60s])" % METRIC
        days = [query(base, day_expr, last_end - k * 86400 - 0.001) for k in range(DAYS)]  # warm
        runs = {"day": [], "naive": [], "8d": []}
        for _ in range(repeat):
            runs["day"].append(query(base, day_expr, last_end - 0.001))
            naive = [query(base, day_expr, last_end - k * 86400 - 0.001) for k in range(DAYS)]
            runs["naive"].append({
                "wall": sum(q["wall"] for q in naive), "exec": sum(q.get("exec", 0) for q in naive),
                "samples": sum(q.get("samples", 0) for q in naive), "peak": max(q.get("peak", 0) for q in naive),
                "series": naive[0].get("series", 0)})
            runs["8d"].append(query(base, "quantile_over_time(0.95, (%s)[8d:1m])" % METRIC, last_end - 0.001))
        assert all(q.get("series") == nodes for q in days), days[0]
        return {"nodes": nodes, "step": step, "backfill_seconds": backfill, "runs": runs}
    finally:
        if prom is not None:
            prom.send_signal(signal.SIGTERM)
            prom.wait(60)
        shutil.rmtree(d, ignore_errors=True)


def med(runs, key):
    vals = [r[key] for r in runs if key in r]
    return statistics.median(vals) if vals else float("nan")


def table(results):
    per_day = 86400 // INTERVAL
    out = ["| nodes | query | queries per cycle, steady | queries per day | wall ms (median) | "
           "Prometheus exec ms | samples read | peak samples |",
           "|---|---|---|---|---|---|---|---|"]
    for r in results:
        for name, cycle, day in (("day (cached)", "0", "1 (+8 at start)"),
                                 ("naive: 8 days every cycle", str(DAYS), "{:,}".format(DAYS * per_day)),
                                 ("8d subquery every cycle", "1", "{:,}".format(per_day))):
            runs = r["runs"][{"day (cached)": "day", "naive: 8 days every cycle": "naive",
                              "8d subquery every cycle": "8d"}[name]]
            err = next((x["error"] for x in runs if "error" in x), None)
            if err:
                out.append("| {:,} | {} | {} | {} | failed: {} | | | |".format(r["nodes"], name, cycle, day, err))
                continue
            out.append("| {:,} | {} | {} | {} | {:.0f} | {:.0f} | {:,} | {:,} |".format(
                r["nodes"], name, cycle, day, med(runs, "wall") * 1000, med(runs, "exec") * 1000,
                int(med(runs, "samples")), int(med(runs, "peak"))))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--step", type=int, default=600, help="seconds between history samples")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    results = []
    for n in args.nodes:
        print("%d nodes: backfilling and querying..." % n, file=sys.stderr)
        results.append(measure(n, args.step, args.repeat))
    md = table(results)
    print(md)
    if args.no_write:
        return
    with open(os.path.join(HERE, "PREDICTION.md"), "w") as f:
        f.write("# What a `predict:` rule costs Prometheus\n\n"
                "Generated by `bench/prediction_cost.py` (do not edit by hand); run %s UTC on this project's "
                "2-core test machine, shared with other builds, so the times are indicative.\n\n" %
                time.strftime("%Y-%m-%d %H:%M", time.gmtime()))
        f.write("Prometheus %s (Debian) on a TSDB backfilled with `promtool tsdb create-blocks-from openmetrics`: "
                "10 days of one gauge per node, a sample every %d s. Each query is timed %d times (median), "
                "with Prometheus's own `stats=all` figures. A cycle is %d s, so a day has %s cycles.\n\n" %
                (prometheus_version(), args.step, args.repeat, INTERVAL, "{:,}".format(86400 // INTERVAL)))
        f.write(md + "\n\n")
        f.write("- **day (cached)** is what the controller sends: one query per finished day, evaluated at the "
                "day's end, kept for the rule's `days`. Steady cycles send nothing; a new day costs one query "
                "a little after midnight; a cold start costs `days` queries, at most %d a cycle.\n"
                "- **naive** recomputes the same 8 daily quantiles every cycle: 8 times the day query's cost, "
                "%s times a day.\n"
                "- **8d subquery** is the cheapest uncached form (one P95 over all 8 days, unweighted): it "
                "reads as many samples as the 8 day queries together. Prometheus's default "
                "`--query.max-samples` (50,000,000) bounds the samples one query holds at once.\n\n" %
                (2, "{:,}".format(86400 // INTERVAL)))
        for r in results:
            day, naive = med(r["runs"]["day"], "exec"), med(r["runs"]["naive"], "exec")
            f.write("At {:,} nodes Prometheus spends {:.1f} s a day on the cached rule (one day query) and "
                    "{:,.0f} s a day on the naive one ({:.1f} s a cycle{}).\n".format(
                        r["nodes"], day, naive * (86400 // INTERVAL), naive,
                        ": longer than the %d s cycle itself" % INTERVAL if naive > INTERVAL else ""))
        f.write("\n")
        f.write("Backfill took " + ", ".join("%.0f s at %s nodes" % (r["backfill_seconds"], "{:,}".format(r["nodes"]))
                                             for r in results) + " (writing the file included).\n")
    print("wrote bench/PREDICTION.md", file=sys.stderr)


def prometheus_version():
    out = subprocess.run(["prometheus", "--version"], capture_output=True, text=True)
    text = out.stdout + out.stderr
    return text.split()[2] if len(text.split()) > 2 else "?"


if __name__ == "__main__":
    main()
