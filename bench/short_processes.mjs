// Many short-lived GPU processes (issue 26's budget: 10,000 over an hour keep RSS and the store
// bounded by the series limit, and the lifetime records of all of them remain). The tests'
// stand-in NVML lists 10 processes at a time, each replaced by a fresh pid every ROTATE_MS, on
// a real server reading them every 100 ms (--gpu-process-interval-ms 100); the pids are not
// this machine's processes, so they are keyed by pid alone (not visible), each a new process.
// Every minute: the server's RSS, the database size, the distinct series and the stored
// records; at the end every process must be listed by /api/v1/processes.
// Usage: PERFSCOPE_FAKE_NVML=…/libfake_nvml.so node bench/short_processes.mjs PERFSCOPE_BIN [TOTAL=10000] [ROTATE_MS=60]
import { readFileSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startPerfscope } from '../tests/support/perfscope_server.mjs';

const [bin, totalArg, rotateArg] = process.argv.slice(2);
if (!bin || !process.env.PERFSCOPE_FAKE_NVML) {
  console.error('usage: PERFSCOPE_FAKE_NVML=…/libfake_nvml.so node bench/short_processes.mjs PERFSCOPE_BIN [TOTAL] [ROTATE_MS]');
  process.exit(2);
}
process.env.PERFSCOPE_BIN = path.resolve(bin);
const total = Number(totalArg ?? 10000);
const rotateMs = Number(rotateArg ?? 60);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const base = ['count 1', '0.name NVIDIA H100 80GB HBM3', '0.uuid GPU-short', '0.util_gpu 90', '0.mem_total 85520809984',
              '0.mem_used 9000000000', '0.power_mw 300000', '0.limit_mw 700000', '0.temp 60'];
let next = 3_000_000;  // pids no process of this machine has (pid_max is at most 4,194,304)
let live = Array.from({ length: 10 }, () => next++);
function script() {
  const now = Date.now() * 1000;
  return [...base, '0.procs ' + live.map((p) => `${p}:${1 << 28}`).join(','),
          '0.proc_util ' + live.map((p, i) => `${p}:${5 + i}:1:0:0@${now}`).join(',')].join('\n') + '\n';
}

const server = await startPerfscope({
  label: 'short-processes', nvmlScript: script(),
  args: ['--enable-host-collector', 'false', '--sampling-interval-ms', '100', '--gpu-process-interval-ms', '100'],
});
const scriptPath = path.join(server.dataDir, 'nvml.txt');
// Written whole and renamed into place: the stand-in reads the script on every call.
function publish(text) {
  writeFileSync(scriptPath + '.new', text);
  renameSync(scriptPath + '.new', scriptPath);
}
const pid = server.proc.pid;
const rss = () => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024;
const dbMb = () => readdirSync(server.dataDir).filter((f) => f.startsWith('perfscope.db'))
  .reduce((n, f) => n + statSync(path.join(server.dataDir, f)).size, 0) / 1048576;
async function seriesCount() {
  return (await (await fetch(server.url + '/api/v1/series')).json()).series.filter((s) => s.name.startsWith('gpu_process_')).length;
}

console.log(`short processes: ${total} processes, 10 at a time, one replaced every ${rotateMs} ms`);
console.log('| min | processes started | RSS MB | DB MB | per-process series |');
console.log('| ---: | ---: | ---: | ---: | ---: |');
const t0 = Date.now();
let started = 10, lastMinute = 0, slot = 0;
while (started < total) {
  await sleep(rotateMs);
  live[slot] = next++;
  slot = (slot + 1) % live.length;
  started++;
  publish(script());
  const minute = Math.floor((Date.now() - t0) / 60000);
  if (minute > lastMinute) {
    lastMinute = minute;
    console.log(`| ${minute} | ${started} | ${rss().toFixed(1)} | ${dbMb().toFixed(2)} | ${await seriesCount()} |`);
  }
}
await sleep(1000);  // the last one started runs a while too
live = [];
publish([...base].join('\n') + '\n');  // every process has ended
await sleep(2500);  // its end seen, its record committed
const listed = (await (await fetch(server.url + '/api/v1/processes?window=1d')).json()).processes;
const info = await (await fetch(server.url + '/api/v1/info')).json();
const note = info.collectors.find((c) => c.name === 'nvidia').sources.find((s) => s.name === 'processes');
console.log(`end: RSS ${rss().toFixed(1)} MB, DB ${dbMb().toFixed(2)} MB, ${await seriesCount()} per-process series, ` +
            `${listed.length} processes listed (${listed.filter((p) => p.state === 'exited').length} exited) of ${started} started`);
console.log(`series limit: ${note ? note.detail : 'not reached'}`);
const seen = new Set(listed.map((p) => p.pid));
const missing = [];
for (let p = 3_000_000; p < next; p++) if (!seen.has(p)) missing.push(p);
if (missing.length) console.log(`not listed: ${missing.slice(0, 20).join(', ')}${missing.length > 20 ? ' …' : ''}`);
await server.stop();
process.exit(listed.length === started ? 0 : 1);
