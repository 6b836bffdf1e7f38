#!/usr/bin/env bash
# The README's two commands on a truly fresh Debian 12: bootstraps a minimal bookworm (debootstrap
# --variant=minbase) into a temporary directory, installs only git and ca-certificates there, clones
# this repository's committed HEAD into it, and runs, as root in a chroot,
#   DEMO_DURATION=<s> scripts/demo.sh     (checked: nodes labelled and unlabelled, clean stop)
#   scripts/test.sh [args]                (the whole suite, as CI runs it)
# It reports each command's result and time, then stops every process left in the chroot,
# unmounts and removes it. Needs root (chroot, mount) and Debian's archive (the host's apt sources
# are used for the mirror and copied into the fresh system, as an installer would set them up).
#   scripts/fresh-debian.sh                 both commands
#   scripts/fresh-debian.sh --demo          the demo only
#   scripts/fresh-debian.sh --test [ARGS]   the test command only (ARGS go to scripts/test.sh)
#   FRESH_KEEP=1 ...                        keep the fresh system (its path is printed) for a look
#   DEMO_DURATION=90 (default)              how long the demo runs before it stops itself
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
run_demo=true run_test=true
case "${1:-}" in
  --demo) run_test=false; shift ;;
  --test) run_demo=false; shift ;;
  "") ;;
  *) echo "usage: $0 [--demo | --test [scripts/test.sh args]]" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "$0: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
command -v debootstrap >/dev/null || {
  apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null
}

# The host's Debian mirror for bookworm (deb822 .sources or a one-line sources.list).
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || { echo "$0: no Debian mirror in the host's apt sources" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/ds-fresh-debian.XXXXXX")
root="$work/root"
log="$work/log"
summary=()
cleanup() {
  local rc=$?
  # Every process whose root is the fresh system (the demo's or the tests' servers, if any).
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null || true
  done
  sleep 1
  for m in dev/pts dev sys proc; do
    mountpoint -q "$root/$m" && umount -l "$root/$m" 2>/dev/null || true
  done
  if [ "${FRESH_KEEP:-0}" = 1 ]; then
    echo "kept: $root (unmounted; logs in $log)"
  elif ! grep -qs " $root/" /proc/mounts; then
    rm -rf "$work"
  else
    echo "$0: something is still mounted under $root; not removed" >&2
  fi
  printf '%s\n' "${summary[@]}"
  exit "$rc"
}
trap cleanup EXIT
mkdir -p "$log"
elapsed() { echo $(( $(date +%s) - $1 )); }

t0=$(date +%s)
echo "debootstrap --variant=minbase bookworm into $root ..."
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$log/debootstrap.log" 2>&1 || {
  tail -20 "$log/debootstrap.log"; summary+=("debootstrap: FAILED"); exit 1; }
summary+=("debootstrap: $(elapsed "$t0") s")

mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The fresh system's apt sources are the host's (bookworm, its updates and security), as a Debian
# installer writes them; debootstrap alone configures only the main suite.
if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
  cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/"
  rm -f "$root/etc/apt/sources.list"
fi
in_root() { chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

t0=$(date +%s)
in_root bash -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q git ca-certificates' \
  >"$log/base.log" 2>&1 || { tail -20 "$log/base.log"; summary+=("git + ca-certificates: FAILED"); exit 1; }
# The machine's CA bundle over the fresh one: this workplace's registries are reached through a
# TLS-inspecting proxy whose CA only the host's bundle holds (npm ci fails without it).
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
git clone -q "$repo" "$root/root/dynamic-scheduler"
summary+=("git + ca-certificates + clone of $(git -C "$repo" rev-parse --short HEAD): $(elapsed "$t0") s")

status=0
if $run_demo; then
  t0=$(date +%s)
  echo "the demo (DEMO_DURATION=${DEMO_DURATION:-90}) ..."
  rc=0
  in_root bash -c "cd /root/dynamic-scheduler && DEMO_DURATION=${DEMO_DURATION:-90} scripts/demo.sh" \
    >"$log/demo.log" 2>&1 || rc=$?
  # What the README promises: nodes labelled and unlabelled live, and a clean stop.
  verdict="FAILED (exit $rc)"
  if [ "$rc" = 0 ] && grep -q "LABELLED  " "$log/demo.log" && grep -q "UNLABELLED" "$log/demo.log" \
      && grep -q "no process left behind" "$log/demo.log"; then
    verdict="ok ($(grep -Eo '[0-9]+ labels set and [0-9]+' "$log/demo.log" | tail -1) removed)"
  else
    tail -30 "$log/demo.log"; status=1
  fi
  summary+=("scripts/demo.sh: $verdict in $(elapsed "$t0") s (install, build and the demo's run)")
fi
if $run_test; then
  t0=$(date +%s)
  echo "the test command (scripts/test.sh $*) ..."
  rc=0
  in_root bash -c 'cd /root/dynamic-scheduler && CI=true scripts/test.sh "$@"' test "$@" >"$log/test.log" 2>&1 || rc=$?
  # Each pass's ctest summary and the suite's closing line.
  grep -E "tests passed|tests failed|Total Test time|^build-[a-z]+: (built|tested)|fuzzing:|NOT CHECKED" \
    "$log/test.log" | sed 's/^/  /' || true
  if [ "$rc" = 0 ]; then verdict="ok"; else verdict="FAILED (exit $rc)"; tail -60 "$log/test.log"; status=1; fi
  summary+=("scripts/test.sh: $verdict in $(elapsed "$t0") s")
  kv=$(in_root kubectl version --client -o json 2>/dev/null | sed -n 's/.*"gitVersion": "\([^"]*\)".*/\1/p')
  summary+=("  with kubectl $kv and Node.js $(in_root node --version 2>/dev/null) (what scripts/install-deps.sh installed)")
fi
FRESH_KEEP=${FRESH_KEEP:-0}
[ "$status" = 0 ] || { [ "${FRESH_KEEP}" = 1 ] || cp -r "$log" "${TMPDIR:-/var/tmp}/ds-fresh-debian-logs.$$" && \
  summary+=("logs: ${TMPDIR:-/var/tmp}/ds-fresh-debian-logs.$$"); }
exit "$status"
