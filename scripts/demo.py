#!/usr/bin/env python3
"""The demo: real Prometheus + pushgateway, the Kubernetes API simulator with a handful of
nodes, a load generator that makes nodes run hot and cool down, and dynamic-scheduler labelling
and unlabelling them live. Ctrl-C stops everything (or DEMO_DURATION=seconds)."""
import math
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "integration"))
from harness import Controller, Stack, wait_until  # noqa: E402

RULES = """# The demo's rule.yaml (current format; see README for every field).
interval: 2s
missingDataGrace: 10s
rules:
  - name: cpu
    query: node_cpu_usage_percent
    operator: ">"
    threshold: 80
    clearThreshold: 65
    for: 2s
  - name: memory
    query: node_memory_usage_percent
    operator: ">"
    threshold: 85
    clearThreshold: 75
  - name: memory_available
    query: k8s_node_memory_available_bytes
    operator: "<"
    threshold: 500000000
    clearThreshold: 800000000
"""

NODES = ["node-%05d" % i for i in range(2, 7)]  # node-00001 is the control plane: not managed
GI = 1 << 30


def load(node_index, t):
    """Each node follows its own slow wave so they cross the thresholds at different times."""
    phase = node_index * 1.3
    cpu = 55 + 40 * math.sin(t / 9.0 + phase)
    mem = 60 + 30 * math.sin(t / 14.0 + phase * 0.7)
    avail = max(0.1 * GI, 2.0 * GI + 1.9 * GI * math.sin(t / 11.0 + phase * 1.9))
    return cpu, mem, avail


def main():
    duration = float(os.environ.get("DEMO_DURATION", "0"))
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    print("starting Prometheus, pushgateway and the Kubernetes API simulator on 127.0.0.1 ...", flush=True)
    stack = Stack(nodes=len(NODES) + 1, control_plane=1)
    controller = None
    try:
        stack.start()
        print("  prometheus  %s\n  pushgateway %s\n  kubernetes  %s  (KUBECONFIG=%s)\n  work dir    %s"
              % (stack.prom, stack.pgw, stack.sim_url, stack.admin_kubeconfig, stack.dir), flush=True)
        t0 = time.monotonic()

        def push_all():
            t = time.monotonic() - t0
            for i, n in enumerate(NODES):
                cpu, mem, avail = load(i, t)
                stack.push("node_cpu_usage_percent", n, "%.1f" % cpu, {"node": n})
                stack.push("node_memory_usage_percent", n, "%.1f" % mem, {"node": n})
                stack.push("k8s_node_memory_available_bytes", n, "%d" % avail,
                           {"node": n, "ip": "10.0.0.%d" % (i + 2)})
        push_all()
        stack.wait_value('count(node_cpu_usage_percent)', len(NODES))
        controller = Controller(stack, RULES, args=["-s", "2"], name="dynamic-scheduler")
        print("  dynamic-scheduler %s  (/status /nodes /metrics)\n" % controller.url, flush=True)
        print("rules: cpu > 80%% (clears <= 65%%, for 2s) | memory > 85%% (clears <= 75%%) | "
              "memory.available < 500MB (clears >= 800MB)\n", flush=True)
        seen_lines = 0
        last_view = 0
        while not stop["now"] and (duration <= 0 or time.monotonic() - t0 < duration):
            push_all()
            # The controller logs every label change once, with the rule, value and threshold.
            lines = [l for l in controller.proc.output().splitlines()
                     if "set status=presure" in l or "removed status" in l]
            for l in lines[seen_lines:]:
                msg = l.split("] ", 1)[-1]
                print("%s  %s %s" % (time.strftime("%H:%M:%S"),
                                      "LABELLED  " if msg.startswith("set") else "UNLABELLED", msg), flush=True)
            seen_lines = len(lines)
            if time.monotonic() - last_view >= 6:
                last_view = time.monotonic()
                view(stack, controller, time.monotonic() - t0)
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        print("\nstopping ...", flush=True)
        if controller:
            controller.stop()
            out = controller.proc.output()
            print(out.count("set status=presure"), "labels set and", out.count("removed status"),
                  "removed during the demo")
        stack.stop()
        print("stopped; no process left behind.")


def describe(hold):
    """'cpu 91 > 80', or for a value inside the hysteresis band 'cpu 71 (held until <= 65)'."""
    v, op, th, clear = hold["value"], hold["operator"], hold["threshold"], hold["clearThreshold"]
    over = v > th if op == ">" else v < th
    if over:
        return "%s %.4g %s %.4g" % (hold["rule"], v, op, th)
    return "%s %.4g (held until %s %.4g)" % (hold["rule"], v, "<=" if op == ">" else ">=", clear)


def view(stack, controller, t):
    try:
        nodes = {n["name"]: n for n in controller.nodes().get("nodes", [])}
    except Exception:  # the controller may still be starting
        nodes = {}
    print("\n%-11s %6s %6s %9s  %-15s %s" % ("NODE", "CPU%", "MEM%", "MEM.AVAIL", "LABEL", "WHY"))
    for i, n in enumerate(NODES):
        cpu, mem, avail = load(i, t)
        why = ", ".join(describe(r) for r in nodes.get(n, {}).get("rules", []))
        label = "status=presure" if n in nodes else "-"
        print("%-11s %6.1f %6.1f %7.2fGB  %-15s %s" % (n, cpu, mem, avail / 1e9, label, why))
    print(flush=True)


if __name__ == "__main__":
    main()
