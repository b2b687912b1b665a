#!/usr/bin/env bash
# The README's two commands on a Debian 12 root made fresh with debootstrap (not part of
# scripts/test.sh: it builds everything again and takes long). A clean clone of this
# repository's HEAD is copied in; `scripts/run.sh` must serve the dashboard and `/healthz`,
# then `scripts/test.sh` must pass — as root, or with --user as an ordinary user who has sudo
# (the scripts call apt-get through it). Debian's own Node (18) is what the root has, so the
# tests run on the Node install_deps.sh fetches. Run it before a release; it prints a summary
# to paste into bench/RESULTS.md.
# --ccache DIR lends the chroot a compiler cache (the same compiler, so its objects are what a
# compile would make): the proof is of packages, scripts and tests, in less time.
# Needs root (debootstrap, chroot, mounts) and Debian's mirror.
# Usage: tests/fresh/debian12.sh [--user] [--ccache DIR] [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
as_user=0
ccache_dir=""
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --user) as_user=1; shift ;;
    --ccache) ccache_dir=$(realpath "$2"); shift 2 ;;
    *) echo "debian12.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
work=$(mkdir -p "${1:-/tmp/perfscope-fresh}" && realpath "${1:-/tmp/perfscope-fresh}")
root=$work/root
scripts/install_deps.sh --container >/dev/null  # debootstrap
mounts=()
# Every process whose root is the chroot's.
kill_inside() {
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/root" 2>/dev/null) == "$root" ]] && kill "-${1:-TERM}" "${p#/proc/}" 2>/dev/null
  done
  return 0
}
cleanup() {
  kill_inside KILL
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
started=$(date +%s)
if [[ ! -x $root/usr/bin/apt-get ]]; then
  rm -rf "$root"
  debootstrap --variant=minbase --include=sudo,ca-certificates bookworm "$root" http://deb.debian.org/debian >"$work/debootstrap.log"
fi
# This machine's extra CAs (a TLS-inspecting proxy in front of the registries), trusted inside too.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates >/dev/null 2>&1
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# What an installed system (or a container runtime) provides and debootstrap does not.
[[ -s $root/etc/hosts ]] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
for m in proc sys dev dev/pts; do
  mount --bind "/$m" "$root/$m"
  mounts+=("$root/$m")
done
home=/root user=root
if ((as_user)); then
  chroot "$root" bash -c 'id perfscope >/dev/null 2>&1 || useradd -m -s /bin/bash perfscope; echo "perfscope ALL=(ALL) NOPASSWD:ALL" >/etc/sudoers.d/perfscope'
  home=/home/perfscope user=perfscope
fi
checkout=$home/perfscope
rm -rf "$root$checkout"
git clone -q --no-hardlinks "$repo" "$root$checkout"
chroot "$root" chown -R "$user:$user" "$checkout"
env_vars=(HOME="$home" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 TERM=dumb)
if [[ -n $ccache_dir ]]; then
  mkdir -p "$root/ccache"
  mount --bind "$ccache_dir" "$root/ccache"
  mounts+=("$root/ccache")
  env_vars+=(CCACHE_DIR=/ccache CCACHE_UMASK=000)
  # The cache belongs to root: an ordinary user reads it and keeps its temporary files at home.
  ((as_user)) && env_vars+=(CCACHE_READONLY=1 CCACHE_TEMPDIR="$home/.cache/ccache-tmp")
fi
in_root() { chroot --userspec="$user:$user" "$root" env -i "${env_vars[@]}" bash -c "cd $checkout && $1"; }

echo "== $(date -u +%FT%TZ) fresh Debian $(cat "$root/etc/debian_version"), as $user, Node before: $(chroot "$root" bash -c 'node --version 2>/dev/null || echo none')"
port=18099
in_root "scripts/run.sh --listen 127.0.0.1:$port" >"$work/run.log" 2>&1 &
run_pid=$!
served=0
for _ in $(seq 1 3600); do
  kill -0 "$run_pid" 2>/dev/null || break  # the command ended (a failed build) without serving
  if curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && curl -fsS "http://127.0.0.1:$port/" | grep -qi '<title>perfscope'; then
    served=1
    break
  fi
  sleep 1
done
kill_inside TERM
wait || true
echo "scripts/run.sh: $([[ $served == 1 ]] && echo "served the dashboard and /healthz" || echo FAILED) after $(($(date +%s) - started)) s (log: $work/run.log)"
test_started=$(date +%s)
set +e
in_root "scripts/test.sh" >"$work/test.log" 2>&1
rc=$?
set -e
echo "scripts/test.sh: exit $rc after $(($(date +%s) - test_started)) s; $(grep -E 'tests passed|tests failed' "$work/test.log" | tail -1) (log: $work/test.log)"
echo "Node for the tests: $(in_root '[[ -x .tools/node/bin/node ]] && .tools/node/bin/node --version || node --version')"
[[ $served == 1 && $rc == 0 ]]
