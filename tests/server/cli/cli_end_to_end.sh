#!/usr/bin/env bash
# The command line of the real binary: help, exit codes, one clear message, clean signals.
set -u
bin=$1
fail=0
check() { # description, condition
  if eval "$2"; then echo "ok: $1"; else echo "FAILED: $1"; fail=1; fi
}

out=$("$bin" --help); rc=$?
check "--help exits 0" "[ $rc -eq 0 ]"
check "--help lists the subcommands" "grep -q serve <<<\"\$out\" && grep -q version <<<\"\$out\""

out=$("$bin" serve --help); rc=$?
check "serve --help exits 0" "[ $rc -eq 0 ]"
for opt in --config --listen --data-dir --sampling-interval-ms --history-buffer-size --enable-host-collector \
           --io-threads --worker-threads --max-body-bytes --request-timeout-ms --ws-max-message-bytes \
           --ws-send-queue --db-commit-interval-ms --shutdown-timeout-ms; do
  check "serve --help explains $opt" "grep -q -- '$opt' <<<\"\$out\""
done
check "serve --help names the environment variables" "grep -q PERFSCOPE_LISTEN <<<\"\$out\""

err=$("$bin" serve --sampling-interval-ms 0 2>&1 >/dev/null); rc=$?
check "invalid value exits 2" "[ $rc -eq 2 ]"
check "invalid value names the option" "grep -q -- --sampling-interval-ms <<<\"\$err\""
check "invalid value gives one error line" "[ \$(grep -c 'error' <<<\"\$err\") -eq 1 ]"

err=$(PERFSCOPE_LISTEN=nonsense "$bin" serve 2>&1 >/dev/null); rc=$?
check "invalid environment value exits 2" "[ $rc -eq 2 ]"

out=$("$bin" version); rc=$?
check "version exits 0" "[ $rc -eq 0 ] && grep -q '^perfscope ' <<<\"\$out\""

# A real start and a Ctrl-C: exits 0 after a clean shutdown.
dir=$(mktemp -d)
"$bin" serve --listen 127.0.0.1:0 --data-dir "$dir/data" >"$dir/out" 2>"$dir/err" &
pid=$!
for _ in $(seq 1 100); do grep -q listening "$dir/out" && break; sleep 0.1; done
check "serve reports its address" "grep -q 'listening on http://127.0.0.1:' '$dir/out'"
sleep 0.5
kill -INT $pid
wait $pid; rc=$?
check "SIGINT stops serve with exit 0" "[ $rc -eq 0 ]"
check "the database file exists under the data directory" "[ -s '$dir/data/perfscope.db' ]"
rm -rf "$dir"

# A port already taken: exit 1 and a message that names it.
dir=$(mktemp -d)
"$bin" serve --listen 127.0.0.1:0 --data-dir "$dir/a" >"$dir/out" 2>/dev/null &
pid=$!
for _ in $(seq 1 100); do grep -q listening "$dir/out" && break; sleep 0.1; done
port=$(sed -n 's|.*127.0.0.1:\([0-9]*\)/.*|\1|p' "$dir/out")
err=$("$bin" serve --listen "127.0.0.1:$port" --data-dir "$dir/b" 2>&1 >/dev/null); rc=$?
check "a port in use exits 1" "[ $rc -eq 1 ]"
check "a port in use is named in the error" "grep -q \"$port\" <<<\"\$err\""
kill -TERM $pid; wait $pid
rm -rf "$dir"

# push: NDJSON from stdin into a running server; a bad line is refused with its position.
dir=$(mktemp -d)
"$bin" serve --listen 127.0.0.1:0 --data-dir "$dir/data" >"$dir/out" 2>/dev/null &
pid=$!
for _ in $(seq 1 100); do grep -q listening "$dir/out" && break; sleep 0.1; done
url=$(sed -n 's|^perfscope listening on \(http://[^/]*\)/.*|\1|p' "$dir/out")
out=$(printf '%s\n' '{"type":"kernel","name":"pushed","duration_ms":1}' '' '{"type":"kernel","name":"pushed","duration_ms":2}' \
      | "$bin" push --server "$url"); rc=$?
check "push exits 0 and reports what was accepted" "[ $rc -eq 0 ] && grep -q 'accepted 2 events' <<<\"\$out\""
err=$(printf '%s\n' '{"type":"kernel","name":"ok","duration_ms":1}' '{"type":"kernel","name":"bad","start_ns":9,"end_ns":1}' \
      | "$bin" push --server "$url" 2>&1 >/dev/null); rc=$?
check "push of a bad event exits 1" "[ $rc -eq 1 ]"
check "push names the field at fault" "grep -q end_ns <<<\"\$err\""
count=$(curl -s "$url/api/v1/kernels" | grep -o '"count":[0-9]*' | head -1)
check "only the good batch was stored" "[ '$count' = '\"count\":2' ]"
err=$("$bin" push --server http://127.0.0.1:1 </dev/null 2>&1 >/dev/null; echo "rc=$?")
check "push with an empty stdin sends nothing and succeeds" "grep -q 'rc=0' <<<\"\$err\""
# A PyTorch profiler trace recorded on a GPU (tests/fixtures/pytorch), gzipped as
# export_chrome_trace("….json.gz") writes it: kernels and copies with launch calls, operators.
trace=$(cd "$(dirname "$0")/../../fixtures" && pwd)/pytorch/recorded_trace.json
gpu_work=$(grep -cE '"cat": "(kernel|gpu_memcpy|gpu_memset)"' "$trace")
gzip -c "$trace" >"$dir/torch.json.gz"
out=$("$bin" import "$dir/torch.json.gz" --server "$url" --name torch-run --model mlp); rc=$?
check "import of a gzipped PyTorch profiler trace exits 0 and says what it read" \
  "[ $rc -eq 0 ] && grep -q 'a PyTorch profiler trace as run torch-run' <<<\"\$out\""
check "every kernel, copy and memset of the trace is the run's" \
  "curl -s '$url/api/v1/runs/torch-run' | grep -q '\"kernels\":{\"count\":$gpu_work,'"
ops=$(curl -s "$url/api/v1/operators?run=torch-run")
check "its top-level operators are the model's, aten::linear on CUDA" \
  "grep -q '\"op_type\":\"aten::linear\"' <<<\"\$ops\" && grep -q '\"CUDA\"' <<<\"\$ops\""
head -c 20000 "$trace" >"$dir/cut.json"
err=$("$bin" import "$dir/cut.json" --server "$url" --name cut-run 2>&1 >/dev/null); rc=$?
check "a trace cut short exits 2 saying where, and imports nothing" \
  "[ $rc -eq 2 ] && grep -q 'not valid JSON at byte' <<<\"\$err\" && ! curl -s '$url/api/v1/runs' | grep -q cut-run"
kill -TERM $pid; wait $pid
rm -rf "$dir"

# report, top and the profile written at shutdown.
dir=$(mktemp -d)
"$bin" serve --listen 127.0.0.1:0 --data-dir "$dir/data" --profile-output "$dir/profile.json" >"$dir/out" 2>/dev/null &
pid=$!
for _ in $(seq 1 100); do grep -q listening "$dir/out" && break; sleep 0.1; done
url=$(sed -n 's|^perfscope listening on \(http://[^/]*\)/.*|\1|p' "$dir/out")
printf '%s\n' '{"type":"kernel","name":"reported","duration_ms":3}' | "$bin" push --server "$url" >/dev/null
out=$("$bin" top --server "$url" -n 2 --interval 0.2); rc=$?
check "top -n 2 exits 0 with two views" "[ $rc -eq 0 ] && [ \$(grep -c 'Performance Summary' <<<\"\$out\") -eq 2 ]"
check "top piped prints no escape codes" "! grep -q $'\\x1b' <<<\"\$out\""
out=$("$bin" report --server "$url" --format md); rc=$?
check "report --format md from a server" "[ $rc -eq 0 ] && grep -q '| \`reported\` | 1 |' <<<\"\$out\""
"$bin" report --server "$url" --format html -o "$dir/r.html" 2>/dev/null
check "report -o writes the file" "grep -q '<!doctype html>' '$dir/r.html'"
err=$("$bin" report --server "$url" --format yaml 2>&1 >/dev/null); rc=$?
check "report with a bad format exits 2 naming the option" "[ $rc -eq 2 ] && grep -q -- --format <<<\"\$err\""
err=$("$bin" report --server http://127.0.0.1:1 2>&1 >/dev/null); rc=$?
check "report with no server exits 1" "[ $rc -eq 1 ] && grep -q 'cannot connect' <<<\"\$err\""
# An ONNX Runtime profile (tests/fixtures/onnxruntime) imported as a run of its model.
fixtures=$(cd "$(dirname "$0")/../../fixtures" && pwd)
cp "$fixtures/onnxruntime/handwritten_profile.json" "$dir/ort.json"
out=$("$bin" import "$dir/ort.json" --server "$url" --name ort-run --model resnet); rc=$?
check "import of an ONNX Runtime profile exits 0 and says what it read" \
  "[ $rc -eq 0 ] && grep -q '4 operator executions, 2 model runs' <<<\"\$out\" && grep -q 'accepted 7 events' <<<\"\$out\""
ops=$(curl -s "$url/api/v1/operators?run=ort-run")
check "the imported operators are the run's, with the CPU fallback" \
  "grep -q '\"op_type\":\"Conv\"' <<<\"\$ops\" && grep -q '\"cpu_fallback_executions\":1' <<<\"\$ops\""
check "the import is a run" "curl -s '$url/api/v1/runs' | grep -q '\"ort-run\"'"
sed 's/"dur" :120/"dur" :"fast"/' "$fixtures/onnxruntime/handwritten_profile.json" >"$dir/bad.json"
err=$("$bin" import "$dir/bad.json" --server "$url" --name bad-run 2>&1 >/dev/null); rc=$?
check "a malformed profile exits 2 naming the event, and imports nothing" \
  "[ $rc -eq 2 ] && grep -q 'event 3' <<<\"\$err\" && ! curl -s '$url/api/v1/runs' | grep -q bad-run"
kill -TERM $pid; wait $pid
check "serve --profile-output writes the JSON report on shutdown" \
  "[ \"\$(sqlite3 :memory: \"SELECT json_extract(readfile('$dir/profile.json'), '\$.summary.kernel_time.executions')\")\" = 1 ]"
rm -rf "$dir"

exit $fail
