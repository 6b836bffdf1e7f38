#!/usr/bin/env python3
"""The demo: real Prometheus + pushgateway, the Kubernetes API simulator with a handful of
nodes, a load generator that makes nodes run hot and cool down, and dynamic-scheduler labelling
and unlabelling them live. With --rebalance: pods packed onto one node make it hot, and the
rebalancer marks it, moves pods off it through the Eviction API and lets the mark go once it cooled.
Ctrl-C stops everything (or DEMO_DURATION=seconds)."""
import math
import os
import re
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "integration"))
from harness import Controller, Stack, wait_until  # noqa: E402

RULES = """# The demo's rule.yaml (current format; see docs/reference.md for every field).
interval: 2s
missingDataGrace: 10s
rules:
  - name: cpu
    query: node_cpu_usage_percent
    unit: percent
    operator: ">"
    threshold: 80
    clearThreshold: 65
    for: 2s
  - name: memory
    query: node_memory_usage_percent
    unit: percent
    operator: ">"
    threshold: 85
    clearThreshold: 75
  - name: memory_available
    query: k8s_node_memory_available_bytes
    unit: bytes
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


def stop_on_signals(stop):
    """Ctrl-C and SIGTERM set stop["now"]: the loop ends at its next check and the finally
    stops every process by its PID, instead of an exception at whatever line was running."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.update(now=True))


def stack_went_down(stack, stop, error):
    """Whether `error` (a refused or reset connection, a wait that timed out) is the stack going
    down rather than a fault of the demo: Ctrl-C reaches the whole process group, so Prometheus,
    the pushgateway and the simulator may be gone before the loop sees its stop flag. A part that
    exited without a stop is named (no traceback) and the demo exits 1."""
    if stop["now"]:
        return True
    # A process being stopped resets or refuses connections before it is gone.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and all(p.alive() for p in stack.procs):
        time.sleep(0.1)
    if stop["now"]:
        return True
    gone = [p.name for p in stack.procs if not p.alive()]
    if not gone:
        return False
    print("\n%s exited (%s)" % (", ".join(gone), error), flush=True)
    stop["failed"] = True
    return True


def main(stop):
    duration = float(os.environ.get("DEMO_DURATION", "0"))
    print("starting Prometheus, pushgateway and the Kubernetes API simulator on 127.0.0.1 ...", flush=True)
    stack = Stack(nodes=len(NODES) + 1, control_plane=1)
    controller = None
    live = Live()
    try:
        stack.start()
        live.note("  prometheus  %s\n  pushgateway %s\n  kubernetes  %s  (KUBECONFIG=%s)\n  work dir    %s"
                  % (stack.prom, stack.pgw, stack.sim_url, stack.admin_kubeconfig, stack.dir))
        live.keep_log(os.path.join(stack.dir, "changes.log"))
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
        controller = Controller(stack, RULES, interval=2, name="dynamic-scheduler")
        live.note("  dynamic-scheduler %s  (/status /nodes /metrics)" % controller.url)
        live.note("  web page    %s/  (open it in a browser: the nodes, their values and marks, live)\n"
                  % controller.url)
        live.note("rules: cpu > 80% (clears <= 65%, for 2s) | memory > 85% (clears <= 75%) | "
                  "memory.available < 500 MB (clears >= 800 MB)")
        seen_lines = 0
        last_view = 0
        while not stop["now"] and (duration <= 0 or time.monotonic() - t0 < duration):
            push_all()
            # The controller logs every label change once, with the rule, value and threshold.
            lines = [l for l in controller.proc.output().splitlines()
                     if "set status=presure" in l or "remove status (if still presure)" in l]
            for l in lines[seen_lines:]:
                msg = readable(l.split("] ", 1)[-1])
                live.change("%s %s" % ("LABELLED  " if "set status=presure" in msg else "UNLABELLED", short(msg)),
                            msg)
            seen_lines = len(lines)
            if live.tty or time.monotonic() - last_view >= 6:
                last_view = time.monotonic()
                live.table(view(stack, controller, time.monotonic() - t0))
            live.draw()
            time.sleep(1)
    except (OSError, AssertionError) as e:
        if not stack_went_down(stack, stop, e):
            raise
    finally:
        print("\nstopping ...", flush=True)
        if controller:
            controller.stop()
            out = controller.proc.output()
            print(out.count("set status=presure"), "labels set and", out.count("remove status (if still presure)"),
                  "removed during the demo")
        stack.stop()
        print("stopped; no process left behind.")


def readable(line):
    """The controller logs bytes whole ("value 159992000 < 500000000"): shown as MB here."""
    return re.sub(r"\b\d{7,}(\.\d+)?\b", lambda m: number(float(m.group(0))), line)


def field(line, key):
    """A structured field of a controller log line ( {node="node-00002" reason="..."} ), or None."""
    m = re.search(r'\b%s="((?:[^"\\]|\\.)*)"' % re.escape(key), line)
    return m.group(1).replace('\\"', '"').replace("\\\\", "\\") if m else None


def short(line):
    """A change as one short line: "node-00002: cpu 91.5 % > 80 %" for a mark or its removal,
    "demo/web-1 from node-00002 to node-00004" for an eviction, "demo/web-1 back on node-00002" for
    a bounce-back; the full line is in the change log."""
    pod, node, reason, to = field(line, "pod"), field(line, "node"), field(line, "reason"), field(line, "destination")
    if pod and node and to:
        return "%s from %s to %s" % (pod, node, to)
    if pod and node:
        return "%s back on %s" % (pod, node)
    if node and reason:
        return "%s: %s" % (node, re.sub(r"\brule (\S+) value ", r"\1 ", reason))
    return line


def number(v):
    """91.5 as '91.5'; byte counts (memory.available) as '107 MB' rather than '1.074e+08'."""
    if abs(v) >= 1e6:
        for unit, scale in (("GB", 1e9), ("MB", 1e6)):
            if abs(v) >= scale:
                return "%.3g %s" % (v / scale, unit)
    return "%.4g" % v


class Live:
    """What the demo shows. On a terminal, one screen redrawn in place every second: the addresses and
    rules, the table of nodes, and the last changes with their reasons. Anywhere else (a pipe, a log
    file, the tests) the same as lines that scroll: a table every few seconds, each change once."""

    def __init__(self):
        self.tty = sys.stdout.isatty() and os.environ.get("TERM", "dumb") != "dumb"
        self.header, self.rows, self.changes = [], [], []
        self.log = None  # every change in full, one per line (changes.log in the work dir)

    def keep_log(self, path):
        self.log = open(path, "a")
        self.note("  changes     %s  (each change in full; the lines below are short)" % path)

    def note(self, text):
        print(text, flush=True)
        self.header += text.rstrip("\n").split("\n")

    def change(self, text, full=None):
        line = "%s  %s" % (time.strftime("%H:%M:%S"), text)
        if self.log:
            self.log.write("%s  %s\n" % (time.strftime("%H:%M:%S"), full or text))
            self.log.flush()
        if self.tty:  # cut to the terminal's width: a wrapped line would push the table off
            width = shutil.get_terminal_size().columns
            self.changes = (self.changes + [line if len(line) < width else line[:width - 2] + "\u2026"])[-12:]
        else:
            print(line, flush=True)

    def table(self, rows):
        self.rows = rows
        if not self.tty:
            print("\n" + "\n".join(rows) + "\n", flush=True)

    def draw(self):
        if self.tty:  # home, clear the screen, then the whole frame
            frame = self.header + [""] + self.rows + ["", "recent changes (newest last):"] + self.changes
            sys.stdout.write("\033[H\033[2J" + "\n".join(frame) + "\n")
            sys.stdout.flush()


def describe(hold):
    """'cpu 91 > 80', or for a value inside the hysteresis band 'cpu 71 (held until <= 65)'."""
    v, op, th, clear = hold["value"], hold["operator"], hold["threshold"], hold["clearThreshold"]
    over = v > th if op == ">" else v < th
    if over:  # the controller's own words, in the rule's unit ("memory_available 119.4 MiB < 476.8 MiB")
        return "%s %s" % (hold["rule"], hold["shown"]) if "shown" in hold else \
            "%s %s %s %s" % (hold["rule"], number(v), op, number(th))
    return "%s %s (held until %s %s)" % (hold["rule"], number(v), "<=" if op == ">" else ">=", number(clear))


def view(stack, controller, t):
    try:
        answer = controller.nodes()
        nodes = {n["name"]: n for n in answer.get("nodes", [])}
        # Hot, but the herd cap (maxMarkedFraction) allows no more marks.
        capped = {n["name"]: n for n in answer.get("capped", [])}
    except Exception:  # the controller may still be starting
        nodes, capped = {}, {}
    rows = ["%-11s %6s %6s %9s  %-15s %s" % ("NODE", "CPU%", "MEM%", "MEM.AVAIL", "LABEL", "WHY")]
    for i, n in enumerate(NODES):
        cpu, mem, avail = load(i, t)
        why = ", ".join(describe(r) for r in nodes.get(n, capped.get(n, {})).get("rules", []))
        label = "status=presure" if n in nodes else "- (herd cap)" if n in capped else "-"
        rows.append("%-11s %6.1f %6.1f %7.2fGB  %-15s %s" % (n, cpu, mem, avail / 1e9, label, why))
    return rows


REBALANCE_RULES = """# The rebalancing demo's rule.yaml: mark a hot node, then move pods off it.
interval: 2s
missingDataGrace: 10s
rules:
  - {name: cpu, query: "max by (node) (it_node_cpu)", threshold: 80, clearThreshold: 60, resource: cpu}
rebalance:
  after: 4s                # marked this long before the first eviction
  holdAfterEviction: 10s   # the mark stays so the replacements go elsewhere
  minPodAge: 0s
  podUsage:
    cpu: "sum by (namespace, pod) (it_pod_cpu)"
  limits: {perCycle: 1, perHour: 30, perNodePerHour: 10, nodeCooldown: 4s, perWorkload: 2}
"""
AFFINITY = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [
        {"key": "status", "operator": "NotIn", "values": ["presure"]}]}}]}}
WEB_LABELS = {"app": "web"}
WEB_CONTAINERS = [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                   "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]


def rebalance_demo(duration, stop):
    """Four pods of one workload packed onto node-00002 (the other workers are full by requests,
    not by use) run it at 87 % CPU; the controller marks it, then evicts one pod at a time through
    the Eviction API, the replacements avoid the marked node, the node cools, the mark goes."""
    from pod_load import KubeAdmin, LoadGenerator, running
    print("starting Prometheus, pushgateway and the Kubernetes API simulator (with pods) ...", flush=True)
    stack = Stack(nodes=5, control_plane=1, sim_args=["-pod_grace_seconds", "1", "-pod_start_seconds", "1"])
    controller = load = scenario = show_changes = None
    live = Live()
    try:
        stack.start()
        live.note("  kubernetes  %s  (KUBECONFIG=%s: kubectl get pods -A -o wide)\n  work dir    %s"
                  % (stack.sim_url, stack.admin_kubeconfig, stack.dir))
        live.keep_log(os.path.join(stack.dir, "changes.log"))
        api = KubeAdmin(stack)
        workers = ["node-%05d" % i for i in range(2, 6)]
        for n in workers[1:]:
            api.call("POST", "/api/v1/namespaces/demo/pods", {
                "metadata": {"name": "filler-" + n, "labels": {"app": "filler"}},
                "spec": {"nodeName": n, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                         "resources": {"requests": {"cpu": "3", "memory": "128Mi"}}}]}})
        stack.sim_admin("POST", "/sim/workloads", {
            "namespace": "demo", "name": "web", "replicas": 4,
            "template": {"metadata": {"labels": WEB_LABELS}, "spec": {
                "affinity": AFFINITY, "containers": WEB_CONTAINERS}}})
        load = LoadGenerator(stack)
        load.set("demo", "web", 0.85)  # 4 x 0.85 cores of 3.92: 87 % of the node they share
        load.start()
        wait_until(lambda: len(stack.query("it_pod_cpu > 0")) == 4, 30, what="the pods' usage in Prometheus")
        # Where the seed's loop starts from: the side by side at the end replays the demo's
        # evictions from here, without the mark.
        scenario = [p for p in api.get("/api/v1/pods")["items"] if p["spec"].get("nodeName")]
        controller = Controller(stack, REBALANCE_RULES, interval=2, name="dynamic-scheduler")
        live.note("  dynamic-scheduler %s  (/nodes /rebalance /metrics)" % controller.url)
        live.note("  web page    %s/  (open it in a browser: marks, evictions and the effect, live)\n"
                  % controller.url)
        live.note("web: 4 pods using 0.85 cores each, packed onto node-00002 (the other workers are full by "
                  "requests)\nrule: cpu > 80% (clears <= 60%); rebalance after 4 s marked, one eviction per "
                  "4 s, mark held 10 s after the last")
        t0 = time.monotonic()
        seen = [0]
        last_view = 0
        peaked = False

        def show_changes():
            lines = changes(controller.proc.output())
            for l in lines[seen[0]:]:
                # ('set status=presure {node="node-00002" ...}': "remove" is the other verb.)
                kind = ("EVICTED   " if "rebalance: evicted" in l else "BOUNCE    " if "bounce-back" in l
                        else "MARKED    " if "set status=presure" in l else "UNMARKED  ")
                live.change("%s %s" % (kind, short(l)), l)
            seen[0] = len(lines)
        while not stop["now"] and (duration <= 0 or time.monotonic() - t0 < duration):
            if not peaked and time.monotonic() - t0 >= 40:
                # A traffic peak doubles every web pod's usage: a node left with two of them runs hot.
                peaked = True
                load.set("demo", "web", 1.7)
                live.change("TRAFFIC PEAK: every web pod now uses 1.7 cores")
            show_changes()
            if live.tty or time.monotonic() - last_view >= 5:
                last_view = time.monotonic()
                pods = [p for p in api.get("/api/v1/namespaces/demo/pods?labelSelector=app%3Dweb")["items"]
                        if running(p)]
                marked = stack.labelled()
                rows = ["%-11s %6s  %-15s %s" % ("NODE", "CPU%", "LABEL", "WEB PODS")]
                for n in workers:
                    names = sorted(p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == n)
                    rows.append("%-11s %6.1f  %-15s %s" % (n, load.last.get(n, 0), "status=presure" if n in marked
                                                           else "-", " ".join(names)))
                live.table(rows)
            live.draw()
            time.sleep(1)
    except (OSError, AssertionError) as e:
        if not stack_went_down(stack, stop, e):
            raise
    finally:
        print("\nstopping ...", flush=True)
        if controller:
            code, text = controller.get("/rebalance")
            if code == 200:
                import json
                f = json.loads(text).get("figures", {})
                print("effect: %d evictions, %d replacements, %d bounce-backs, eviction rate %.2f, "
                      "effectiveness %.2f (of %d judged episodes)" % (
                          f.get("evictions", 0), f.get("replacements", 0), f.get("bounceBacks", 0),
                          f.get("evictionRate", 0), f.get("effectiveness", 0), f.get("episodesJudged", 0)))
            controller.stop()
            if show_changes and scenario is not None:
                show_changes()  # the last ones, so every eviction counted below was shown
                side_by_side(stack, scenario, changes(controller.proc.output()))
        if load:
            load.stop()
        stack.stop()
        print("stopped; no process left behind.")


def changes(output):
    """The controller's log lines (their messages) that the demo shows: marks, their removal,
    evictions and bounce-backs."""
    return [l.split("] ", 1)[-1] for l in output.splitlines()
            if "set status=presure" in l or "remove status (if still presure)" in l or "rebalance: evicted" in l
            or "bounce-back" in l]


def side_by_side(stack, scenario, lines):
    """The seed's loop next to ours. With the mark: the demo's evictions and how many replacements
    the controller saw land back on the node they left (its bounce-backs). Without it: the same
    evictions, from the same nodes in the same order, replayed from the scenario as it was before
    the first one, each replacement placed by the simulator's scheduler model (POST /sim/schedule,
    the model that bound the demo's own pods) with the replayed pods as the bound ones and without
    the affinity term. Replayed, not simulated: the effect simulation (bench/effect) models a
    1,000-node week with its own workload generator, and fitting it to 5 nodes and 4 pods would
    measure the fit, not this scenario; the replay uses this scenario's nodes, pods and requests
    and the scheduler's own scoring, for a few HTTP calls."""
    evicted = [(field(l, "pod"), field(l, "node")) for l in lines if "rebalance: evicted" in l]
    bounced = sum(1 for l in lines if "bounce-back" in l)
    bound = [dict(p) for p in scenario]
    replayed = back = 0
    for i, (pod, node) in enumerate(evicted):
        ns, name = pod.split("/", 1)
        # The replay's own replacements have other names: one of the workload's pods on that node.
        mates = [p for p in bound if p["metadata"].get("namespace") == ns and p["spec"]["nodeName"] == node
                 and WEB_LABELS.items() <= p["metadata"].get("labels", {}).items()
                 and not p["metadata"].get("deletionTimestamp")]
        mates.sort(key=lambda p: p["metadata"]["name"] != name)
        if not mates:
            continue  # without the mark the pods never left for this node: nothing to evict there
        # The evicted pod still holds its requests while it terminates, as in the demo.
        victim = mates[0]
        victim["metadata"] = dict(victim["metadata"], deletionTimestamp="1970-01-01T00:00:00Z")
        replacement = {"metadata": {"name": "replay-%d" % i, "namespace": ns, "labels": WEB_LABELS},
                       "spec": {"containers": WEB_CONTAINERS}}
        to = stack.sim_admin("POST", "/sim/schedule", {"pod": replacement, "bound": bound})["node"]
        bound.remove(victim)
        replayed += 1
        if to:
            replacement["spec"]["nodeName"] = to
            bound.append(replacement)
            back += to == node
    print("side by side (replacements back on the node they left):")
    print("  with the mark     %d evictions, %d back" % (len(evicted), bounced))
    print("  without the mark  %d evictions, %d back  (the seed's loop, replayed" % (replayed, back))
    print("                    through the simulator's scheduler model)")
    if replayed < len(evicted):
        # Later evictions can come from a node the pods only reached because of the mark.
        print("                    %d of ours not replayed: without the mark no pod" % (len(evicted) - replayed))
        print("                    of the workload was on that node")


if __name__ == "__main__":
    stop_flag = {"now": False}
    stop_on_signals(stop_flag)
    if "--rebalance" in sys.argv[1:]:
        rebalance_demo(float(os.environ.get("DEMO_DURATION", "0")), stop_flag)
    else:
        main(stop_flag)
    sys.exit(1 if stop_flag.get("failed") else 0)
