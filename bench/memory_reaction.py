#!/usr/bin/env python3
"""Memory relief reaction time with the real binary (issue 25): from the moment a node's pushed
memory.available crosses the rule's threshold to the eviction POST the simulator records.

Real Prometheus and pushgateway (1 s scrape) and the Kubernetes API simulator, as in
test/integration/test_memory_relief.py: the load generator pushes each pod's working set and each
node's memory.available. node-00002 runs a ballast pod (7 GiB, within its 8 GiB requests); each
episode creates a one-pod workload there too (the other workers are full by CPU requests), waits
until it runs, then gives it a 3 GiB working set, which takes the node's memory.available from
above the 6 GiB threshold to about 5.4 GiB in one push. The crossing time is when the
load generator's push with the low value returned (the test thread polls it every 5 ms); the
eviction time is the simulator's log of the EVICT request. The rule has no `for` and
`relieveAfter: 0s`, so the expected bound is 2 intervals (one to mark, one to evict once the cache
has seen the mark) plus the push-to-query floor (about a scrape interval).

  bench/memory_reaction.py [--episodes 20] [--intervals 1,10]   prints one JSON line per interval
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "integration"))
from harness import Controller, Stack, wait_until  # noqa: E402
from pod_load import KubeAdmin, LoadGenerator, running  # noqa: E402
from test_rebalance import AFFINITY, deploy_rbac  # noqa: E402

HOT = "node-00002"
OTHERS = ["node-00003", "node-00004", "node-00005"]
GiB = float(1 << 30)
THRESHOLD = 6 * GiB
CLEAR = 7 * GiB
NS = "reaction"

RULE_YAML = """
missingDataGrace: 30s
rules:
  - name: memory-available
    query: "min by (node) (it_node_mem_available)"
    operator: "<"
    resource: memory
    threshold: %d
    clearThreshold: %d
    relieveAfter: 0s
rebalance:
  after: 10m
  holdAfterEviction: 1s
  podUsage:
    cpu: "sum by (namespace, pod) (it_pod_cpu)"
    memory: "sum by (namespace, pod) (it_pod_mem)"
  minPodAge: 0s
  limits: {perCycle: 1, perHour: 1000, perNodePerHour: 1000, nodeCooldown: 0s, perWorkload: 5}
""" % (THRESHOLD, CLEAR)


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def evictions(stack):
    return [w for w in stack.writes()["writes"]
            if w["user"] == "dynamic-scheduler" and w["verb"] == "EVICT" and w["code"] == 201]


def pods(api, app):
    return api.get("/api/v1/namespaces/%s/pods?labelSelector=app%%3D%s" % (NS, app))["items"]


def episode(stack, api, load, c, i, interval):
    """One crossing and its eviction; returns the reaction in seconds."""
    app = "ep-%d" % i
    spec = {"affinity": json.loads(json.dumps(AFFINITY)),
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}}]}
    stack.sim_admin("POST", "/sim/workloads", {"namespace": NS, "name": app, "replicas": 1,
                                               "template": {"metadata": {"labels": {"app": app}}, "spec": spec}})
    p = wait_until(lambda: [x for x in pods(api, app) if running(x)], 30, what="pod of " + app)[0]
    assert p["spec"]["nodeName"] == HOT, p["spec"]["nodeName"]
    # Let the controller see the node above the threshold first, at a random phase of its cycle.
    time.sleep(interval * (1 + (i * 0.37) % 1))
    before = len(evictions(stack))
    load.set_memory(NS, app, 3 * GiB)  # 15.4 GiB - 7 GiB (ballast) - 3 GiB: about 5.4 GiB available
    crossed = wait_until(lambda: load.available.get(HOT, 1e30) < THRESHOLD and time.time(), 10,
                         interval=0.005, what="the low push")
    ev = wait_until(lambda: evictions(stack)[before:], 20 * interval + 30, what="the eviction")
    reaction = ev[0]["time"] - crossed
    # Reset: the workload and its replacement go, the mark goes (holdAfterEviction 1 s).
    stack.sim_admin("DELETE", "/sim/workloads/%s/%s" % (NS, app))
    for x in pods(api, app):
        api.call("DELETE", "/api/v1/namespaces/%s/pods/%s" % (NS, x["metadata"]["name"]), {"gracePeriodSeconds": 0})
    wait_until(lambda: not pods(api, app), 30, what="pods of %s gone" % app)
    load.set_memory(NS, app, 0)
    wait_until(lambda: stack.labelled() == [], 10 * interval + 30, what="the mark gone")
    return reaction


def run(interval, episodes):
    tmp = tempfile.mkdtemp(prefix="ds-memreact-")
    rbac_file = os.path.join(tmp, "rbac.json")
    with open(rbac_file, "w") as f:
        json.dump(deploy_rbac(), f)
    stack = Stack(nodes=5, control_plane=1, sim_args=[
        "-rbac", rbac_file, "-pod_grace_seconds", "1", "-pod_start_seconds", "1"]).start()
    load = LoadGenerator(stack)
    load.start()
    api = KubeAdmin(stack)
    try:
        for n in OTHERS:
            code, obj = api.call("POST", "/api/v1/namespaces/%s/pods" % NS, {
                "metadata": {"name": "filler-" + n, "labels": {"app": "filler"}},
                "spec": {"nodeName": n, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                                                        "resources": {"requests": {"cpu": "3"}}}]}})
            assert code == 201, obj
        # A ballast pod within its requests on HOT (the kubelet's order keeps it last), so that the
        # episode's pod needs only 3 GiB to cross, and fits elsewhere keeping 7 GiB available.
        ballast = {"cpu": "100m", "memory": "8Gi"}
        stack.sim_admin("POST", "/sim/workloads", {"namespace": NS, "name": "ballast", "replicas": 1, "template": {
            "metadata": {"labels": {"app": "ballast"}},
            "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                                     "resources": {"requests": ballast, "limits": ballast}}]}}})
        b = wait_until(lambda: [x for x in pods(api, "ballast") if running(x)], 30, what="the ballast pod")[0]
        assert b["spec"]["nodeName"] == HOT, b["spec"]["nodeName"]
        load.set_memory(NS, "ballast", 7 * GiB)
        wait_until(lambda: stack.query('it_node_mem_available{node="%s"} > %d' % (HOT, CLEAR)), 30,
                   what="memory.available in Prometheus")
        c = Controller(stack, RULE_YAML, interval=interval, name="controller-s%d" % interval)
        try:
            c.wait_ready()
            reactions = [episode(stack, api, load, c, i, interval) for i in range(episodes)]
        finally:
            c.stop()
        return {"interval": interval, "episodes": len(reactions),
                "p50": round(statistics.median(reactions), 3), "p99": round(percentile(reactions, 0.99), 3),
                "max": round(max(reactions), 3), "min": round(min(reactions), 3),
                "bound": "2 intervals + floor = %g s + ~1 s" % (2 * interval)}
    finally:
        load.stop()
        stack.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--intervals", default="1,10")
    args = ap.parse_args()
    for s in (int(x) for x in args.intervals.split(",")):
        print(json.dumps(run(s, args.episodes)), flush=True)


if __name__ == "__main__":
    main()
