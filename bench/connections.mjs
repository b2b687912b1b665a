// Connections held: opens HTTP keep-alive connections (each after one answered request) and
// WebSocket stream clients against a running server, holds them, and meanwhile times fresh
// requests and reads the server's resident memory. Prints one line per phase.
// Usage: node --experimental-websocket bench/connections.mjs URL SERVER_PID HTTP_CONNECTIONS WS_CLIENTS
// (the server started with --max-connections-per-client 0: every connection here comes from
// one address, past the default cap of 64)
import net from 'node:net';
import { readFileSync } from 'node:fs';

const [url, pid, nHttp, nWs] = [process.argv[2], process.argv[3], Number(process.argv[4]), Number(process.argv[5])];
const { hostname, port } = new URL(url);
const rssKb = () => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);

function keptAlive() {
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(port), hostname, () => s.write(`GET /healthz HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`));
    s.once('data', (d) => (String(d).startsWith('HTTP/1.1 200') ? resolve(s) : reject(new Error(String(d)))));
    s.on('error', reject);
  });
}

function streamClient() {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace('http', 'ws') + '/api/v1/stream');
    ws.onmessage = () => resolve(ws);  // the hello
    ws.onerror = reject;
  });
}

async function latencies(n) {
  const t = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await fetch(url + '/api/v1/info');
    await r.text();
    if (r.status !== 200) throw new Error('info answered ' + r.status);
    t.push(performance.now() - t0);
  }
  t.sort((a, b) => a - b);
  return `p50 ${t[Math.floor(n / 2)].toFixed(1)} ms, p99 ${t[Math.floor(n * 0.99)].toFixed(1)} ms`;
}

const base = rssKb();
console.log(`idle: RSS ${(base / 1024).toFixed(1)} MB; /api/v1/info ${await latencies(100)}`);
const sockets = [];
for (let i = 0; i < nHttp; i++) sockets.push(await keptAlive());
const streams = [];
for (let i = 0; i < nWs; i++) streams.push(await streamClient());
await new Promise((r) => setTimeout(r, 1500));  // a second of stream messages to every client
const open = sockets.filter((s) => !s.destroyed).length;
console.log(`holding ${open} keep-alive connections and ${streams.length} stream clients: RSS ${(rssKb() / 1024).toFixed(1)} MB ` +
            `(+${((rssKb() - base) / (nHttp + nWs)).toFixed(1)} kB each); /api/v1/info ${await latencies(100)}`);
for (const s of sockets) s.destroy();
for (const ws of streams) ws.close();
process.exit(0);
