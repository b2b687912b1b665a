// The golden test's fixed events: fixed times and a seeded generator, so the same data on every
// machine — two runs of kernels, inference requests, operators, memory, command buffers and a
// custom series. Shared by the golden answers and the REST API's description test.
export const T0 = 1735689600000000000n;  // 2025-01-01 00:00:00 UTC
export const S = 1000000000n;

// A small deterministic generator (an LCG), so the data are the same on every machine.
let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);

// JSON with exact 64-bit times: BigInt values are written as numbers.
export const toJson = (v) => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `#big:${x}` : x)).replace(/"#big:(-?\d+)"/g, '$1');

export function events() {
  seed = 12345;
  const out = [];
  const runs = [['base', 0n, { gemm: 8.0, reduce: 2.0, conv: 6.5 }], ['next', 120n, { gemm: 6.2, reduce: 2.05, conv: 6.5 }]];
  for (const [name, offset, means] of runs) {
    const start = T0 + offset * S;
    out.push({ type: 'run', name, start_ns: start, end_ns: start + 60n * S, exit_status: 0, host: 'golden',
               command: ['./bench', name], kinds: 'kernel,memcpy', gpus: ['0'] });
    let at = start + S / 10n;
    for (let i = 0; i < 240; i++) {
      const kernel = ['gemm', 'reduce', 'conv'][i % 3];
      const dur = BigInt(Math.round(means[kernel] * 1e6 * (0.9 + 0.2 * rand())));
      const e = { type: 'kernel', name: kernel, device: '0', stream: String(7 + (i % 2)), start_ns: at, end_ns: at + dur,
                  launch_start_ns: at - 20000n, launch_end_ns: at - 5000n, grid: [128, 1, 1], block: [256, 1, 1],
                  tags: { run: name } };
      if (kernel === 'gemm') Object.assign(e, { variant: i % 2 ? 'tiled' : 'naive', flops: 2 * 4096 ** 3, bytes: 3 * 4096 * 4096 * 2, dtype: 'bf16' });
      out.push(e);
      at += dur + 50000n + BigInt(Math.round(rand() * 1e6));
    }
  }
  for (let i = 0; i < 200; i++) {
    const model = i % 4 ? 'llama' : 'resnet50';
    const latency = model === 'llama' ? 120 + 80 * rand() + (i > 150 ? 60 : 0) : 9 + 4 * rand();
    const r = { type: 'inference', model, version: i % 2 ? '2' : '1', ts_ns: T0 + BigInt(i) * S, latency_ms: latency,
                queue_ms: latency * 0.1, compute_ms: latency * 0.85, status: i % 37 === 5 ? 'error' : 'ok' };
    if (model === 'llama') Object.assign(r, { ttft_ms: 20 + 10 * rand(), input_tokens: 200 + i, output_tokens: 64 + (i % 32) });
    out.push(r);
  }
  for (let i = 0; i < 24; i++) {
    out.push({ type: 'operator', op_type: i % 6 === 5 ? 'NonZero' : 'Conv', name: `node${i % 4}`,
               provider: i % 6 === 5 ? 'CPUExecutionProvider' : 'CUDAExecutionProvider', duration_ms: 0.5 + rand(),
               model: 'resnet50', input_shapes: [[1, 64, 56, 56]], ts_ns: T0 + BigInt(i) * S });
  }
  for (let i = 0; i < 12; i++) {
    out.push({ type: 'memory', op: 'alloc', address: `0x${(i + 10).toString(16)}`, size_bytes: (i + 1) * 1048576,
               kind: i % 3 ? 'device' : 'host', tag: i % 2 ? 'weights' : 'activations', device: '0', ts_ns: T0 + BigInt(i) * S });
  }
  for (let i = 0; i < 8; i += 2) {
    out.push({ type: 'memory', op: 'free', address: `0x${(i + 10).toString(16)}`, device: '0', ts_ns: T0 + BigInt(20 + i) * S });
  }
  for (let i = 0; i < 20; i++) {
    const enq = T0 + BigInt(i) * S;
    out.push({ type: 'command_buffer', id: `cb${i}`, queue: 'q0', device: '0', enqueue_ns: enq, submit_ns: enq + 100000n,
               start_ns: enq + 300000n, end_ns: enq + 300000n + BigInt(Math.round(2e6 * (1 + rand()))) });
  }
  for (let i = 0; i < 180; i++) {
    out.push({ type: 'sample', metric: 'queue_depth', labels: { pool: 'main' }, ts_ns: T0 + BigInt(i) * S,
               value: Math.round(10 * (5 + Math.sin(i / 10) + (i > 150 ? 8 : 0))) / 10 });
  }
  return out;
}
