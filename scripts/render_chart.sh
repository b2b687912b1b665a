#!/usr/bin/env bash
# Renders docker/helm/perfscope as `helm template` does, with tests/kubernetes/chart_render (Go's
# text/template and Sprig, Helm's engine and functions, from Debian's packages; install_deps.sh
# --tests installs them), for machines where Helm cannot be installed. Arguments go to the
# renderer: [-f values.yaml]... [--name NAME] [--namespace NS] [CHART_DIR].
#   scripts/render_chart.sh                  the chart with its defaults, to stdout
#   scripts/render_chart.sh --write-base     docker/kubernetes/base/perfscope.yaml from the defaults
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${PERFSCOPE_CHART_RENDER_DIR:-$root/.tools/chart_render}"
# Debian installs Go libraries as GOPATH sources; the two /v3 import paths of Sprig and semver
# are links to them in a GOPATH of our own.
gopath="$out/gopath"
src="$gopath/src/chart_render"
mkdir -p "$src" "$gopath/src/github.com/Masterminds/sprig" "$gopath/src/github.com/Masterminds/semver"
ln -sfn /usr/share/gocode/src/github.com/Masterminds/sprig "$gopath/src/github.com/Masterminds/sprig/v3"
ln -sfn /usr/share/gocode/src/github.com/Masterminds/semver "$gopath/src/github.com/Masterminds/semver/v3"
if [[ ! -x "$out/chart_render" || "$root/tests/kubernetes/chart_render/main.go" -nt "$out/chart_render" ]]; then
  cp "$root/tests/kubernetes/chart_render/main.go" "$src/"
  (cd "$src" && GO111MODULE=off GOPATH="$gopath:/usr/share/gocode" GOCACHE="$out/cache" GOFLAGS= \
     go build -o "$out/chart_render" .)
fi
if [[ "${1:-}" == "--write-base" ]]; then
  {
    echo "# Generated from docker/helm/perfscope with its default values by scripts/render_chart.sh"
    echo "# --write-base: edit the chart, then run that (tests/kubernetes checks the two agree)."
    "$out/chart_render" --name perfscope --namespace perfscope "$root/docker/helm/perfscope"
  } > "$root/docker/kubernetes/base/perfscope.yaml"
  exit 0
fi
args=("$@")
# The chart's folder last, unless the arguments end with one (a folder holding Chart.yaml).
if (( ${#args[@]} == 0 )) || [[ ! -f "${args[-1]}/Chart.yaml" ]]; then args+=("$root/docker/helm/perfscope"); fi
exec "$out/chart_render" "${args[@]}"
