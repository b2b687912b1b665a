// Scraping on the real binary: a real HTTP server in this process serves a vLLM exposition
// (its token counter growing with every scrape), a malformed one and an oversized one; a
// fourth target is unreachable. perfscope stores the good target's series with job, instance
// and the target's labels and its counters' rates, reports every target's state in
// /api/v1/info, and one bad target never stops the others. A second perfscope scrapes the
// first one's /metrics.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPerfscope } from '../../support/perfscope_server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const vllm = readFileSync(path.join(here, '../../fixtures/scrape/vllm.prom'), 'utf8');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let target, port, scraper, peer;
let generated = 51200;
let churn = 0;

before(async () => {
  target = http.createServer((req, res) => {
    if (req.url === '/metrics') {
      generated += 100;  // 100 tokens between any two scrapes
      const body = vllm.replace(/^(vllm:generation_tokens_total\{[^}]*\}) .*$/m, `$1 ${generated}.0`);
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
      res.end(body);
    } else if (req.url === '/broken') {
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
      res.end('# TYPE ok gauge\nok 1\nbroken{label="unterminated} 2\n');
    } else if (req.url === '/churn') {
      // A request id in a label: new series with every scrape.
      churn += 1;
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
      res.end('# TYPE req_seconds gauge\nstable 1\n' + Array.from({ length: 5 }, (_, i) => `req_seconds{id="${churn}-${i}"} 0.1`).join('\n') + '\n');
    } else if (req.url === '/huge') {
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
      res.end('# TYPE big gauge\n' + Array.from({ length: 2000 }, (_, i) => `big{i="${i}"} ${i}`).join('\n') + '\n');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((r) => target.listen(0, '127.0.0.1', r));
  port = target.address().port;
  const base = `http://127.0.0.1:${port}`;
  scraper = await startPerfscope({
    label: 'scrape',
    // The sampler takes scrapes at half their pace, as a busy one does: every series a scrape
    // brings must still arrive (the churn target shows only new series in each scrape).
    args: ['--enable-host-collector', 'false', '--enable-gpu-collector', 'false', '--sampling-interval-ms', '450',
           '--scrape', `${base}/metrics,job=vllm,interval=200ms,label.node=a`,
           '--scrape', 'http://127.0.0.1:1/metrics,job=down,interval=200ms,timeout=100ms',
           '--scrape', `${base}/broken,job=broken,interval=200ms`,
           '--scrape', `${base}/huge,job=huge,interval=200ms,body_limit=4kB`,
           '--scrape', `${base}/churn,job=churn,interval=200ms,series_limit=12`],
  });
  await sleep(2000);
});

after(async () => {
  if (peer) await peer.stop();
  if (scraper) await scraper.stop();
  if (target) target.close();
});

async function series(server) {
  return (await (await fetch(server.url + '/api/v1/series')).json()).series;
}

test('a target\'s samples are stored with job, instance and its labels', async () => {
  const all = await series(scraper);
  const running = all.find((s) => s.name === 'vllm:num_requests_running');
  assert.ok(running, 'vllm:num_requests_running stored');
  assert.deepEqual(running.labels, { instance: `127.0.0.1:${port}`, job: 'vllm', model_name: 'meta-llama/Llama-3.1-8B-Instruct', node: 'a' });
  assert.equal(running.latest.value, 3);
  const buckets = all.filter((s) => s.name === 'vllm:time_to_first_token_seconds_bucket');
  assert.equal(buckets.length, 17);
  // Stored, not only held in memory: the history query answers with several scrapes.
  const q = await (await fetch(`${scraper.url}/api/v1/series/query?name=vllm:num_requests_running&from=now-5m&to=now`)).json();
  assert.ok(q.series[0].points.length >= 3, JSON.stringify(q).slice(0, 300));
});

test('counters give their rate between scrapes', async () => {
  const rate = (await series(scraper)).find((s) => s.name === 'vllm:generation_tokens_per_second');
  assert.ok(rate, 'the rate series exists');
  // 100 tokens per scrape, a scrape every 200 ms: about 500/s (the scrape loop's jitter apart).
  assert.ok(rate.latest.value > 250 && rate.latest.value < 1000, `rate ${rate.latest.value}`);
});

test('every target reports its state; bad ones do not stop the good one', async () => {
  const info = await (await fetch(scraper.url + '/api/v1/info')).json();
  const scrape = info.collectors.find((c) => c.name === 'scrape');
  assert.ok(scrape, JSON.stringify(info.collectors));
  const base = `http://127.0.0.1:${port}`;
  const by = Object.fromEntries(scrape.sources.map((s) => [s.name.replace(base, ''), s]));
  assert.equal(by['/metrics'].available, true, by['/metrics'].detail);
  // Every scrape is bounded by its timeout (the interval, 200 ms, here): on a loaded machine
  // under the sanitizers one may run out; the good target goes on regardless.
  const m = /^61 samples in \d+ ms; (\d+) scrapes, (\d+) failed$/.exec(by['/metrics'].detail);
  assert.ok(m, by['/metrics'].detail);
  assert.ok(Number(m[2]) * 4 <= Number(m[1]), `most scrapes of the good target succeed: ${by['/metrics'].detail}`);
  assert.equal(by['/broken'].available, false);
  assert.match(by['/broken'].detail, /malformed exposition: line 3: unterminated quoted label value/);
  assert.equal(by['/huge'].available, false);
  assert.match(by['/huge'].detail, /body limit/);
  const down = scrape.sources.find((s) => s.name.startsWith('http://127.0.0.1:1/'));
  assert.equal(down.available, false);
  assert.match(down.detail, /cannot connect|failed/);
  // Label churn stops at the series limit: the target stays up, its known series go on.
  assert.equal(by['/churn'].available, true);
  assert.match(by['/churn'].detail, /label cardinality: the series limit of 12 was reached, 5 samples of new series dropped in the last scrape/);
  const churned = (await series(scraper)).filter((s) => s.labels.job === 'churn');
  assert.equal(churned.length, 12);
  assert.ok(churned.some((s) => s.name === 'stable'));
  assert.equal(info.config.scrape.length, 5);
  assert.equal(info.config.scrape[0].interval_ms, 200);
  // Nothing of the refused scrapes was stored.
  const names = new Set((await series(scraper)).map((s) => s.name));
  assert.ok(!names.has('big') && !names.has('broken'));
});

test('a bad --scrape is refused at start, naming the option', async () => {
  await assert.rejects(startPerfscope({ label: 'scrape-bad', args: ['--scrape', 'ftp://x/metrics'] }), /exited early with 2/);
});

test('a second perfscope scrapes the first one\'s /metrics', async () => {
  peer = await startPerfscope({
    label: 'scrape-peer',
    args: ['--enable-host-collector', 'false', '--enable-gpu-collector', 'false',
           '--scrape', `${scraper.url}/metrics,job=perfscope,interval=200ms`],
  });
  await sleep(1200);
  const all = await series(peer);
  const up = all.filter((s) => s.labels.job === 'perfscope' && s.name.startsWith('perfscope_'));
  assert.ok(up.length > 10, `perfscope series from the peer: ${up.length}`);
  // Available once a scrape succeeded: waited for (one clean-clone run at load 10 read it
  // while the newest scrape had timed out), bounded at 10 s.
  let available = false;
  for (let i = 0; i < 50 && !available; i++) {
    const info = await (await fetch(peer.url + '/api/v1/info')).json();
    available = info.collectors.find((c) => c.name === 'scrape').sources[0].available;
    if (!available) await sleep(200);
  }
  assert.equal(available, true, 'the scrape source says it is available');
});

test('a target that accepts and stays silent times out, and does not hold the process at shutdown', async () => {
  const silent = net.createServer((socket) => { socket.on('error', () => {}); });  // accepts, never answers
  await new Promise((r) => silent.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${silent.address().port}/metrics`;
  const s = await startPerfscope({
    label: 'scrape-silent',
    args: ['--enable-host-collector', 'false', '--enable-gpu-collector', 'false', '--shutdown-timeout-ms', '2000',
           '--scrape', `${url},job=silent,interval=500ms,timeout=300ms`],
  });
  try {
    // Its state says it timed out (not "not scraped yet") once a timeout has passed.
    let source;
    for (let i = 0; i < 50; i++) {
      const info = await (await fetch(s.url + '/api/v1/info')).json();
      source = info.collectors.find((c) => c.name === 'scrape').sources.find((x) => x.name === url);
      if (/time/i.test(source.detail) && !/not scraped yet/.test(source.detail)) break;
      await sleep(100);
    }
    assert.equal(source.available, false);
    assert.match(source.detail, /timed out|timeout/i, source.detail);
  } finally {
    const started = Date.now();
    s.proc.kill('SIGTERM');
    const { code } = await s.exit;
    const took = Date.now() - started;
    await s.stop();
    silent.close();
    assert.equal(code, 0);
    assert.ok(took < 2000 + 1500, `stopped in ${took} ms with a silent target (shutdown timeout 2000 ms)`);
  }
});
