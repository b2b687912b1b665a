# Sourced by the GPU scripts: starts perfscope ($bin) on a free loopback port with a fresh data
# directory, 100 ms sampling, the options of the array $server_args if set, and its log in
# $report/server.log; sets $url and $pid and stops the server (removing the directory) when the
# script exits. $bin and $report, where the script has not set them: PERFSCOPE_BIN (else
# build/release/perfscope) and the script's first argument (else gpu-report).
bin=${bin:-${PERFSCOPE_BIN:-build/release/perfscope}}
report=${report:-${1:-gpu-report}}
mkdir -p "$report"
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
"$bin" serve --listen 127.0.0.1:0 --data-dir "$dir" --sampling-interval-ms 100 ${server_args[@]+"${server_args[@]}"} >"$dir/out" 2>"$report/server.log" &
pid=$!
for _ in $(seq 1 100); do grep -q listening "$dir/out" && break; sleep 0.1; done
url=$(sed -n 's|^perfscope listening on \(https\?://[^/]*\)/.*|\1|p' "$dir/out")
[[ -n $url ]] || { echo "perfscope did not start" >&2; cat "$report/server.log" >&2; exit 1; }
