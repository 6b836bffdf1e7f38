#!/bin/sh
# push.sh: pushes this node's kubelet-style memory.available to a Prometheus pushgateway.
#
# The kubelet evicts pods on memory.available = capacity - working set, where
#   working set = usage - inactive_file (floored at 0)
#   cgroup v1: usage = memory.usage_in_bytes, inactive_file = total_inactive_file (memory.stat)
#   cgroup v2: usage = memory.current,        inactive_file = inactive_file       (memory.stat)
# and capacity is MemTotal. At the root of a cgroup v2 hierarchy the kernel has no
# memory.current; there usage is MemTotal - MemFree from /proc/meminfo (what runc reports for the
# root), with inactive_file from the root's memory.stat, or Inactive(file) from /proc/meminfo.
#
# Pushed (job CollectK8sCgroupsMem, instance = node name, labels node and ip):
#   k8s_node_memory_available_bytes   bytes
#   k8_node_cgroups_mem_available     MiB, the metric rule files written for the original project use
# The pushgateway keeps serving the last push when this script stops (a node that died, a pod that
# was removed); its push_time_seconds{job="CollectK8sCgroupsMem",instance=<node>} says when that
# was, which is what the memory_available rule's maxAge/ageQuery in deploy/base/rule.yaml reads.
#
# Environment:
#   PUSHGATEWAY_URL  e.g. http://pushgateway.dynamic-scheduler:9091   (required)
#   NODE_NAME        the Kubernetes node name                          (required)
#   NODE_IP          the node's InternalIP                             (optional)
#   CGROUP_ROOT      default /sys/fs/cgroup (v1: its memory/ subfolder is used)
#   MEMINFO          default /proc/meminfo
#   PUSH_INTERVAL    seconds; if set, push for ever at this interval (DaemonSet); else push once (cron)
#   DRY_RUN=1        print the exposition instead of pushing
# Exit codes: 0 pushed; 1 could not read the inputs or push; 2 bad configuration.
set -u

CGROUP_ROOT=${CGROUP_ROOT:-/sys/fs/cgroup}
MEMINFO=${MEMINFO:-/proc/meminfo}
NODE_IP=${NODE_IP:-}

die() { code=$1; shift; echo "push.sh: $*" >&2; exit "$code"; }

[ -n "${NODE_NAME:-}" ] || die 2 "NODE_NAME is not set (the Kubernetes node name)"
[ -n "${PUSHGATEWAY_URL:-}" ] || [ "${DRY_RUN:-0}" = 1 ] || die 2 "PUSHGATEWAY_URL is not set (e.g. http://pushgateway:9091)"
case "${PUSH_INTERVAL:-}" in ''|*[!0-9]*) [ -z "${PUSH_INTERVAL:-}" ] || die 2 "PUSH_INTERVAL must be whole seconds, got '$PUSH_INTERVAL'";; esac

# read_number FILE: the file's first field, which must be a whole number.
read_number() {
  [ -r "$1" ] || { echo "push.sh: cannot read $1 (set CGROUP_ROOT/MEMINFO?)" >&2; return 1; }
  v=$(head -n 1 "$1" | awk '{print $1}')
  case "$v" in ''|*[!0-9]*) echo "push.sh: $1: not a number: '$v'" >&2; return 1;; esac
  echo "$v"
}

# stat_value FILE KEY: the value of KEY in a memory.stat-style "key value" file.
stat_value() {
  [ -r "$1" ] || { echo "push.sh: cannot read $1" >&2; return 1; }
  v=$(awk -v k="$2" '$1 == k {print $2; exit}' "$1")
  case "$v" in ''|*[!0-9]*) echo "push.sh: $1: no whole-number '$2'" >&2; return 1;; esac
  echo "$v"
}

# meminfo_kib KEY: the value in KiB of KEY ("MemTotal:") in MEMINFO.
meminfo_kib() {
  [ -r "$MEMINFO" ] || { echo "push.sh: cannot read $MEMINFO" >&2; return 1; }
  v=$(awk -v k="$1" '$1 == k {print $2; exit}' "$MEMINFO")
  case "$v" in ''|*[!0-9]*) echo "push.sh: $MEMINFO: no '$1'" >&2; return 1;; esac
  echo "$v"
}

# Prints "available_bytes cgroup_version" or fails.
measure() {
  total_kib=$(meminfo_kib MemTotal:) || return 1
  capacity=$((total_kib * 1024))
  if [ -r "$CGROUP_ROOT/cgroup.controllers" ] && { [ -r "$CGROUP_ROOT/memory.stat" ] || [ -r "$CGROUP_ROOT/memory.current" ]; }; then
    version=v2
    if [ -r "$CGROUP_ROOT/memory.current" ]; then
      usage=$(read_number "$CGROUP_ROOT/memory.current") || return 1
      inactive=$(stat_value "$CGROUP_ROOT/memory.stat" inactive_file) || return 1
    else
      free_kib=$(meminfo_kib MemFree:) || return 1
      usage=$(((total_kib - free_kib) * 1024))
      inactive=$(stat_value "$CGROUP_ROOT/memory.stat" inactive_file 2>/dev/null) ||
        inactive=$(($(meminfo_kib "Inactive(file):") * 1024)) || return 1
    fi
  elif [ -d "$CGROUP_ROOT/memory" ]; then
    version=v1
    usage=$(read_number "$CGROUP_ROOT/memory/memory.usage_in_bytes") || return 1
    inactive=$(stat_value "$CGROUP_ROOT/memory/memory.stat" total_inactive_file) || return 1
  else
    echo "push.sh: $CGROUP_ROOT has neither cgroup v2 memory files nor a v1 memory/ controller" >&2
    return 1
  fi
  working_set=$((usage - inactive))
  [ "$working_set" -lt 0 ] && working_set=0
  echo "$((capacity - working_set)) $version"
}

# Label values are node names and IPs; escape \ and " anyway so the exposition stays valid.
esc() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }

push_once() {
  m=$(measure) || return 1
  available=${m% *}
  labels="node=\"$(esc "$NODE_NAME")\""
  [ -n "$NODE_IP" ] && labels="$labels,ip=\"$(esc "$NODE_IP")\""
  body=$(printf '# HELP k8s_node_memory_available_bytes The kubelet'"'"'s memory.available signal (capacity - working set) in bytes.\n# TYPE k8s_node_memory_available_bytes gauge\nk8s_node_memory_available_bytes{%s} %s\n# HELP k8_node_cgroups_mem_available memory.available in MiB (the original project'"'"'s metric).\n# TYPE k8_node_cgroups_mem_available gauge\nk8_node_cgroups_mem_available{%s} %s\n' \
    "$labels" "$available" "$labels" "$((available / 1048576))")
  if [ "${DRY_RUN:-0}" = 1 ]; then
    printf '%s\n' "$body"
    return 0
  fi
  url="${PUSHGATEWAY_URL%/}/metrics/job/CollectK8sCgroupsMem/instance/$NODE_NAME"
  # PUT replaces the whole group, so a metric dropped here does not linger on the pushgateway.
  if ! out=$(printf '%s\n' "$body" | curl -sS --fail-with-body --max-time 10 -X PUT --data-binary @- "$url" 2>&1); then
    echo "push.sh: push to $url failed: $out" >&2
    return 1
  fi
}

if [ -z "${PUSH_INTERVAL:-}" ]; then
  push_once || exit 1
  exit 0
fi
while :; do
  push_once || echo "push.sh: will retry in ${PUSH_INTERVAL}s" >&2
  sleep "$PUSH_INTERVAL"
done
