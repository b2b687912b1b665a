#!/usr/bin/env bash
# The image for arm64 (GH200 hosts), built from docker/Dockerfile on this x86-64 machine as a
# multi-architecture build does it: the builder cross-compiles on the build machine, the
# runtime stage is arm64. Then the arm64 binary runs under QEMU: its version, the server
# answering /healthz and taking events. Needs qemu-user-static with binfmt handlers and
# Debian's mirror; not part of scripts/test.sh (it builds everything again). (Podman 4.3 leaves
# BUILDPLATFORM unset once --platform is given, so it is passed; Docker BuildKit sets it. Both
# bases are local images: --pull=never, else Podman looks for the arm64 one in a registry.)
#   tests/container/test_arm64.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/install_deps.sh --container
[[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]] || { echo "test_arm64.sh: needs QEMU's aarch64 binfmt handler (apt-get install qemu-user-static binfmt-support)" >&2; exit 1; }
builder=docker.io/library/debian:bookworm-slim
base=localhost/debian-arm64:bookworm-slim
image=localhost/perfscope:arm64-test
port=${PERFSCOPE_TEST_PORT:-18088}
work=$(mktemp -d)
container=""
cleanup() {
  pkill -f "aarch64.* /usr/local/bin/perfscope serve" 2>/dev/null || true  # the server under QEMU
  [[ -n "$container" ]] && buildah rm "$container" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
started=$(date +%s)
if ! podman image exists "$base"; then
  echo "perfscope: making the arm64 $base with debootstrap (second stage under QEMU)"
  debootstrap --arch=arm64 --foreign --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian >/dev/null
  chroot "$work/rootfs" /debootstrap/debootstrap --second-stage >/dev/null
  tar -C "$work/rootfs" -c . | podman import --arch arm64 - "$base" >/dev/null
  rm -rf "$work/rootfs"
fi
if ! podman image exists "$builder"; then  # the build machine's own, as tests/container/test_image.sh makes it
  debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian >/dev/null
  tar -C "$work/rootfs" -c . | podman import - "$builder" >/dev/null
  rm -rf "$work/rootfs"
fi
extra=()
compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null && extra+=(-v /usr/local/share/ca-certificates:/usr/local/share/ca-certificates:ro)
podman build --isolation chroot --format docker --platform linux/arm64 --pull=never "${extra[@]}" \
  --build-arg BUILDPLATFORM="linux/$(dpkg --print-architecture)" \
  --build-arg BUILDER_IMAGE="$builder" --build-arg DEBIAN_IMAGE="$base" \
  -t "$image" -f docker/Dockerfile . >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; echo "FAILED: the arm64 image does not build"; exit 1; }
echo "arm64 image built in $(($(date +%s) - started)) s; size $(podman image inspect --format '{{.Size}}' "$image") bytes;" \
     "architecture $(podman image inspect --format '{{.Architecture}}' "$image")"
container=$(buildah from "$image")
mnt=$(buildah mount "$container")
echo "binary: $(file -b "$mnt/usr/local/bin/perfscope" | cut -d, -f1-2)"
buildah run --isolation chroot "$container" -- /usr/local/bin/perfscope version
# The image's own entrypoint and settings (tokens created in /data), on a loopback test port.
buildah config --volume /data- --env "PERFSCOPE_LISTEN=127.0.0.1:$port" "$container"
buildah run --isolation chroot "$container" -- /usr/local/bin/perfscope serve >"$work/server.log" 2>&1 &
for _ in $(seq 1 600); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
curl -fsS "http://127.0.0.1:$port/healthz" || { cat "$work/server.log"; echo "FAILED: the arm64 server does not answer"; exit 1; }
echo
write=$(sed -n 's/^write //p' "$mnt/data/tokens")
read=$(sed -n 's/^read //p' "$mnt/data/tokens")
t=$(( $(date +%s) * 1000000000 ))
curl -fsS -H "Authorization: Bearer $write" -H 'Content-Type: application/json' "http://127.0.0.1:$port/api/v1/events" \
  -d "{\"events\":[{\"type\":\"kernel\",\"name\":\"on_arm\",\"start_ns\":$t,\"end_ns\":$((t + 1000))}]}"; echo
curl -fsS -H "Authorization: Bearer $read" "http://127.0.0.1:$port/api/v1/kernels?window=all" | grep -q '"name":"on_arm"' \
  || { echo "FAILED: the arm64 server did not answer with the event"; exit 1; }
echo "ok: the arm64 server stores and answers events"
echo "arm64 test finished in $(($(date +%s) - started)) s"
