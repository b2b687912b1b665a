#!/usr/bin/env bash
# Builds the image from docker/Dockerfile as it is, runs the server from it and checks what a
# container user relies on: a non-root process, /healthz and the health check command, the
# dashboard and /metrics, events in and queryable, SIGTERM ending it within 10 s, and the
# database it leaves behind intact with the data. No Docker engine is needed: Podman and
# Buildah build the image, and the server runs from it in chroot isolation on the host's
# network (the runtime's own isolation needs cgroup and rlimit support these machines lack).
#
#   tests/container/test_image.sh          (or PERFSCOPE_TEST_CONTAINER=1 scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/install_deps.sh --container

image=localhost/perfscope:test
base=docker.io/library/debian:bookworm-slim
port=${PERFSCOPE_TEST_PORT:-18087}
work=$(mktemp -d)
container=""
server=""
fail=0
check() { # description, condition
  if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi
}
cleanup() {
  [[ -n "$server" ]] && kill -KILL "$server" 2>/dev/null || true
  [[ -n "$container" ]] && buildah rm "$container" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

started=$(date +%s)
# The compose stack, read by a Compose implementation against its schema.
check "docker/compose.yml is a valid Compose file" "docker-compose -f docker/compose.yml config -q"
check "and builds perfscope from docker/Dockerfile" \
  "docker-compose -f docker/compose.yml config | grep -q 'dockerfile: docker/Dockerfile'"

# No registry is reachable from the build machines: make the base image from Debian's mirror
# under the name the Dockerfile uses (skipped when it exists, e.g. pulled normally).
if ! podman image exists "$base"; then
  echo "perfscope: making $base with debootstrap"
  debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian >/dev/null
  tar -C "$work/rootfs" -c . | podman import - "$base" >/dev/null
  rm -rf "$work/rootfs"
fi

# Docker format: OCI image configs cannot carry a HEALTHCHECK. Where this machine trusts extra
# CAs (a TLS-inspecting proxy in front of the npm registry), the build trusts them too.
extra=()
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  extra+=(-v /usr/local/share/ca-certificates:/usr/local/share/ca-certificates:ro)
fi
version=$(sed -nE 's/^project\(perfscope VERSION ([0-9.]+).*/\1/p' CMakeLists.txt)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
podman build --isolation chroot --format docker "${extra[@]}" --build-arg DEBIAN_IMAGE="$base" \
  --build-arg REVISION="$revision" -t "$image" -f docker/Dockerfile . >"$work/build.log" 2>&1 \
  || { tail -50 "$work/build.log"; echo "FAILED: the image does not build"; exit 1; }
built=$(date +%s)
size=$(podman image inspect --format '{{.Size}}' "$image")
base_size=$(podman image inspect --format '{{.Size}}' "$base")
echo "image built in $((built - started)) s; size $size bytes ($((size / 1000000)) MB), of which the base" \
     "image $base_size bytes: perfscope adds $(((size - base_size) / 1000)) kB"

inspect() { podman image inspect --format "$1" "$image"; }
check "runs as the non-root user perfscope" "[ '$(inspect '{{.Config.User}}')' = perfscope ]"
check "exec-form ENTRYPOINT" "[ '$(inspect '{{json .Config.Entrypoint}}')' = '[\"/usr/local/bin/perfscope\"]' ]"
check "EXPOSE 8080" "grep -q 8080/tcp <<<'$(inspect '{{json .Config.ExposedPorts}}')'"
check "VOLUME /data" "grep -q '\"/data\"' <<<'$(inspect '{{json .Config.Volumes}}')'"
check "HEALTHCHECK runs perfscope healthcheck" "grep -q healthcheck <<<'$(inspect '{{json .Config.Healthcheck}}')'"
check "listens on 0.0.0.0 by default" "grep -q 'PERFSCOPE_LISTEN=0.0.0.0:8080' <<<'$(inspect '{{json .Config.Env}}')'"
check "with tokens created in the volume" "grep -q 'PERFSCOPE_TOKEN_FILE=/data/tokens' <<<'$(inspect '{{json .Config.Env}}')'"
check "labelled with its licence" "[ '$(inspect '{{index .Config.Labels "org.opencontainers.image.licenses"}}')' = Apache-2.0 ]"
check "labelled with the project's version ($version)" "[ -n '$version' ] && [ '$(inspect '{{index .Config.Labels "org.opencontainers.image.version"}}')' = '$version' ]"
check "labelled with the revision it was built from" "[ '$(inspect '{{index .Config.Labels "org.opencontainers.image.revision"}}')' = '$revision' ]"
check "the Dockerfile pins its base image by digest" "grep -qE '^ARG DEBIAN_IMAGE=.*@sha256:[0-9a-f]{64}$' docker/Dockerfile"

# The database directory belongs to the image's user (uid 10001), as a volume would.
mkdir -p "$work/data"
chown 10001:10001 "$work/data"
container=$(buildah from "$image")
# Buildah backs a declared VOLUME with its own storage, which would hide the bind mount
# (Docker and Podman bind over it): drop the declaration in this working container only.
buildah config --volume /data- "$container"
# The image's own ENTRYPOINT and CMD, on a test port given the way a user would (environment).
buildah config --env "PERFSCOPE_LISTEN=127.0.0.1:$port" "$container"
buildah run --isolation chroot -v "$work/data:/data" "$container" -- \
  /usr/local/bin/perfscope serve >"$work/server.log" 2>&1 &
url="http://127.0.0.1:$port"
for _ in $(seq 1 150); do curl -fsS "$url/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
server=$(pgrep -f "^/usr/local/bin/perfscope serve$" || true)
check "the server starts from the image" "[ -n '$server' ]"
if [[ -z "$server" ]]; then cat "$work/server.log"; exit 1; fi

check "the server process is not root" "[ \$(ps -o uid= -p $server) -ne 0 ]"
check "the tokens were created in the volume, private to the server's user" \
  "[ \"\$(stat -c '%a %u' '$work/data/tokens')\" = '600 10001' ]"
read_token=$(sed -n 's/^read //p' "$work/data/tokens")
write_token=$(sed -n 's/^write //p' "$work/data/tokens")
check "/healthz answers without a token" "curl -fsS '$url/healthz' | grep -q '\"ok\"'"
check "the API refuses a request without a token" "[ \$(curl -s -o /dev/null -w '%{http_code}' '$url/metrics') = 401 ]"
check "the HEALTHCHECK command passes" "buildah run --isolation chroot '$container' -- /usr/local/bin/perfscope healthcheck"
check "and fails when nothing answers" \
  "! buildah run --isolation chroot '$container' -- /usr/local/bin/perfscope healthcheck --server http://127.0.0.1:1 2>/dev/null"
check "the dashboard is served" "curl -fsS '$url/' | grep -qi '<title>perfscope'"
check "the licence and notices are installed" \
  "buildah run --isolation chroot '$container' -- grep -q 'cmake: CLI11' /usr/share/doc/perfscope/NOTICE"
check "perfscope run finds the tracing library the image ships" \
  "buildah run --isolation chroot '$container' -- /usr/local/bin/perfscope run --server '$url' --token '$write_token' --name in-image -- true"
check "retention is on: 15 days raw, 400 days of tiers" \
  "curl -fsS -H 'Authorization: Bearer $read_token' '$url/api/v1/info' | grep -q '\"raw_max_age_s\":1296000,\"rollup_max_age_s\":34560000,'"
check "/metrics is served with the read token" \
  "curl -fsS -H 'Authorization: Bearer $read_token' '$url/metrics' | grep -q '^perfscope_build_info'"
# Recent timestamps: the image keeps raw rows for 15 days, older ones would be rolled up.
events='{"events":['
t0=$(( $(date +%s) * 1000000000 - 60000000000 ))
for i in $(seq 1 50); do
  events+="{\"type\":\"kernel\",\"name\":\"in_container\",\"start_ns\":$((t0 + i * 1000000)),\"end_ns\":$((t0 + 500000 + i * 1000000))},"
done
events="${events%,}]}"
check "events are accepted with the write token" \
  "curl -fsS -H 'Authorization: Bearer $write_token' -H 'Content-Type: application/json' -d '$events' '$url/api/v1/events' | grep -q '\"accepted\":50'"
check "events are queryable" \
  "curl -fsS -H 'Authorization: Bearer $read_token' '$url/api/v1/kernels?window=all' | grep -q '\"count\":50,.*\"name\":\"in_container\"'"

stop_start=$(date +%s%N)
kill -TERM "$server"
for _ in $(seq 1 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
stop_ms=$((($(date +%s%N) - stop_start) / 1000000))
check "SIGTERM stops the server within 10 s (took ${stop_ms} ms)" "! kill -0 $server 2>/dev/null && [ $stop_ms -lt 10000 ]"
server=""
wait || true
check "the database is in the /data volume" "[ -s '$work/data/perfscope.db' ]"
check "the database it left behind passes the integrity check" \
  "[ \"\$(sqlite3 '$work/data/perfscope.db' 'PRAGMA integrity_check')\" = ok ]"
check "and holds the events" \
  "[ \"\$(sqlite3 '$work/data/perfscope.db' 'SELECT sum(count) FROM kernel_chunks')\" = 50 ]"
echo "container test finished in $(($(date +%s) - started)) s"
exit $fail
