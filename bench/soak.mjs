// Soak: runs a real perfscope server for a long stretch under everything a busy host gives it
// at once, and checks that it stays flat: the demo workload (LLM-style requests, kernels,
// allocations), a steady ingest load from a second producer (kernels, memory, inference,
// custom samples, a new run every 10 minutes), 100 WebSocket stream clients of which 20 never
// read, analysis/report/percentile/history/metrics requests every 15 s, retention with short
// ages, and a scrape target: a vLLM-like /metrics of three models (about 520 series of
// histograms, counters and gauges, every 2 s) whose requests keep coming and which restarts
// every 10 minutes, its percentiles asked every 15 s. Every minute it records the server's
// RSS and its anonymous part (the heap; the rest is the mapped database, reported but not
// judged), open descriptors, threads, database size (file + WAL + shm) and the p99 of
// /api/v1/info (timed every 200 ms). The heap is judged less its bounded caches (SQLite's
// page caches, the series' in-memory history), which are checked against their bounds, and
// as the minute's lowest of samples every 5 s: a sample taken while a query holds its rows
// shows the query, not what stays; at the end it fits a
// line to each after the warm-up and passes when each grew by less than 5 % of its mean over
// the post-warm-up span (descriptors and threads: by at most 2) and no request failed.
//
// Usage: [PERFSCOPE_SOAK_ARGS='--history-buffer-size 300'] node --experimental-websocket bench/soak.mjs
//        PERFSCOPE_BIN MINUTES [WARMUP_MINUTES] [OUT.jsonl]
// With PERFSCOPE_FAKE_NVML set (the tests' stand-in NVML library) the server also samples one
// scripted GPU. Not a CI test: it takes an hour; figures go to bench/RESULTS.md.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync, appendFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import http from 'node:http';

const [bin, minutesArg, warmupArg, outFile] = process.argv.slice(2);
if (!bin || !minutesArg) {
  console.error('usage: node --experimental-websocket bench/soak.mjs PERFSCOPE_BIN MINUTES [WARMUP_MINUTES] [OUT.jsonl]');
  process.exit(2);
}
const minutes = Number(minutesArg);
const warmup = Number(warmupArg ?? Math.min(10, Math.floor(minutes / 4)));
const dataDir = mkdtempSync(path.join(tmpdir(), 'perfscope-soak-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- a vLLM-like scrape target: three models, seven histograms each ---
const SCRAPE_MODELS = ['soak-vllm-a', 'soak-vllm-b', 'soak-vllm-c'];
const HISTOGRAMS = ['e2e_request_latency_seconds', 'time_to_first_token_seconds', 'inter_token_latency_seconds',
                    'request_queue_time_seconds', 'request_inference_time_seconds', 'request_prefill_time_seconds',
                    'request_decode_time_seconds'];
const BOUNDS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640];
let vllmStarted = Date.now();
function vllmExposition() {
  // Counts grow with the time since the last restart (every 10 minutes): 50 requests/s per model.
  if (Date.now() - vllmStarted > 600_000) vllmStarted = Date.now();
  const n = Math.floor((Date.now() - vllmStarted) / 20);
  const lines = [];
  for (const h of HISTOGRAMS) {
    lines.push(`# TYPE vllm:${h} histogram`);
    for (const [mi, model] of SCRAPE_MODELS.entries()) {
      const l = `model_name="${model}"`;
      // An exponential spread of latencies around 0.1 s × (model + 1).
      for (const b of BOUNDS) lines.push(`vllm:${h}_bucket{le="${b}",${l}} ${Math.floor(n * (1 - Math.exp(-b / (0.1 * (mi + 1)))))}`);
      lines.push(`vllm:${h}_bucket{le="+Inf",${l}} ${n}`, `vllm:${h}_count{${l}} ${n}`, `vllm:${h}_sum{${l}} ${n * 0.1 * (mi + 1)}`);
    }
  }
  for (const model of SCRAPE_MODELS) {
    const l = `model_name="${model}"`;
    lines.push(`vllm:request_success_total{finished_reason="stop",${l}} ${n}`, `vllm:generation_tokens_total{${l}} ${n * 128}`,
               `vllm:prompt_tokens_total{${l}} ${n * 512}`, `vllm:num_requests_running{${l}} ${n % 7}`,
               `vllm:num_requests_waiting{${l}} ${n % 3}`, `vllm:kv_cache_usage_perc{${l}} ${(n % 100) / 100}`);
  }
  return lines.join('\n') + '\n';
}
const scrapeTarget = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
  res.end(vllmExposition());
});
await new Promise((r) => scrapeTarget.listen(0, '127.0.0.1', r));

// --- the server ---
const args = ['serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--sampling-interval-ms', '100',
              '--retention-raw-max-age', '5m', '--retention-rollup-max-age', '10m', '--retention-interval-ms', '10000',
              '--max-connections', '512', '--max-connections-per-client', '0',  // every client is this process
              '--scrape', `http://127.0.0.1:${scrapeTarget.address().port}/metrics,job=vllm,interval=2s`,
              // More server options, space-separated (e.g. a smaller --history-buffer-size, to see
              // the in-memory rings full within the warm-up).
              ...(process.env.PERFSCOPE_SOAK_ARGS ? process.env.PERFSCOPE_SOAK_ARGS.split(' ') : [])];
const env = { ...process.env };
if (process.env.PERFSCOPE_FAKE_NVML) {
  const script = path.join(dataDir, 'nvml.txt');
  writeFileSync(script, ['count 1', '0.name NVIDIA H100 80GB HBM3', '0.uuid GPU-soak', '0.util_gpu 70',
                         '0.mem_total 85520809984', '0.mem_used 40000000000', '0.power_mw 450000', '0.limit_mw 700000',
                         '0.temp 60', '0.mem_temp 66', '0.max_clock_mem 2619', '0.bus_width 5120', '0.gpm 1',
                         '0.gpm.2 60', '0.gpm.3 40'].join('\n') + '\n');
  env.PERFSCOPE_FAKE_NVML_SCRIPT = script;
  args.push('--nvml-library', process.env.PERFSCOPE_FAKE_NVML);
}
const server = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
let serverLog = '';
server.stderr.on('data', (c) => { serverLog = (serverLog + c).slice(-20000); });
const url = await new Promise((resolve, reject) => {
  let out = '';
  const timer = setTimeout(() => reject(new Error('no address in 20 s')), 20000);
  server.stdout.on('data', (c) => {
    out += c;
    const m = out.match(/listening on (http:\/\/[^\s]+)/);
    if (m) { clearTimeout(timer); resolve(m[1].replace(/\/$/, '')); }
  });
});
const { hostname, port } = new URL(url);
const pid = server.pid;

const failures = [];
function fail(what) {
  failures.push(`${new Date().toISOString()} ${what}`);
  if (failures.length <= 20) console.error('FAIL', what);
}
// The answer's length, or with `json` its parsed body (null when it failed).
async function get(p, { json = false } = {}) {
  try {
    const r = await fetch(url + p);
    const body = await r.arrayBuffer();
    if (r.status !== 200) fail(`GET ${p} -> ${r.status} ${Buffer.from(body).toString().slice(0, 200)}`);
    return json ? JSON.parse(Buffer.from(body).toString()) : body.byteLength;
  } catch (e) {
    fail(`GET ${p}: ${e.message}`);
    return json ? null : 0;
  }
}

// --- the demo workload, a separate process ---
const demo = spawn(bin, ['demo', '--server', url, '--rate', '20', '--llm', 'true', '--duration', '0', '--run', 'soak-demo'],
                   { stdio: ['ignore', 'ignore', 'pipe'] });
let demoLog = '';
demo.stderr.on('data', (c) => { demoLog = (demoLog + c).slice(-5000); });
demo.on('exit', (code, signal) => { if (!stopping) fail(`demo exited: ${code ?? signal}: ${demoLog.slice(-500)}`); });

// --- steady ingest: 2,000 kernels/s, memory pairs, inference, custom samples, 10 batches/s ---
let stopping = false;
let ingested = 0;
let seq = 0;
const kernelNames = Array.from({ length: 40 }, (_, i) => `soak_kernel_${i}`);
async function ingestLoop() {
  while (!stopping) {
    const t0 = Date.now();
    const now = BigInt(t0) * 1000000n;
    const run = `soak-load-${Math.floor((t0 / 60000) / 10)}`;  // a new run every 10 minutes
    const events = [];
    for (let i = 0; i < 200; i++) {
      const start = now - BigInt(100_000_000 - i * 400_000);
      events.push({ type: 'kernel', name: kernelNames[(seq + i) % kernelNames.length], stream: String(i % 4),
                    start_ns: Number(start), end_ns: Number(start + BigInt(20_000 + (i % 7) * 3_000)), tags: { run } });
    }
    for (let i = 0; i < 5; i++) {
      const address = `0x${(seq * 8 + i).toString(16)}`;
      events.push({ type: 'memory', op: 'alloc', address, size_bytes: 1 << 20, tag: 'kv_cache', tags: { run } });
      events.push({ type: 'memory', op: 'free', address, tags: { run } });
    }
    for (let i = 0; i < 3; i++) {
      events.push({ type: 'inference', model: 'soak-llm', latency_ms: 40 + (seq % 13), ttft_ms: 8, input_tokens: 256,
                    output_tokens: 64, tags: { run } });
    }
    events.push({ type: 'sample', metric: 'soak_queue_depth', labels: { pool: String(seq % 4) }, value: seq % 17 });
    seq++;
    try {
      const r = await fetch(url + '/api/v1/events', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ events }) });
      const text = await r.text();
      if (r.status !== 200) fail(`ingest -> ${r.status} ${text.slice(0, 200)}`);
      else ingested += events.length;
    } catch (e) {
      fail(`ingest: ${e.message}`);
    }
    await sleep(Math.max(0, 100 - (Date.now() - t0)));
  }
}

// --- 100 stream clients: 80 read everything, 20 complete the handshake and never read ---
const readers = [];
let streamMessages = 0;
let readerCloses = 0;
function reader() {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace('http', 'ws') + '/api/v1/stream');
    ws.onmessage = () => { streamMessages++; resolve(ws); };
    ws.onerror = () => reject(new Error('stream client failed'));
    ws.onclose = () => { if (!stopping) readerCloses++; };
  });
}
function nonReader() {
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(port), hostname, () => {
      const key = crypto.randomBytes(16).toString('base64');
      s.write(`GET /api/v1/stream HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
              `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    });
    s.once('data', (d) => {
      if (!String(d).startsWith('HTTP/1.1 101')) return reject(new Error('upgrade refused: ' + String(d).slice(0, 100)));
      s.pause();  // never read again: the server's send queue for it fills and it gets dropped
      resolve(s);
    });
    s.on('error', () => {});
  });
}
for (let i = 0; i < 80; i++) readers.push(await reader());
const nonReaders = [];
for (let i = 0; i < 20; i++) nonReaders.push(await nonReader());

// --- periodic analysis, report, percentile, history and metrics requests ---
async function queryLoop() {
  while (!stopping) {
    await get('/api/v1/analysis?window=5m');
    await get('/api/v1/report?format=html&window=5m');
    await get('/api/v1/report?format=md&window=15m');
    await get('/api/v1/percentiles?model=soak-llm&window=5m&sla_ms=50');
    await get('/api/v1/percentiles?kernel=soak_kernel_3&window=5m');
    await get('/api/v1/percentiles?model=soak-vllm-b&window=5m&sla_ms=250');
    await get('/api/v1/inference?window=1m');
    await get('/api/v1/kernels?window=5m');
    await get('/api/v1/memory?window=5m');
    await get('/api/v1/runs');
    await get("/api/v1/series/query?name=host_cpu_utilization_ratio&from=now-1h&max_points=500");
    await get('/metrics');
    await sleep(15000);
  }
}

// --- /api/v1/info latencies and the minute's figures ---
const infoMs = [];
let memory = {};  // runtime.memory of the newest /api/v1/info: the heap's count, the writer's page cache
async function infoLoop() {
  while (!stopping) {
    const t0 = performance.now();
    const body = await get('/api/v1/info', { json: true });
    if (body) memory = body.runtime?.memory ?? {};
    infoMs.push(performance.now() - t0);
    await sleep(200);
  }
}
function dbBytes() {
  let n = 0;
  for (const f of readdirSync(dataDir)) if (f.startsWith('perfscope.db')) n += statSync(path.join(dataDir, f)).size;
  return n;
}
// Every 5 s: the heap (anonymous RSS) less its bounded caches, kept as the minute's lowest.
// The writer's page cache grows until it holds the pages in use or reaches its bound
// (cache_size), the readers' likewise per connection, and each series' in-memory history
// until it holds --history-buffer-size samples (hours for a series scraped every 2 s): the
// heap less them is what would show a leak, and they are checked against their bounds.
const MB = 1048576;
let low = {};
function lowest(key, value) {
  if (value != null && !(low[key] <= value)) low[key] = value;
}
async function lowLoop() {
  while (!stopping) {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const anon = Number(status.match(/RssAnon:\s+(\d+)/)[1]) / 1024;
    const sqlite = ((memory.sqlite_writer_page_cache_bytes ?? 0) + (memory.sqlite_reader_memory_bytes ?? 0) +
                    (memory.series_history_bytes ?? 0)) / MB;
    lowest('heap_less_cache_mb', anon - sqlite);
    if (memory.heap_in_use_bytes != null) lowest('heap_in_use_less_cache_mb', memory.heap_in_use_bytes / MB - sqlite);
    await sleep(5000);
  }
}
function sample(minute) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const lat = infoMs.splice(0).sort((a, b) => a - b);
  const row = {
    minute,
    rss_mb: Number(status.match(/VmRSS:\s+(\d+)/)[1]) / 1024,
    // RSS less the file-backed pages (the database mapped with mmap, the binary): the heap. The
    // kernel drops and refaults mapped pages as it likes, so only this part can show a leak.
    rss_anon_mb: Number(status.match(/RssAnon:\s+(\d+)/)[1]) / 1024,
    heap_less_cache_mb: low.heap_less_cache_mb ?? null,
    heap_in_use_less_cache_mb: low.heap_in_use_less_cache_mb ?? null,
    writer_cache_mb: (memory.sqlite_writer_page_cache_bytes ?? 0) / MB,
    writer_cache_limit_mb: (memory.sqlite_writer_page_cache_limit_bytes ?? 0) / MB,
    readers: memory.sqlite_reader_connections ?? null,
    reader_mb: (memory.sqlite_reader_memory_bytes ?? 0) / MB,
    reader_cache_limit_mb: (memory.sqlite_reader_page_cache_limit_bytes ?? 0) / MB,
    history_mb: (memory.series_history_bytes ?? 0) / MB,
    history_limit_mb: (memory.series_history_limit_bytes ?? 0) / MB,
    // The heap's own count (glibc's, all arenas), recorded beside.
    heap_in_use_mb: memory.heap_in_use_bytes == null ? null : memory.heap_in_use_bytes / MB,
    heap_free_mb: memory.heap_free_bytes == null ? null : memory.heap_free_bytes / MB,
    fds: readdirSync(`/proc/${pid}/fd`).length,
    threads: Number(status.match(/Threads:\s+(\d+)/)[1]),
    db_mb: dbBytes() / MB,
    info_p99_ms: lat.length ? lat[Math.min(lat.length - 1, Math.floor(lat.length * 0.99))] : null,
    info_requests: lat.length,
    events_ingested: ingested,
    stream_messages: streamMessages,
    failures: failures.length,
  };
  low = {};
  return row;
}

const loops = [ingestLoop(), queryLoop(), infoLoop(), lowLoop()];
const rows = [];
if (outFile) writeFileSync(outFile, '');
console.log(`soak: ${url} (pid ${pid}), ${minutes} min, warm-up ${warmup} min, data in ${dataDir}`);
console.log('| min | RSS MB | anon MB | writer cache MB | readers | readers MB | history MB | heap less caches MB (lowest) | fds | threads | DB MB | info p99 ms | events | failures |');
console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (let m = 1; m <= minutes; m++) {
  await sleep(60000);
  if (server.exitCode !== null || server.signalCode !== null) { fail('server exited'); break; }
  const row = sample(m);
  rows.push(row);
  if (outFile) appendFileSync(outFile, JSON.stringify(row) + '\n');
  console.log(`| ${m} | ${row.rss_mb.toFixed(1)} | ${row.rss_anon_mb.toFixed(1)} | ${row.writer_cache_mb.toFixed(1)} | ` +
              `${row.readers} | ${row.reader_mb.toFixed(1)} | ${row.history_mb.toFixed(1)} | ${row.heap_less_cache_mb?.toFixed(1)} | ${row.fds} | ${row.threads} | ${row.db_mb.toFixed(2)} | ` +
              `${row.info_p99_ms?.toFixed(1)} | ${row.events_ingested} | ${row.failures} |`);
}

stopping = true;
await Promise.all(loops);
for (const ws of readers) ws.close();
for (const s of nonReaders) s.destroy();
demo.kill('SIGTERM');
server.kill('SIGTERM');
scrapeTarget.close();
const exit = await new Promise((r) => server.on('exit', (code, signal) => r(code ?? signal)));
if (exit !== 0) fail(`server stopped with ${exit}: ${serverLog.slice(-1000)}`);

// Least-squares slope per minute over the rows after the warm-up.
function slope(points) {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p[0], 0) / n, my = points.reduce((s, p) => s + p[1], 0) / n;
  let sxy = 0, sxx = 0;
  for (const [x, y] of points) { sxy += (x - mx) * (y - my); sxx += (x - mx) ** 2; }
  return { slope: sxx ? sxy / sxx : 0, mean: my };
}
const after = rows.filter((r) => r.minute > warmup);
let pass = failures.length === 0 && after.length >= 2;
console.log(`\nafter the ${warmup}-minute warm-up (${after.length} minutes):`);
for (const [key, absolute] of [['rss_mb', 0], ['rss_anon_mb', 0], ['heap_less_cache_mb', 0], ['heap_in_use_less_cache_mb', 0],
                                ['writer_cache_mb', 0], ['reader_mb', 0], ['history_mb', 0], ['fds', 2], ['threads', 2], ['db_mb', 0],
                                ['info_p99_ms', 0]]) {
  if (after.length < 2) break;
  const { slope: s, mean } = slope(after.map((r) => [r.minute, r[key] ?? 0]));
  const growth = s * (after.length - 1);
  // p99 latency is reported, not judged: it depends on what else the machine runs. So is the
  // whole RSS: its file-backed part is the database's mapped pages, which the kernel keeps or
  // drops as it likes; the heap (anon) is what would show a leak.
  // The heap is judged less SQLite's caches (as the minute's lowest, see lowLoop), which are
  // judged against their bounds; glibc's own count of it is reported beside.
  const bounded = (key === 'writer_cache_mb' && after.every((r) => r.writer_cache_mb <= r.writer_cache_limit_mb)) ||
                  (key === 'reader_mb' && after.every((r) => r.reader_mb <= r.reader_cache_limit_mb + r.readers)) ||
                  (key === 'history_mb' && after.every((r) => r.history_mb <= r.history_limit_mb));
  const flat = key === 'info_p99_ms' || key === 'rss_mb' || key === 'rss_anon_mb' || key === 'heap_in_use_less_cache_mb' || bounded ||
               (absolute ? Math.abs(growth) <= absolute : Math.abs(growth) < 0.05 * mean);
  if (!flat) pass = false;
  console.log(`  ${key}: mean ${mean.toFixed(2)}, slope ${s >= 0 ? '+' : ''}${s.toFixed(4)}/min ` +
              `(${growth >= 0 ? '+' : ''}${growth.toFixed(2)} over the span, ${(100 * growth / (mean || 1)).toFixed(2)} %) ${flat ? 'flat' : 'GROWING'}`);
}
console.log(`requests failed: ${failures.length}; events ingested by the load: ${ingested}; stream messages read: ${streamMessages}; ` +
            `reader streams closed by the server: ${readerCloses}`);
for (const f of failures.slice(0, 20)) console.log('  ' + f);
console.log(pass ? 'PASS' : 'FAIL');
rmSync(dataDir, { recursive: true, force: true });
process.exit(pass ? 0 : 1);
