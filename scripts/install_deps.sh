#!/usr/bin/env bash
# Installs what perfscope needs to build (and, with --tests, to test) on Debian 12, skipping
# everything already present: system packages through apt-get (sudo when not root) and the
# dashboard's npm packages from web/package-lock.json. Safe to run again and again.
set -euo pipefail
cd "$(dirname "$0")/.."

# --tests: also what the tests need; --container: Podman, Buildah and debootstrap for the
# container image test (tests/container/test_image.sh).
with_tests=0
with_container=0
for arg in "$@"; do
  case "$arg" in
    --tests) with_tests=1 ;;
    --container) with_container=1 ;;
    *) echo "install_deps.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

packages=(cmake ninja-build ccache g++ pkg-config
          libboost1.81-dev nlohmann-json3-dev libsqlite3-dev zlib1g-dev libssl-dev libcli11-dev libnghttp2-dev
          libgtest-dev libbenchmark-dev)
if (( with_tests )); then
  # clang and its runtime: the libFuzzer targets (tests/fuzz)
  packages+=(chromium sqlite3 curl prometheus clang libclang-rt-14-dev openssl)
  # kubectl (its kustomize renders docker/kubernetes for the manifests test): Debian's, unless
  # one is installed already (another package's kubectl owns the same file)
  command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
  # a real gRPC server standing in for the kubelet's PodResources API (tests/kubernetes), and the
  # Helm chart's renderer: Go's text/template with Sprig, Helm's engine (scripts/render_chart.sh)
  packages+=(python3-grpcio golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v2-dev)
  # the Python client's tests, its install with pip into a venv (offline) and mypy --strict
  packages+=(python3 python3-venv python3-setuptools python3-wheel mypy)
fi
if (( with_container )); then
  packages+=(podman buildah debootstrap sqlite3 curl procps docker-compose)
fi
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if (( ${#missing[@]} )); then
  echo "perfscope: installing system packages: ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Node 20.10 or newer runs the tests (playwright-core; WebSocket behind --experimental-websocket).
# Debian 12 ships Node 18: then Node's own build comes from the npm registry, where its binaries
# are published as node-linux-<arch>, into .tools/node (scripts/test.sh puts it first on PATH).
node_ok() { "$1" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 10) ? 0 : 1)' 2>/dev/null; }
node_version=20.20.2
if (( with_tests )) && ! node_ok node && ! node_ok .tools/node/bin/node; then
  case "$(uname -m)" in
    x86_64) node_arch=x64 ;;
    aarch64) node_arch=arm64 ;;
    *) echo "install_deps.sh: the tests need Node 20.10 or newer, and none is published for $(uname -m)" >&2; exit 1 ;;
  esac
  echo "perfscope: Node $(node --version) is older than the tests need (20.10); installing Node $node_version into .tools/node"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "node-linux-$node_arch@$node_version" >/dev/null)
  mkdir -p .tools/node
  tar -xzf "$tmp/node-linux-$node_arch-$node_version.tgz" -C .tools/node --strip-components=1 package/bin/node package/LICENSE
  rm -rf "$tmp"
  node_ok .tools/node/bin/node || { echo "install_deps.sh: .tools/node/bin/node does not run" >&2; exit 1; }
fi

# npm packages: reinstall only when the lock file changed since the last install.
lock_hash=$(sha256sum web/package-lock.json | cut -d' ' -f1)
stamp=web/node_modules/.perfscope-lock-sha256
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$lock_hash" ]]; then
  echo "perfscope: installing npm packages (web/package-lock.json)"
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
  echo "$lock_hash" > "$stamp"
fi
