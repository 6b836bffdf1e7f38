#!/usr/bin/python3
"""Generates bench/EFFECT.md and its plots from the effect simulation (bench/effect/README.md).

    /usr/bin/python3 bench/effect/run_effect.py [--build DIR] [--params FILE] [--jobs N]
                                                [--report-only | --balance-only]

Brings effect-sim up to date in DIR (default: build-effect in the repository; configured as
Release when new), runs every scenario, the sweep and the balance runs of the parameter file, and
writes bench/EFFECT.md, bench/effect/results.json and bench/effect/*.png. --report-only rewrites
EFFECT.md and the plots from the last results.json without simulating. --balance-only runs only
the balance set (`effect-sim --balance`: a new worker joins), replaces the balance runs in
results.json and rewrites only EFFECT.md's section "A new worker joins: balance" and its plot
(with --report-only too: only that section, from results.json, without simulating). Needs Debian's python3-matplotlib.
"""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("run_effect.py: matplotlib is missing. Install Debian's package and run with Debian's "
             "python:\n  sudo apt-get install -y python3-matplotlib\n  /usr/bin/python3 "
             "bench/effect/run_effect.py")

LABELS = {
    "none": "default scheduler alone",
    "marks-w10": "marks, affinity weight 10",
    "marks-w50": "marks, affinity weight 50",
    "marks-w100": "marks, affinity weight 100",
    "lownodeutil": "LowNodeUtilization descheduler (requests)",
    "evict-usage": "eviction on real usage, no marks",
    "marks-rebalance": "marks + our rebalancer",
    "marks-taint": "marks as a PreferNoSchedule taint",
    "marks-relief": "marks + our rebalancer + a memory.available rule",
    "marks-early": "marks + our rebalancer + a memory.available rule + an early memory.available mark",
    "marks-placed": "marks-relief, the rebalancer predicting where each replacement binds (proposal)",
    "marks-lag": "marks + our rebalancer, values that lag, no discount (before)",
    "marks-lag-motion": "marks + our rebalancer, values that lag, what is leaving discounted (after)",
    "marks-motion": "marks + our rebalancer, values as they are, what is leaving discounted",
    "marks-lag-decay": "marks + our rebalancer, values that lag, what is leaving discounted as the "
                       "window still shows it (proposal)",
    "marks-balance": "marks + our rebalancer, a balance rule (relativeTo: mean, resource: cpu)",
}
BALANCE_TITLE = "## A new worker joins: balance"
MOMENTS = ("before", "join", "1h", "6h", "end")
# The scenarios of "Values that lag" (issue 38): their own section, not the main table and plot.
LAG = ("marks-lag", "marks-lag-motion", "marks-lag-decay", "marks-motion")
# They run again, at the scenarios' size, with these seeds (the sweep's seeds are at its size),
# and with these grace periods (seconds; longer than the node's cool-down: what still terminates
# when the rebalancer looks again).
LAG_SEEDS = (1, 2)
LAG_GRACE = (300,)
# Issue 25's goal for marks + rebalancer on the 7-day, 1,000-node scenario: kubelet kills <= 3,
# with no more than 10 % more evictions than the 2,852 of the day.
GOAL_KILLS = 3
GOAL_EVICTIONS = 2852 * 1.1
SWEPT = ("threshold", "clearGap", "affinityWeight", "perHour", "maxMarkedFraction")


def build(build_dir):
    sim = os.path.join(build_dir, "effect-sim")
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.check_call(["cmake", "-S", REPO, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release"]
                              + gen)
    subprocess.check_call(["cmake", "--build", build_dir, "--target", "effect-sim"])
    return sim


def pct(a, b):
    return "n/a" if b == 0 else "%+.0f %%" % (100.0 * (a - b) / b)


def hot(r):
    return r["node_minutes_cpu"] + r["node_minutes_memory"]


def fmt(v, digits=0):
    if isinstance(v, float) and digits:
        return ("%." + str(digits) + "f") % v
    return "{:,.0f}".format(v)


def kills(r):
    if "kubelet_victims_over_request" not in r:
        return fmt(r["kubelet_evictions"])
    return "%s (%s / %s)" % (fmt(r["kubelet_evictions"]), fmt(r["kubelet_victims_over_request"]),
                             fmt(r["kubelet_victims_within_request"]))


def breaches(r):
    if "breaches_at_bind" not in r:
        return fmt(r["memory_breaches"])
    return "%s (%s)" % (fmt(r["memory_breaches"]), fmt(r["breaches_at_bind"]))


def rule_text(r):
    if r is None:
        return "?"
    op = r.get("operator", ">")
    if op == "<":
        return "%s < %s MiB available (clear %s MiB, for %gs)" % (
            r["name"], fmt(r["threshold"] / 2.0 ** 20), fmt(r["clear"] / 2.0 ** 20), r["for"])
    return "%s > %g (clear %g, for %gs)" % (r["name"], r["threshold"], r["clear"], r["for"])


def relief_rule(P, key="relief_rules"):
    return next((r for r in P.get(key, []) if r.get("operator") == "<"
                 and r.get("resource") != "none"), None)


def early_rule(P):
    """marks-early's rule that only marks on the bytes available."""
    return next((r for r in P.get("early_rules", []) if r.get("operator") == "<"
                 and r.get("resource") == "none"), None)


def gib(v):
    return "%.1f" % (v / 2.0 ** 30)


def span(values):
    """min–max in GiB, or one value when they agree; – for none."""
    if not values:
        return "–"
    lo, hi = gib(min(values)), gib(max(values))
    return lo if lo == hi else "%s–%s" % (lo, hi)


def breach_causes(r):
    """What the breaches of one run began with: lines for EFFECT.md, or [] without details."""
    ds = r.get("breach_details")
    if ds is None or not ds:
        return []
    bind = [b for b in ds if b["at_bind"]]
    grow = [b for b in ds if not b["at_bind"]]
    out = []
    if bind:
        unmarked = [b for b in bind if not b["marked"]]
        origins = {}
        for b in bind:
            origins[b["origin"]] = origins.get(b["origin"], 0) + 1
        big = [b for b in bind if b["working_set"] >= 2 * b["request"] and b["working_set"] > 8 * 2 ** 30]
        safe = [b for b in bind if b["safe_unmarked"] > 0]
        avail = sorted(b["available_before"] for b in bind)
        out.append(
            "%d of %d began at a binding, %d of them on a node without our mark (it had %s GiB "
            "available the step before). The pod bound: %s. %d were pods using more than 8 GiB, "
            "at least twice their request (%s GiB requested, %s GiB used); in %d cases an unmarked "
            "node that fitted the pod by requests had room for its working set too (%s such nodes)."
            % (len(bind), len(ds), len(unmarked), span(avail),
               ", ".join("%d %s" % (n, o) for o, n in sorted(origins.items(), key=lambda x: -x[1])),
               len(big),
               span([b["request"] for b in big]), span([b["working_set"] for b in big]),
               len(safe),
               "%s–%s" % (fmt(min(b["safe_unmarked"] for b in safe)), fmt(max(b["safe_unmarked"] for b in safe)))
               if safe else "no"))
    if grow:
        out.append("%d began without a binding (usage growing on the node: a leak, the daily peak); "
                   "%d of those nodes carried our mark, %d held by a rule on the bytes available."
                   % (len(grow), sum(1 for b in grow if b["marked"]),
                      sum(1 for b in grow if b["available_rule"])))
    return out


def plot_series(scenarios, path, step):
    fig, ax = plt.subplots(figsize=(9, 4), dpi=80)
    drawn = []
    for r in scenarios:
        label = LABELS.get(r["name"], r["name"])
        same = [d for d in drawn if d["hot_series"] == r["hot_series"]]
        if same:
            if r["name"].startswith("marks-w"):
                continue  # the weights give one history; the table lists them
            label += " (= %s)" % LABELS.get(same[0]["name"], same[0]["name"])
        xs = [i * step / 86400.0 for i in range(len(r["hot_series"]))]
        ax.plot(xs, r["hot_series"], linewidth=0.9, linestyle="--" if same else "-", label=label)
        drawn.append(r)
    ax.set_xlabel("simulated day")
    ax.set_ylabel("hot nodes (max per 10 min)")
    ax.set_title("Nodes over the cpu or memory measure threshold")
    ax.legend(fontsize=7, loc="upper right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_sweep(sweep, base_none, path):
    params = [p for p in SWEPT
              if any(r["param"] == p for r in sweep)]
    fig, axes = plt.subplots(1, len(params), figsize=(3.2 * len(params), 3.2), dpi=80)
    if len(params) == 1:
        axes = [axes]
    for ax, p in zip(axes, params):
        rs = sorted([r for r in sweep if r["param"] == p], key=lambda r: r["value"])
        xs = [r["value"] for r in rs]
        ax.plot(xs, [hot(r) / max(1.0, hot(base_none)) for r in rs], "o-", label="hot node-min / none")
        ax2 = ax.twinx()
        ax2.plot(xs, [r["evictions"] for r in rs], "s--", color="tab:red", label="evictions")
        ax.set_xlabel(p)
        ax.set_ylim(bottom=0)
        ax2.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if p == params[0]:
            ax.set_ylabel("hot node-minutes, share of none")
        if p == params[-1]:
            ax2.set_ylabel("evictions", color="tab:red")
    fig.suptitle("Sweep around marks + rebalancer (one setting changed at a time)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def lag_runs(runs, P):
    """The "Values that lag" runs by (seed, grace seconds): {(seed, grace): {name: run}}, the
    scenarios' own first."""
    seed, grace = P["seed"], P.get("termination_grace_seconds", 30)
    out = {}
    for r in runs:
        if r["kind"] == "scenario" and r["name"] in LAG:
            out.setdefault((seed, grace), {})[r["name"]] = r
        elif r["kind"] == "lag-seed":
            out.setdefault((int(r["value"]), grace), {})[r["name"]] = r
        elif r["kind"] == "lag-grace":
            out.setdefault((seed, r["value"]), {})[r["name"]] = r
    first = (seed, grace)
    return {k: out[k] for k in sorted(out, key=lambda k: (k != first, k[1], k[0]))}


def per_episode(r):
    """Evictions per relieved episode: the mean over every episode with an eviction, then the
    median / 90th percentile / most of those whose mark went before the end."""
    if "evictions_per_episode" not in r:
        return "–"
    return "%.2f (%s / %s / %s)" % (r["evictions_per_episode"], fmt(r["episode_evictions_median"]),
                                    fmt(r["episode_evictions_p90"]), fmt(r["episode_evictions_max"]))


def lag_result(runs, by, P):
    """The Result section's line on values that lag, or nothing without those runs."""
    groups = lag_runs(runs, P)
    at = next(iter(groups.values()), {})
    before, after, ref = at.get("marks-lag"), at.get("marks-lag-motion"), by.get("marks-rebalance")
    if not (before and after):
        return []
    each = ["seed %s%s: %.2f → %.2f per relieved episode, hot node-minutes %s"
            % (seed, "" if grace == P.get("termination_grace_seconds", 30) else ", grace %g s" % grace,
               g["marks-lag"]["evictions_per_episode"], g["marks-lag-motion"]["evictions_per_episode"],
               pct(hot(g["marks-lag-motion"]), hot(g["marks-lag"])))
            for (seed, grace), g in groups.items() if "marks-lag" in g and "marks-lag-motion" in g]
    tail = (" All runs (before → after): %s." % "; ".join(each)) if len(each) > 1 else ""
    return ["- Values that lag (the rules see a 5-minute mean, evicted pods terminate for 30 s; "
            "issue 38): without the discount of what is already leaving, %s evictions, %.2f per "
            "relieved episode, %s of them from a node whose load less what was leaving was already "
            "at its goal; with it (`rebalance/in_motion.h`) %s evictions (%s), %.2f per relieved "
            "episode; hot node-minutes %s → %s, kubelet kills %s → %s.%s"
            % (fmt(before["evictions"]), before["evictions_per_episode"],
               fmt(before["evictions_while_leaving"]), fmt(after["evictions"]),
               pct(after["evictions"], before["evictions"]), after["evictions_per_episode"],
               fmt(hot(before)), fmt(hot(after)), fmt(before["kubelet_evictions"]),
               fmt(after["kubelet_evictions"]),
               (" Without the lag (marks + our rebalancer): %s evictions, %.2f per relieved "
                "episode." % (fmt(ref["evictions"]), ref["evictions_per_episode"]))
               if ref and "evictions_per_episode" in ref else "") + tail]


def lag_section(runs, by, P, w):
    """EFFECT.md's "Values that lag" section, from the marks-lag runs (issue 38)."""
    seeds = lag_runs(runs, P)
    if not seeds:
        return
    w("## Values that lag: what is already moving")
    w("")
    w("Issue 38: the rebalancer decides from a snapshot. A rule whose value is a rate or a mean "
      "over a window (`rate(...[5m])`; `deploy/prometheus`'s cpu recording rule uses `[1m]`) keeps "
      "a pod's usage in its node's value for that window after the pod is gone, while the node's "
      "cool-down (`nodeCooldown`) is %s s; and an evicted pod keeps running for its grace period. In `marks-lag` and `marks-lag-motion` the rules see each node's cpu "
      "and memory percent as the mean of its usage over the last %s s of steps (`controller."
      "valueWindow`; the kubelet's memory.available and the figures' usage stay instantaneous), "
      "and a pod the rebalancer evicts keeps running, using what it used and holding its requests, "
      "for %s s (`controller.terminationGrace`) while its replacement is scheduled. `marks-lag` "
      "plans from the node's value as it is (before); `marks-lag-motion` first takes the usage of "
      "every pod evicted from the node that is still terminating or gone less than the rule's "
      "settle time ago (`SettleSeconds`: the window plus one interval, %s s) off the node's load, "
      "and leaves a node whose load is then at or below its goal alone (`DiscountLeaving`, "
      "`rebalance/in_motion.h`, as the controller does; after). `marks-rebalance` is the "
      "reference without the lag (cpu through an exponential average over half of "
      "`cpuRateWindow`, memory as it is, evicted pods gone at once), and `marks-motion` that "
      "reference with the discount: its settle time is the same %s s, although memory there "
      "shows a pod gone at once (a query without a range selector, such as a recording rule on a "
      "gauge, is assumed to lag `kAssumedRateWindowSeconds`). `marks-lag-decay` is a proposal, "
      "not `in_motion.h`'s behaviour: `marks-lag-motion` with a pod gone for t seconds counted "
      "by 1 − t / window of its usage, the share of the mean that still holds it, instead of in "
      "full until the settle time ends (each leaving pod's usage scaled so, then the same "
      "`DiscountLeaving`)."
      % (fmt(P.get("node_cooldown_seconds", 180)), fmt(P.get("value_window_seconds", 300)),
         fmt(P.get("termination_grace_seconds", 30)),
         fmt(P.get("value_window_seconds", 300) + 10), fmt(P.get("value_window_seconds", 300) + 10)))
    w("")
    w("| seed | grace | run | hot node-min cpu | hot node-min memory | breaches (at a binding) | "
      "kubelet kills (victims over / within request) | evictions | relieved episodes | "
      "evictions per relieved episode: mean (median / p90 / most) | episodes with 1 / 2 / 3 / 4+ "
      "evictions | evictions while enough was leaving | skipped for what is leaving | "
      "bounce-backs | pending pod-min |")
    w("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    names = ("marks-rebalance",) + LAG
    first = next(iter(seeds))
    for key in seeds:
        seed, grace = key
        at = dict(seeds[key])
        if key == first and "marks-rebalance" in by:
            at["marks-rebalance"] = by["marks-rebalance"]
        for n in names:
            r = at.get(n)
            if not r:
                continue
            label = {"marks-rebalance": "no lag (reference)", "marks-lag": "lag, no discount (before)",
                     "marks-lag-motion": "lag, discount (after)",
                     "marks-motion": "no lag, discount (settle time assumed)",
                     "marks-lag-decay": "lag, discount decaying with the window (proposal)"}[n]
            hist = r.get("episode_evictions_histogram")
            w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
              % (seed, "–" if n in ("marks-rebalance", "marks-motion") else "%g s" % grace, label,
                 fmt(r["node_minutes_cpu"]),
                 fmt(r["node_minutes_memory"]), breaches(r), kills(r), fmt(r["evictions"]),
                 fmt(r.get("episodes_evicted", 0)), per_episode(r),
                 " / ".join(fmt(v) for v in hist) if hist else "–",
                 fmt(r.get("evictions_while_leaving", 0)), fmt(r.get("in_motion_skips", 0)),
                 fmt(r["bounce_backs"]), fmt(r["pending_pod_minutes"])))
    w("")
    w("Relieved episode: a node's episode (`rebalance/effect.h`: from its qualifying for relief "
      "to its mark going) with at least one eviction; the mean counts every one, the median, 90th "
      "percentile, most and the histogram those whose mark went before the end. Evictions while "
      "enough was leaving: evictions from a node whose load, less the usage of its pods still "
      "leaving, was already at or below its goal, the ones the discount leaves out (0 where it is "
      "applied). Skipped for what is leaving: node-cycles the discount dropped. Seed %d is the "
      "scenarios' workload; the other seeds run the same scenarios at the same size (%d nodes × "
      "%g days). Each run: `effect-sim bench/effect/params.yaml --scenarios "
      "marks-rebalance,marks-lag,marks-lag-motion,marks-lag-decay,marks-motion [--seed N] "
      "[--grace SECONDS]`; a grace period "
      "longer than the cool-down shows the issue's other half, pods still terminating (and "
      "counted as load) when the rebalancer looks again. In the reference the values lag "
      "less than the settle time assumes (cpu by about half of its window, memory not at all), so "
      "its count is what the discount would leave out there, not evictions wasted."
      % (P["seed"], P["nodes"], P["days"]))
    w("")
    pairs = [(g["marks-lag"], g["marks-lag-motion"]) for g in seeds.values()
             if "marks-lag" in g and "marks-lag-motion" in g]
    if len(pairs) > 1:
        ep = [100.0 * (a["evictions_per_episode"] - b["evictions_per_episode"])
              / max(1e-9, b["evictions_per_episode"]) for b, a in pairs]
        ht = [100.0 * (hot(a) - hot(b)) / max(1.0, hot(b)) for b, a in pairs]
        w("Over the %d pairs of before and after, the discount lowers evictions per relieved "
          "episode in every one (%+.0f %% to %+.0f %%); hot node-minutes move from %+.0f %% to "
          "%+.0f %%, both ways. One decision changed changes every later placement of the "
          "history, so one history per seed does not tell the discount's effect on the heat apart "
          "from that; the runs with the longer grace period, where far more evictions were made "
          "while enough was leaving, show the clearest gain."
          % (len(pairs), min(ep), max(ep), min(ht), max(ht)))
        w("")
    per_hour = P.get("limits", {}).get("per_hour", 0)
    for (seed, grace), at in seeds.items():
        b, a = at.get("marks-lag"), at.get("marks-lag-motion")
        if not (b and a):
            continue
        cap = per_hour * b["days"] * 24
        w("- Seed %s, grace %g s: the discount takes evictions per relieved episode from %.2f to %.2f (%s) and "
          "evictions from %s to %s (%s); the evictions it leaves out on one node go to others: "
          "%s → %s relieved episodes, within the cluster-wide budget (`perHour` %d: at most %s in "
          "%g days; used %.0f %% before, %.0f %% after). Hot node-minutes %s → %s (%s), kubelet "
          "kills %s → %s."
          % (seed, grace, b["evictions_per_episode"],
             a["evictions_per_episode"],
             pct(a["evictions_per_episode"], b["evictions_per_episode"]), fmt(b["evictions"]),
             fmt(a["evictions"]), pct(a["evictions"], b["evictions"]),
             fmt(b.get("episodes_evicted", 0)), fmt(a.get("episodes_evicted", 0)), per_hour,
             fmt(cap), b["days"], 100.0 * b["evictions"] / max(1, cap),
             100.0 * a["evictions"] / max(1, cap), fmt(hot(b)), fmt(hot(a)), pct(hot(a), hot(b)),
             fmt(b["kubelet_evictions"]), fmt(a["kubelet_evictions"])))
        d = at.get("marks-lag-decay")
        if d:
            w("- Seed %s, grace %g s, the proposal (a gone pod counted by the share of the window "
              "that still holds it): %s evictions (%s against no discount), %.2f per relieved "
              "episode; hot node-minutes %s (%s against no discount), kubelet kills %s."
              % (seed, grace, fmt(d["evictions"]), pct(d["evictions"], b["evictions"]),
                 d["evictions_per_episode"], fmt(hot(d)), pct(hot(d), hot(b)),
                 fmt(d["kubelet_evictions"])))
        m, ref = at.get("marks-motion"), at.get("marks-rebalance")
        if ref is None and (seed, grace) == next(iter(seeds)):
            ref = by.get("marks-rebalance")
        if m and ref and "evictions_per_episode" in ref:
            w("- Seed %s without the lag: the discount takes evictions from %s to %s (%s), %.2f → "
              "%.2f per relieved episode; hot node-minutes %s → %s (%s), kubelet kills %s → %s."
              % (seed, fmt(ref["evictions"]), fmt(m["evictions"]), pct(m["evictions"], ref["evictions"]),
                 ref["evictions_per_episode"], m["evictions_per_episode"], fmt(hot(ref)), fmt(hot(m)),
                 pct(hot(m), hot(ref)), fmt(ref["kubelet_evictions"]), fmt(m["kubelet_evictions"])))
    w("")


def balance_runs(runs):
    """The balance runs by seed, in the order they ran: {seed: {name: run}}."""
    out = {}
    for r in runs:
        if r["kind"] == "balance":
            out.setdefault(int(r["value"]), {})[r["name"]] = r
    return out


def plot_balance(groups, path):
    """The spread of node cpu % and memory % over time, for the first seed's scenarios."""
    seed, at = next(iter(groups.items()))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), dpi=80)
    for ax, key, what in zip(axes, ("spread_cpu_series", "spread_memory_series"), ("cpu", "memory")):
        for name, r in at.items():
            ys = r.get(key, [])
            xs = [(i + 1) * r["series_seconds"] / 3600.0 for i in range(len(ys))]
            ax.plot(xs, ys, linewidth=0.9, label=LABELS.get(name, name))
        j = next(iter(at.values()))["join"]
        ax.axvline(j["at"] / 3600.0, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel("simulated hour (dotted: %d nodes join)" % j["nodes"])
        ax.set_ylabel("sd of node %s %% (mean per 10 min)" % what)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper right")
    fig.suptitle("Spread of node usage across the cluster, seed %d" % seed, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def moments(r, key):
    return " → ".join("–" if r["join"][key].get(m) is None else "%.1f" % r["join"][key][m]
                      for m in MOMENTS)


def balance_section(res, w):
    """EFFECT.md's "A new worker joins: balance" section, from the balance runs (issue 39)."""
    groups = balance_runs(res["runs"])
    if not groups:
        return
    P = res["params"]
    B = P.get("balance", {})
    first = next(iter(next(iter(groups.values())).values()))
    j = first["join"]
    rule = next(iter(P.get("balance_rules", [])), None)
    lim = P.get("balance_limits", {})
    ds = P.get("descheduler", {})
    over = P.get("measure_cpu_over_mean", 20)
    plot_balance(groups, os.path.join(HERE, "balance.png"))
    w(BALANCE_TITLE)
    w("")
    w("Issue 39: a busy cluster of %s nodes (the workload above) runs for %g simulated days, and "
      "after %g h %d new workers of the same shape join it, empty (`balance.join`; the workload "
      "does not grow with them, its job rate stays that of the first %s nodes). The same seed "
      "gives every scenario the same workload and the same join; seeds %s. Scenarios: the default "
      "scheduler alone (nothing acts: new pods go where the scheduler puts them, which favours the "
      "empty nodes by requests); the request-based LowNodeUtilization descheduler (every %g s; "
      "underutilized below %s %% of cpu / memory / pods requested, overutilized above %s %%: the "
      "new nodes are underutilized at once, and it evicts from the overutilized ones until they "
      "are back at the target or the new ones are full to it); and ours, `marks-balance` "
      "(`bench/effect/rule-balance.yaml`): one rule, `%s` over the mean of every node's cpu %% "
      "(`relativeTo: mean`, clear %s over the mean, `for` %g s, `resource: cpu`), the mark as a "
      "label the pods' preferred NotIn term avoids, and the rebalancer, which plans a marked node "
      "down to the mean plus the clear offset while the mean follows the planned pods and keeps "
      "each planned destination at or below the mean plus the threshold offset "
      "(`rebalance/pool_mean.h`), with what is already leaving discounted (`in_motion.h`), within "
      "%s per cycle, %s per hour, %s per node per hour, a %g s node cool-down and one pod per "
      "workload at a time. Our rule judges every node from the start, so it acts before the join "
      "too; the descheduler finds no underutilized node before it."
      % (fmt(B.get("nodes", first["nodes"])), first["days"], j["at"] / 3600.0, j["nodes"],
         fmt(first["nodes"]), ", ".join(str(s) for s in groups),
         ds.get("interval_seconds", 300),
         " / ".join("%g" % v for v in ds.get("thresholds", [])),
         " / ".join("%g" % v for v in ds.get("target_thresholds", [])),
         "cpu_balance > mean + %g" % rule["threshold"] if rule else "?",
         "%g" % rule["clear"] if rule else "?", rule["for"] if rule else 0,
         lim.get("per_cycle", "?"), lim.get("per_hour", "?"), lim.get("per_node_per_hour", "?"),
         lim.get("node_cooldown_seconds", 0)))
    w("")
    w("The spread is the standard deviation of the nodes' cpu %% (memory %%) of allocatable across "
      "every node (the joined ones from the join on), at the last step before the join, the join's "
      "step, 1 h and 6 h after it, and the last step; the cluster's mean cpu %% moves with the "
      "daily cycle, so compare the scenarios at the same moment, not the moments with each other. "
      "Hot: node-minutes over the fixed thresholds above (cpu %g %%, memory %g %%); standing out: "
      "node-minutes with cpu more than %g points over the mean of every node's. Landing over the "
      "mean: replacements of evicted pods bound to a node whose cpu was then more than %g points "
      "over the mean (with the mean share of their new node those pods used); where planned: of "
      "our rebalancer's replacements, those kube-scheduler bound to the node the plan had reserved "
      "room on." % (P["measure_cpu"], P["measure_memory"], over, over))
    w("")
    w("| seed | scenario | sd cpu %: before → join → 1 h → 6 h → end | sd memory % (same moments) | "
      "evictions (before the join) | bounce-backs | hot node-min (cpu + mem) | standing-out "
      "node-min | pods on the joined nodes at the end (their cpu %, the mean) | landing over the "
      "mean (pod's share of its node) | bound where planned |")
    w("|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for seed, at in groups.items():
        for name, r in at.items():
            jr = r["join"]
            ours = r.get("replacements_bound", 0) > 0
            w("| %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s (%.0f %%, %.0f %%) | %s | %s |"
              % (seed, LABELS.get(name, name), moments(r, "sd_cpu"), moments(r, "sd_memory"),
                 fmt(r["evictions"]), fmt(jr.get("evictions_before", 0)), fmt(r["bounce_backs"]),
                 fmt(hot(r)), fmt(r["node_minutes_over_mean"]), fmt(jr["joined_pods_end"]),
                 jr["joined_cpu_end"], jr["mean_cpu"]["end"] or 0,
                 "%s (%.0f %%)" % (fmt(r["landed_over_mean"]), r.get("landed_over_mean_pod_cpu", 0))
                 if r["landed_over_mean"] else "0",
                 "%s of %s" % (fmt(r["replacements_as_planned"]), fmt(r["replacements_bound"]))
                 if ours else "–"))
    w("")
    w("![spread around the join](effect/balance.png)")
    w("")
    # The comparison, seed by seed: where ours is below the descheduler and nothing, and at what
    # cost in evictions.
    pairs = [(at["marks-balance"], at.get("lownodeutil"), at.get("none")) for at in groups.values()
             if "marks-balance" in at]
    if pairs:
        n = len(pairs)

        def below(a, b, m, key):
            return sum(1 for x in pairs if x[b] and x[a]["join"][key][m] is not None
                       and x[b]["join"][key][m] is not None
                       and x[a]["join"][key][m] < x[b]["join"][key][m])

        def mean_sd(i, m, key):
            v = [x[i]["join"][key][m] for x in pairs if x[i] and x[i]["join"][key][m] is not None]
            return sum(v) / len(v) if v else float("nan")

        def total(i, f):
            return sum(f(x[i]) for x in pairs if x[i])

        for key, what in (("sd_cpu", "CPU"), ("sd_memory", "Memory")):
            parts = []
            for m, label in (("before", "before the join"), ("1h", "1 h after it"),
                             ("6h", "6 h after it"), ("end", "at the end")):
                parts.append("%s %.1f against %.1f (descheduler) and %.1f (nothing); below the "
                             "descheduler in %d of %d seeds, below nothing in %d"
                             % (label, mean_sd(0, m, key), mean_sd(1, m, key), mean_sd(2, m, key),
                                below(0, 1, m, key), n, below(0, 2, m, key)))
            w("- %s spread, ours (mean over the seeds): %s.%s"
              % (what, "; ".join(parts),
                 " Our rule balances cpu only: the pods it moves take their memory along, wherever "
                 "the scheduler binds them, and the memory spread is not what it judges."
                 if key == "sd_memory" else ""))
        ev = total(0, lambda r: r["evictions"])
        ev_after = total(0, lambda r: r["evictions"] - r["join"].get("evictions_before", 0))
        dv = total(1, lambda r: r["evictions"])
        dv_hour = total(1, lambda r: r["join"].get("evictions_hour", 0)
                        - r["join"].get("evictions_before", 0))
        ev_hour = total(0, lambda r: r["join"].get("evictions_hour", 0)
                        - r["join"].get("evictions_before", 0))
        cap = lim.get("per_hour", 0) * first["days"] * 24 * n
        w("- Evictions over the %d seeds: ours %s, %s of them after the join (%s in its first hour; "
          "the per-hour limit allows at most %s in all), the descheduler %s (%s in the first hour "
          "after the join). Ours acts on every node that stands out, joined or not, all the time, "
          "within its limits; the descheduler only while some node is underutilized by requests, "
          "which here means only the new nodes, until they are filled by requests."
          % (n, fmt(ev), fmt(ev_after), fmt(ev_hour), fmt(cap), fmt(dv), fmt(dv_hour)))
        w("- Hot node-minutes (fixed thresholds), ours against nothing: %s; the descheduler "
          "against nothing: %s. Standing-out node-minutes: ours %s, the descheduler %s."
          % (pct(total(0, hot), total(2, hot)), pct(total(1, hot), total(2, hot)),
             pct(total(0, lambda r: r["node_minutes_over_mean"]),
                 total(2, lambda r: r["node_minutes_over_mean"])),
             pct(total(1, lambda r: r["node_minutes_over_mean"]),
                 total(2, lambda r: r["node_minutes_over_mean"]))))
        landed = total(0, lambda r: r["landed_over_mean"])
        bound = total(0, lambda r: r.get("replacements_bound", 0))
        planned = total(0, lambda r: r.get("replacements_as_planned", 0))
        # Weighted by how many landed in each seed.
        weight = [(r["landed_over_mean"], r.get("landed_over_mean_pod_cpu", 0),
                   r.get("landed_over_mean_pod_request", 0)) for r, _, _ in pairs]
        use = sum(c * u for c, u, _ in weight) / max(1, landed)
        req = sum(c * q for c, _, q in weight) / max(1, landed)
        w("- Where our replacements went: %s of %s (%.0f %%) were bound to a node that then stood "
          "out by more than %g points; those pods used on average %.0f %% of their new node's cpu "
          "on their own while requesting %.1f %% of it. %s (%.0f %%) were bound to the node the "
          "plan had reserved room on. The plan keeps its own destination at or below the mean "
          "plus the threshold offset, but kube-scheduler binds the replacement by requests and "
          "its scores, not by the plan (the gap `marks-placed` shows for memory). So the plan "
          "leaves a pod whose share alone is over the threshold offset where it is (`ChoosePods`, "
          "`stands_out`): bound to a node near the mean it would make that node stand out, and "
          "moving it would move the hot spot rather than remove it. Before that rule, on the same "
          "seeds, 57 %% of the replacements landed on a node that then stood out (pods using a "
          "third of a node while requesting a tenth), with 41 %% fewer hot node-minutes than "
          "nothing instead of 57 %%. The descheduler, which moves pods by requests onto nodes "
          "that are empty by requests, almost never does so."
          % (fmt(landed), fmt(bound), 100.0 * landed / max(1, bound), over, use, req,
             fmt(planned), 100.0 * planned / max(1, bound)))
        secs = [r for at in groups.values() for r in at.values()]
        w("- Each balance run: %.0f–%.0f s of cpu (%.0f–%.0f s wall), %d runs; "
          "`effect-sim bench/effect/params.yaml --balance --no-scenarios` runs them alone, and "
          "`run_effect.py --balance-only` rewrites this section from them."
          % (min(r["cpu_seconds"] for r in secs), max(r["cpu_seconds"] for r in secs),
             min(r["wall_seconds"] for r in secs), max(r["wall_seconds"] for r in secs), len(secs)))
    w("")


def splice_section(path, title, lines, before):
    """Replaces the section `title` of the Markdown file at `path` with `lines` (up to the next
    "## " heading), or inserts them before the heading `before` (at the end without it)."""
    with open(path) as f:
        text = f.read().split("\n")
    if title in text:
        start = text.index(title)
        end = next((i for i in range(start + 1, len(text)) if text[i].startswith("## ")), len(text))
    else:
        start = end = text.index(before) if before in text else len(text)
    text[start:end] = lines
    with open(path, "w") as f:
        f.write("\n".join(text))


def run_balance_only(args, out):
    """Runs the balance set alone, puts its runs in results.json in place of the last ones, and
    rewrites only EFFECT.md's balance section and its plot (the rest stays as it was written)."""
    if args.report_only:  # with --balance-only: the section again from results.json
        with open(out) as f:
            res = json.load(f)
        lines = []
        balance_section(res, lines.append)
        splice_section(os.path.join(REPO, "bench", "EFFECT.md"), BALANCE_TITLE, lines,
                       "## Sensitivity")
        print("wrote EFFECT.md's balance section and bench/effect/balance.png")
        return
    sim = build(args.build)
    t0 = time.time()
    load0 = os.getloadavg()[0]
    bal_out = os.path.join(HERE, "results-balance.json")
    subprocess.check_call(["nice", "-n", "10", sim, args.params, "--balance", "--no-scenarios",
                           "--jobs", str(args.jobs), "--out", bal_out])
    with open(bal_out) as f:
        bal = json.load(f)
    os.unlink(bal_out)
    with open(out) as f:
        res = json.load(f)
    res["runs"] = [r for r in res["runs"] if r["kind"] != "balance"] + bal["runs"]
    for k in ("balance", "balance_rules", "balance_limits", "measure_cpu_over_mean", "descheduler"):
        if k in bal["params"]:
            res["params"][k] = bal["params"][k]
    res["balance_generator"] = {"seconds": time.time() - t0, "jobs": args.jobs,
                                "load_start": load0, "load_end": os.getloadavg()[0]}
    with open(out, "w") as f:
        json.dump(res, f, separators=(",", ":"))
    lines = []
    balance_section(res, lines.append)
    splice_section(os.path.join(REPO, "bench", "EFFECT.md"), BALANCE_TITLE, lines, "## Sensitivity")
    print("wrote EFFECT.md's balance section, bench/effect/results.json and bench/effect/balance.png")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build-effect"))
    ap.add_argument("--params", default=os.path.join(HERE, "params.yaml"))
    ap.add_argument("--trace-params", default=os.path.join(HERE, "params-trace.yaml"),
                    help="the preset with published usage-to-request figures")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite EFFECT.md and the plots from the last results.json, no simulation")
    ap.add_argument("--balance-only", action="store_true",
                    help="run only the balance set and rewrite only its section of EFFECT.md")
    args = ap.parse_args()
    out = os.path.join(HERE, "results.json")
    if args.balance_only:
        run_balance_only(args, out)
        return
    if not args.report_only:
        sim = build(args.build)
        t0 = time.time()
        load0 = os.getloadavg()[0]
        subprocess.check_call(["nice", "-n", "10", sim, args.params, "--sweep", "--balance",
                               "--jobs", str(args.jobs), "--out", out])
        with open(out) as f:
            res = json.load(f)
        # The preset with the published usage-to-request figures, at the sweep's size.
        base = [r for r in res["runs"] if r["kind"] == "sweep" and r["param"] == "baseline"]
        trace_out = os.path.join(HERE, "results-trace.json")
        size = (["--nodes", str(base[0]["nodes"]), "--days", "%g" % base[0]["days"]] if base else [])
        subprocess.check_call(["nice", "-n", "10", sim, args.trace_params, "--jobs", str(args.jobs),
                               "--out", trace_out] + size)
        with open(trace_out) as f:
            res["trace"] = json.load(f)
        os.unlink(trace_out)
        # Values that lag on other seeds (the reference and both rebalancers) and with a longer
        # grace period, at full size.
        extra = [("lag-seed", "seed", v, ("marks-rebalance",) + LAG) for v in LAG_SEEDS]
        extra += [("lag-grace", "grace", v, LAG[:3]) for v in LAG_GRACE]
        for kind, param, v, names in extra:
            lag_out = os.path.join(HERE, "results-lag.json")
            subprocess.check_call(["nice", "-n", "10", sim, args.params, "--scenarios",
                                   ",".join(names), "--" + param, str(v), "--jobs", str(args.jobs),
                                   "--out", lag_out])
            with open(lag_out) as f:
                for r in json.load(f)["runs"]:
                    r["kind"], r["param"], r["value"] = kind, param, v
                    res["runs"].append(r)
            os.unlink(lag_out)
        res["generator"] = {"seconds": time.time() - t0, "jobs": args.jobs, "load_start": load0,
                            "load_end": os.getloadavg()[0], "machine": platform.machine(),
                            "cores": os.cpu_count() or 0}
        with open(out, "w") as f:
            json.dump(res, f, separators=(",", ":"))
    with open(out) as f:
        res = json.load(f)
    G = res["generator"]
    P = res["params"]
    scen_all = [r for r in res["runs"] if r["kind"] == "scenario"]
    scen = [r for r in scen_all if r["name"] not in LAG]
    sweep = [r for r in res["runs"] if r["kind"] == "sweep"]
    by = {r["name"]: r for r in scen}
    plot_series(scen, os.path.join(HERE, "hot_nodes.png"), scen[0]["series_seconds"])
    sweep_base = {r["name"]: r for r in sweep if r["param"] == "baseline"}
    vary = [r for r in sweep if r["param"] not in ("baseline", "thresholdCapOff", "reliefThreshold",
                                                   "earlyThreshold")]
    relief_sweep = sorted([r for r in sweep if r["param"] == "reliefThreshold"], key=lambda r: r["value"])
    cap_off = {r["value"]: r for r in sweep if r["param"] == "thresholdCapOff"}
    if vary:
        plot_sweep(vary, sweep_base["none"], os.path.join(HERE, "sweep.png"))

    L = []
    w = L.append
    w("# Effect of the marks and the rebalancer (simulated)")
    w("")
    w("Generated by `/usr/bin/python3 bench/effect/run_effect.py` from `%s` (seed %d); do not edit "
      "by hand. The model, its formulas and its assumptions: [effect/README.md](effect/README.md)."
      % (os.path.relpath(P["source"], REPO) if os.path.isabs(P["source"]) else P["source"], P["seed"]))
    w("")
    w("Every scenario runs the same workload (same seed: the same deployments, usage, bursts, "
      "leaks and churn) through the project's own decision code: `rules/` (Decider with "
      "hysteresis, `for` and grace; the planner) and `rebalance/` (qualification, relief, "
      "evictability, budget, placement, pod choice, effect figures), with kube-scheduler's "
      "default profile from `test/sched/`, the model the API simulator uses too.")
    w("")
    for note in res.get("notes", []):
        w(note)
        w("")
    w("## Result")
    w("")
    none, mr, eu = by.get("none"), by.get("marks-rebalance"), by.get("evict-usage")
    if none and mr:
        w("- Marks + rebalancer: hot node-minutes (cpu + memory) %s against the default scheduler "
          "alone (%s → %s), memory.available breaches %s → %s, with %s evictions in %g days "
          "(%s bounce-backs)."
          % (pct(hot(mr), hot(none)), fmt(hot(none)), fmt(hot(mr)), fmt(none["memory_breaches"]),
             fmt(mr["memory_breaches"]), fmt(mr["evictions"]), P["days"], fmt(mr["bounce_backs"])))
    rl = by.get("marks-relief")
    if mr and rl:
        w("- Marks + rebalancer + a memory.available rule (`%s`, relieved at once, its pods in the "
          "kubelet's order): kubelet kills %s → %s (%s with the default scheduler alone), with %s "
          "evictions (%s against marks + rebalancer); hot node-minutes %s against the default "
          "scheduler alone. The kubelet's victims: %s over their memory request, %s within it."
          % (rule_text(relief_rule(P)), fmt(mr["kubelet_evictions"]), fmt(rl["kubelet_evictions"]),
             fmt(none["kubelet_evictions"]) if none else "n/a", fmt(rl["evictions"]),
             pct(rl["evictions"], mr["evictions"]), pct(hot(rl), hot(none)) if none else "n/a",
             fmt(rl.get("kubelet_victims_over_request", 0)),
             fmt(rl.get("kubelet_victims_within_request", 0))))
        if "breaches_at_bind" in rl:
            w("- Of marks-relief's %s memory.available breaches, %s began in the step a pod was bound "
              "to the node (a new pod using 2-4 times its memory request, placed by its request on "
              "a node with less available than it uses): the node was cold a step earlier, so no "
              "rule on its state can act first; they are the scheduler's to avoid, by requests "
              "closer to use. The remaining %s are what a rule could prevent."
              % (fmt(rl["memory_breaches"]), fmt(rl["breaches_at_bind"]),
                 fmt(rl["memory_breaches"] - rl["breaches_at_bind"])))
    me, mp = by.get("marks-early"), by.get("marks-placed")
    if rl and me:
        er = early_rule(P)
        w("- Mark early, relieve late (marks-relief's rules and `%s`, which only marks): kubelet kills "
          "%s (marks-relief: %s), %s evictions, marked node-minutes %s (marks-relief: %s), at most "
          "%s nodes marked at once; hot node-minutes %s against the default scheduler alone."
          % (rule_text(er), fmt(me["kubelet_evictions"]), fmt(rl["kubelet_evictions"]),
             fmt(me["evictions"]), fmt(me["marked_node_minutes"]), fmt(rl["marked_node_minutes"]),
             fmt(me.get("marked_max", 0)), pct(hot(me), hot(none)) if none else "n/a"))
    if rl and mp:
        met = mp["kubelet_evictions"] <= GOAL_KILLS and mp["evictions"] <= GOAL_EVICTIONS
        w("- marks-relief with the rebalancer predicting where the scheduler binds each replacement "
          "(a proposal, simulated; not in the controller): kubelet kills %s (marks-relief: %s), %s "
          "evictions (%s against marks-relief); hot node-minutes %s against the default scheduler "
          "alone. Issue 25's goal (at most %d kills, at most %s evictions): %s."
          % (fmt(mp["kubelet_evictions"]), fmt(rl["kubelet_evictions"]), fmt(mp["evictions"]),
             pct(mp["evictions"], rl["evictions"]), pct(hot(mp), hot(none)) if none else "n/a",
             GOAL_KILLS, fmt(GOAL_EVICTIONS), "met" if met else "not met"))
    for n in ("marks-w10", "marks-w50", "marks-w100"):
        if none and n in by:
            w("- %s: hot node-minutes %s." % (LABELS[n], pct(hot(by[n]), hot(none))))
    ws = [by[n] for n in ("marks-w10", "marks-w50", "marks-w100") if n in by]
    if len(ws) > 1 and all(hot(x) == hot(ws[0]) and x["pods_bound"] == ws[0]["pods_bound"] for x in ws):
        w("- The affinity weight makes no difference here: the pods carry one preferred term, and "
          "kube-scheduler normalises NodeAffinity scores to 0-100 by the highest score among the "
          "feasible nodes (DefaultNormalizeScore), so any weight gives an unmarked node 100 and a "
          "marked one 0. The weight matters only against the pod's other preferred terms.")
    if "marks-taint" in by and "marks-w100" in by:
        t, a = by["marks-taint"], by["marks-w100"]
        if t["hot_series"] == a["hot_series"] and hot(t) == hot(a):
            w("- %s: the same history as affinity weight 100 (hot node-minutes %s): "
              "TaintToleration (weight 3) and the NotIn term (NodeAffinity, weight 2) both "
              "outweigh the resource scores." % (LABELS["marks-taint"], pct(hot(t), hot(none))))
        else:
            w("- %s: hot node-minutes %s." % (LABELS["marks-taint"], pct(hot(t), hot(none))))
    ctl_runs = [r for r in scen if r["name"] not in ("none", "lownodeutil")]
    if ctl_runs and "capped_node_cycles" in ctl_runs[0]:
        capped = sum(r["capped_node_cycles"] for r in ctl_runs)
        binding = ["`%s` %g" % (r["param"], r["value"]) for r in res["runs"]
                   if r["kind"] == "sweep"
                   and r["param"] not in ("baseline", "maxMarkedFraction", "thresholdCapOff",
                                          "reliefThreshold", "earlyThreshold")
                   and r.get("capped_node_cycles", 0) > 0]
        w("- The herd cap (`maxMarkedFraction`, default %g: at most %s of the %s nodes marked at "
          "once) %s in these scenarios; the most nodes marked at once was %s. %s"
          % (P.get("max_marked_fraction", 0.5),
             fmt(int(P.get("max_marked_fraction", 0.5) * P["nodes"])), fmt(P["nodes"]),
             "left no hot node unmarked" if capped == 0
             else "left hot nodes unmarked for %s node-cycles" % fmt(capped),
             fmt(max(r.get("marked_max", 0) for r in ctl_runs)),
             ("In the sweep at the default cap it binds at %s; the `maxMarkedFraction` rows show "
              "the cap tightened and off." % ", ".join(binding)) if binding else
             "The `maxMarkedFraction` rows of the sweep show the cap tightened and off."))
    lag_lines = lag_result(res["runs"], by, P)
    if lag_lines:
        w(lag_lines[0])
    if eu:
        w("- Eviction on real usage without marks: %s evictions, %s bounce-backs (%s of them) — the "
          "replacements return to the node they left, as the issue's loop predicts; hot "
          "node-minutes %s." % (fmt(eu["evictions"]), fmt(eu["bounce_backs"]),
                                "%.0f %%" % (100.0 * eu["bounce_backs"] / max(1, eu["evictions"])),
                                pct(hot(eu), hot(none)) if none else "n/a"))
    if "lownodeutil" in by and none:
        ln = by["lownodeutil"]
        w("- LowNodeUtilization by requests: %s evictions, hot node-minutes %s: it sees requests, "
          "and the scheduler already balances requests, so it finds %s."
          % (fmt(ln["evictions"]), pct(hot(ln), hot(none)),
             "no node underutilized" if ln["evictions"] == 0 else "few nodes to move"))
    w("")
    w("## Workload")
    w("")
    w("| | |")
    w("|---|---|")
    w("| cluster | %d nodes × %g cores, %.1f GiB allocatable memory, %g simulated days at %g s steps |"
      % (P["nodes"], P["node_cpu"], P["node_memory_gib"], P["days"], P["step_seconds"]))
    w("| deployments at the start | %s (%s pods); %s with cpu requests below their usage, %s leaking memory |"
      % (fmt(P["deployments"]), fmt(P["pods"]), fmt(P["cpu_understated_deployments"]),
         fmt(P["leaking_deployments"])))
    w("| requested / used at the start | cpu %.0f %% / %.0f %%, memory %.0f %% / %.0f %% of allocatable (used: before daily peaks and bursts) |"
      % (P["cpu_requested_pct"], P["cpu_used_pct"], P["memory_requested_pct"], P["memory_used_pct"]))
    w("| controller rules | %s |" % ", ".join(rule_text(r) for r in P["rules"]))
    if P.get("relief_rules"):
        w("| marks-relief's rules | %s |" % ", ".join(rule_text(r) for r in P["relief_rules"]))
    if P.get("early_rules"):
        w("| marks-early's rules | %s |" % ", ".join(
            rule_text(r) + (" (marks only)" if r.get("resource") == "none" else "")
            for r in P["early_rules"]))
    if "eviction_hard" in P:
        w("| kubelet | kills below memory.available %s MiB (evictionHard), one pod per 10 s, in its "
          "order (`rebalance/kubelet_order.h`) |" % fmt(P["eviction_hard"] / 2.0 ** 20))
    lim = P["limits"]
    w("| rebalancer limits | %d per cycle, %d per hour, %d per node per hour |"
      % (lim["per_cycle"], lim["per_hour"], lim["per_node_per_hour"]))
    w("| hot, for the figures | cpu > %g %% or memory > %g %% of allocatable (fixed across the sweep) |"
      % (P["measure_cpu"], P["measure_memory"]))
    w("")
    w("## Scenarios")
    w("")
    w("| scenario | hot node-min cpu | hot node-min memory | vs none | memory.available breaches (at a binding) | "
      "kubelet kills (victims over / within request) | evictions | bounce-backs | pending pod-min (most at once) | discovery | eviction rate | "
      "effectiveness | spread cpu / mem (sd, %) |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in scen:
        ctl = r["name"] not in ("none", "lownodeutil")
        reb = r["name"] in ("evict-usage", "marks-rebalance", "marks-relief", "marks-early")
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f / %.1f |"
          % (LABELS.get(r["name"], r["name"]), fmt(r["node_minutes_cpu"]), fmt(r["node_minutes_memory"]),
             pct(hot(r), hot(none)) if none else "", breaches(r),
             kills(r), fmt(r["evictions"]), fmt(r["bounce_backs"]),
             "%s (%s)" % (fmt(r["pending_pod_minutes"]), fmt(r["pending_max"])),
             "%.2f" % r["discovery_rate"] if ctl else "–",
             "%.2f" % r["eviction_rate"] if reb else "–",
             "%.2f" % r["effectiveness"] if reb else "–", r["spread_cpu"], r["spread_memory"]))
    w("")
    w("Discovery: of the node-cycles hot by the figures' threshold, the share that carried the "
      "mark. Eviction rate: of the hot episodes that qualified for relief, the share with an "
      "eviction. Effectiveness: of those, the share whose node fell below its clear threshold "
      "within the effect window (`rebalance/effect.h`). Bounce-back: a replacement of an evicted "
      "pod bound to the node it left within the effect window. Kubelet kills: pods the modelled "
      "kubelet killed below its memory.available threshold (no PodDisruptionBudget, no grace "
      "period, the replacement placed by its requests), with how many of its victims used more "
      "memory than they request; a breach is the start of such an episode, and one *at a binding* "
      "began in the step a pod was bound to the node: its working set alone (the model's pods "
      "start at full size) took more than the node had available, so no rule on the node's state "
      "could have acted first.")
    w("")
    w("![hot nodes over time](effect/hot_nodes.png)")
    w("")
    explained = [r for r in scen if r.get("breach_details")
                 and r["name"] in ("marks-rebalance", "marks-relief", "marks-early", "marks-placed")]
    if explained:
        w("## Why the kubelet still kills")
        w("")
        w("Each breach as it began (`breach_details` in results.json): at a binding, the pod bound "
          "(where it came from: a rebalancer's replacement, a kubelet-killed pod's replacement, a "
          "rollout, a scale-up or a job), its memory request and working set, whether the node "
          "carried our mark, what it had available the step before, and how many unmarked nodes "
          "would have fitted the pod by requests and by use.")
        w("")
        for r in explained:
            lines = breach_causes(r)
            if lines:
                w("- %s (%s kills): %s" % (LABELS.get(r["name"], r["name"]),
                                           fmt(r["kubelet_evictions"]), " ".join(lines)))
        w("")
    if relief_sweep:
        rr = relief_rule(P)
        w("## Memory relief: the rule's threshold against the kubelet's")
        w("")
        w("marks-relief with its memory.available rule's threshold moved (the clear threshold "
          "keeps its gap of %s MiB), on %d nodes for %g days, the scenarios' size: kubelet kills are "
          "rare events, which a smaller run would not show. The kubelet kills below %s MiB. How far "
          "above it the rule must sit is the distance memory falls while the rebalancer reacts "
          "(docs/rebalancing.md, \"Memory: acting before the kubelet does\")."
          % (fmt((rr["clear"] - rr["threshold"]) / 2.0 ** 20) if rr else "?",
             relief_sweep[0]["nodes"], relief_sweep[0]["days"],
             fmt(P.get("eviction_hard", 0) / 2.0 ** 20)))
        w("")
        w("| memory.available threshold (MiB) | × the kubelet's | breaches (at a binding) | kubelet kills (victims over / within request) | "
          "evictions | hot node-min (cpu + mem) | marked node-min |")
        w("|---|---:|---:|---:|---:|---:|---:|")
        ref = [("(marks + our rebalancer, no such rule)", mr)] if mr else []
        for label, r in ref + [("%s" % fmt(r["value"] / 2.0 ** 20), r) for r in relief_sweep]:
            w("| %s | %s | %s | %s | %s | %s | %s |"
              % (label, "%.0f" % (r["value"] / P["eviction_hard"]) if "value" in r and P.get("eviction_hard") else "–",
                 breaches(r), kills(r), fmt(r["evictions"]), fmt(hot(r)), fmt(r["marked_node_minutes"])))
        w("")
        best = min(relief_sweep, key=lambda r: r["kubelet_evictions"])
        w("Fewest kubelet kills at %s MiB: %s (%s of their breaches began at a binding), with %s "
          "evictions. At the highest threshold the rule marks far more nodes (marked node-minutes) "
          "and herds new pods onto the rest. Where nearly every breach "
          "begins at a binding, no threshold on the node's memory.available brings the kills down: "
          "the new pod's working set exceeds what the node had when the scheduler chose it."
          % (fmt(best["value"] / 2.0 ** 20), fmt(best["kubelet_evictions"]),
             fmt(best.get("breaches_at_bind", 0)), fmt(best["evictions"])))
        w("")
    ramp = [r for r in res["runs"] if r["kind"] == "ramp"]
    if ramp:
        w("## Pods that ramp up")
        w("")
        w("The model's pods use their full working set from the step they are bound. With "
          "`workload.memoryRampUp: %gs` a new pod starts at its request (or its working set, if "
          "smaller) and grows to its working set over that time, as a JVM heap or a cache fills: "
          "a model choice, not a measurement (effect/README.md). Same workload, %d nodes for %g days."
          % (ramp[0]["value"], ramp[0]["nodes"], ramp[0]["days"]))
        w("")
        w("| scenario | ramp | breaches (at a binding) | kubelet kills (victims over / within request) | "
          "evictions | hot node-min (cpu + mem) |")
        w("|---|---|---:|---:|---:|---:|")
        for r in ramp:
            base_run = by.get(r["name"])
            if base_run:
                w("| %s | none | %s | %s | %s | %s |" % (LABELS.get(r["name"], r["name"]), breaches(base_run),
                                                      kills(base_run), fmt(base_run["evictions"]),
                                                      fmt(hot(base_run))))
            w("| %s | %gs | %s | %s | %s | %s |" % (LABELS.get(r["name"], r["name"]), r["value"], breaches(r),
                                                 kills(r), fmt(r["evictions"]), fmt(hot(r))))
        w("")
        for r in ramp:
            lines = breach_causes(r)
            if lines:
                w("- %s, ramping (%s kills): %s" % (LABELS.get(r["name"], r["name"]),
                                                    fmt(r["kubelet_evictions"]), " ".join(lines)))
        w("")
    early_sweep = sorted([r for r in sweep if r["param"] == "earlyThreshold"], key=lambda r: r["value"])
    if early_sweep:
        w("## Mark early: the mark-only rule's threshold")
        w("")
        w("marks-early with its mark-only memory.available rule's threshold moved (its clear "
          "threshold keeps its gap), on %d nodes for %g days. The relief rule stays at %s MiB. A "
          "mark high enough to keep a large pod's working set off a node marks many nodes at once: "
          "most marked is against the herd cap of %s."
          % (early_sweep[0]["nodes"], early_sweep[0]["days"],
             fmt(relief_rule(P, "early_rules")["threshold"] / 2.0 ** 20) if relief_rule(P, "early_rules") else "?",
             fmt(int(P.get("max_marked_fraction", 0.5) * P["nodes"]))))
        w("")
        w("| mark-only threshold (MiB) | breaches (at a binding) | kubelet kills (victims over / "
          "within request) | evictions | hot node-min (cpu + mem) | marked node-min (most at once) "
          "| capped node-cycles | pending pod-min |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|")
        if rl:
            w("| (marks-relief, no such rule) | %s | %s | %s | %s | %s (%s) | %s | %s |"
              % (breaches(rl), kills(rl), fmt(rl["evictions"]), fmt(hot(rl)),
                 fmt(rl["marked_node_minutes"]), fmt(rl.get("marked_max", 0)),
                 fmt(rl.get("capped_node_cycles", 0)), fmt(rl["pending_pod_minutes"])))
        for r in early_sweep:
            w("| %s | %s | %s | %s | %s | %s (%s) | %s | %s |"
              % (fmt(r["value"] / 2.0 ** 20), breaches(r), kills(r), fmt(r["evictions"]), fmt(hot(r)),
                 fmt(r["marked_node_minutes"]), fmt(r.get("marked_max", 0)),
                 fmt(r.get("capped_node_cycles", 0)), fmt(r["pending_pod_minutes"])))
        w("")
    lag_section(res["runs"], by, P, w)
    balance_section(res, w)
    if vary:
        w("## Sensitivity")
        w("")
        w("Around marks + rebalancer, one setting changed at a time, on %d nodes for %g days "
          "(the default scheduler alone has %s hot node-minutes there). `threshold` sets every "
          "rule's threshold, keeping its gap to the clear threshold; `clearGap` sets threshold − "
          "clear threshold; `perHour` is `rebalance.limits.perHour`; `maxMarkedFraction` is the herd "
          "cap (1 = off). Capped: hot node-cycles the herd cap left unmarked."
          % (vary[0]["nodes"], vary[0]["days"], fmt(hot(sweep_base["none"]))))
        w("")
        w("| setting | value | hot node-min (cpu + mem) | vs none | evictions | bounce-backs | "
          "kubelet evictions | marked node-min (most at once) | capped | pending pod-min |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        base_rows = [sweep_base[n] for n in ("none", "marks-rebalance") if n in sweep_base]
        for r in base_rows + vary:
            if r["param"] == "baseline":
                r = dict(r, param="(rule file: %s)" % LABELS.get(r["name"], r["name"]), value="–")
            else:
                r = dict(r, value="%g" % r["value"])
            w("| %s | %s | %s | %s | %s | %s | %s | %s (%s) | %s | %s |"
              % (r["param"], r["value"], fmt(hot(r)), pct(hot(r), hot(sweep_base["none"])),
                 fmt(r["evictions"]), fmt(r["bounce_backs"]), fmt(r["kubelet_evictions"]),
                 fmt(r["marked_node_minutes"]), fmt(r.get("marked_max", 0)),
                 fmt(r.get("capped_node_cycles", 0)), fmt(r["pending_pod_minutes"])))
        w("")
        for p in SWEPT:
            rs = sorted([r for r in vary if r["param"] == p], key=lambda r: r["value"])
            if not rs:
                continue
            best = min(rs, key=hot)
            node_min = rs[0]["nodes"] * rs[0]["days"] * 1440.0
            w("- `%s`: fewest hot node-minutes at %g (%s vs none). Across the sweep the share of "
              "node time marked runs %.0f–%.0f %% and evictions %s–%s."
              % (p, best["value"], pct(hot(best), hot(sweep_base["none"])),
                 100 * min(r["marked_node_minutes"] for r in rs) / node_min,
                 100 * max(r["marked_node_minutes"] for r in rs) / node_min,
                 fmt(min(r["evictions"] for r in rs)), fmt(max(r["evictions"] for r in rs))))
        w("")
        w("A threshold so low that most nodes are over it marks nodes that are not in trouble and "
          "herds new pods onto the rest; the herd cap stops the marks at its share (the most "
          "marked at once is in brackets) and leaves the other hot nodes unmarked (capped). A "
          "per-hour limit beyond what the hot episodes can use changes nothing. The rows above "
          "show where this cluster reaches those points.")
        w("")
        w("![sweep](effect/sweep.png)")
        w("")
    if cap_off:
        w("## Herd cap on and off")
        w("")
        w("`marks-rebalance` at each swept threshold, once with the rule file's herd cap "
          "(`maxMarkedFraction` %g) and once without it (`maxMarkedFraction: 1`), on %d nodes for "
          "%g days. Where the cap never binds the two runs are the same history."
          % (P.get("max_marked_fraction", 0.5), vary[0]["nodes"], vary[0]["days"]))
        w("")
        w("| threshold | hot node-min, cap | hot node-min, no cap | most marked, cap / no cap | "
          "capped node-cycles | evictions, cap / no cap | pending pod-min, cap / no cap |")
        w("|---:|---:|---:|---:|---:|---:|---:|")
        with_cap = {r["value"]: r for r in vary if r["param"] == "threshold"}
        for v in sorted(cap_off):
            c, o = with_cap.get(v), cap_off[v]
            if not c:
                continue
            w("| %g | %s (%s) | %s (%s) | %s / %s | %s | %s / %s | %s / %s |"
              % (v, fmt(hot(c)), pct(hot(c), hot(sweep_base["none"])), fmt(hot(o)),
                 pct(hot(o), hot(sweep_base["none"])), fmt(c.get("marked_max", 0)),
                 fmt(o.get("marked_max", 0)), fmt(c.get("capped_node_cycles", 0)),
                 fmt(c["evictions"]), fmt(o["evictions"]), fmt(c["pending_pod_minutes"]),
                 fmt(o["pending_pod_minutes"])))
        w("")
        binds = [v for v in sorted(cap_off) if v in with_cap
                 and with_cap[v].get("capped_node_cycles", 0) > 0]
        if binds:
            parts = []
            for v in binds:
                c, o = with_cap[v], cap_off[v]
                parts.append("at threshold %g, %s hot node-minutes with the cap and %s without it "
                             "(the cap: %s; uncapped, %s of %d nodes were marked at once)"
                             % (v, fmt(hot(c)), fmt(hot(o)), pct(hot(c), hot(o)),
                                fmt(o.get("marked_max", 0)), o["nodes"]))
            w("Where the cap binds: " + "; ".join(parts) + ". A mark on most nodes steers new "
              "pods nowhere in particular, and the rebalancer's destinations are the few unmarked "
              "nodes.")
        else:
            w("The cap never binds at these thresholds.")
        w("")
    tr = res.get("trace")
    if tr:
        tb = {r["name"]: r for r in tr["runs"] if r["kind"] == "scenario"}
        tp = tr["params"]
        w("## Usage-to-request from published traces")
        w("")
        w("`%s` (seed %d) is the default cluster with the only published figures found for it "
          "(the file cites them): usage is 54 %% of what is reserved in aggregate, from the 46 %% "
          "slack of manually-managed jobs in Google's Autopilot paper (EuroSys 2020, "
          "https://research.google/pubs/pub49174/), and no daily swing of memory, as Jiang et al. "
          "report for containers in Alibaba's cluster-trace-v2018 "
          "(https://openreview.net/forum?id=FsYOj2uGzf). No published distribution of pod "
          "lifetimes was found in a stored source; churn stays the default's assumption. On %d "
          "nodes for %g days: requested / used at the start cpu %.0f %% / %.0f %%, memory %.0f %% "
          "/ %.0f %% of allocatable."
          % (os.path.relpath(tp["source"], REPO) if os.path.isabs(tp["source"]) else tp["source"],
             tp["seed"], tp["nodes"], tp["days"], tp["cpu_requested_pct"], tp["cpu_used_pct"],
             tp["memory_requested_pct"], tp["memory_used_pct"]))
        w("")
        w("| scenario | hot node-min cpu | hot node-min memory | vs none | breaches | evictions | "
          "bounce-backs | pending pod-min |")
        w("|---|---:|---:|---:|---:|---:|---:|---:|")
        tn = tb.get("none")
        for r in tb.values():
            w("| %s | %s | %s | %s | %s | %s | %s | %s |"
              % (LABELS.get(r["name"], r["name"]), fmt(r["node_minutes_cpu"]),
                 fmt(r["node_minutes_memory"]), pct(hot(r), hot(tn)) if tn else "",
                 fmt(r["memory_breaches"]), fmt(r["evictions"]), fmt(r["bounce_backs"]),
                 fmt(r["pending_pod_minutes"])))
        w("")
    seeds = [r for r in res["runs"] if r["kind"] == "seed"]
    if seeds:
        w("## Other seeds")
        w("")
        w("The same shape of workload drawn with other seeds (other deployments, phases, bursts "
          "and churn), on %d nodes for %g days: hot node-minutes (cpu + memory) against the default "
          "scheduler alone of the same seed, and bounce-backs." % (seeds[0]["nodes"], seeds[0]["days"]))
        w("")
        names = [n for n in ("marks-w100", "evict-usage", "marks-rebalance")
                 if any(r["name"] == n for r in seeds)]
        w("| seed | default scheduler alone | " + " | ".join(LABELS[n] for n in names) + " |")
        w("|---:|---:|" + "---:|" * len(names))
        values = sorted(set(r["value"] for r in seeds))
        for v in values:
            at = {r["name"]: r for r in seeds if r["value"] == v}
            base = at["none"]
            cells = ["%s (%s, %s bounce-backs)" % (fmt(hot(at[n])), pct(hot(at[n]), hot(base)),
                                                   fmt(at[n]["bounce_backs"])) for n in names]
            w("| %d | %s | %s |" % (v, fmt(hot(base)), " | ".join(cells)))
        w("")
    w("## Performance")
    w("")
    w("| run | nodes × days | wall time | cpu time |")
    w("|---|---|---:|---:|")
    for r in scen_all:
        w("| %s | %d × %g at %g s steps | %.0f s | %.0f s |"
          % (r["name"], r["nodes"], r["days"], P["step_seconds"], r["wall_seconds"],
             r["cpu_seconds"]))
    allruns = res["runs"] + (tr["runs"] if tr else [])
    w("| all %d simulations | | %.0f s | %.0f s |"
      % (len(allruns), sum(r["wall_seconds"] for r in allruns),
         sum(r["cpu_seconds"] for r in allruns)))
    w("")
    w("One simulation runs on one thread; this run used %d at once (`--jobs`), %.0f s in all, on %s "
      "with %d cores, whose load average was %.1f at the start and %.1f at the end (the cpu time "
      "is what an idle core would take; the wall time includes waiting for a shared machine)."
      % (G["jobs"], G["seconds"], G["machine"], G["cores"], G["load_start"], G["load_end"]))
    w("")
    with open(os.path.join(REPO, "bench", "EFFECT.md"), "w") as f:
        f.write("\n".join(L))
    print("wrote bench/EFFECT.md, bench/effect/results.json and bench/effect/*.png")


if __name__ == "__main__":
    main()
