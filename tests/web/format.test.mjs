// The dashboard's formatting helpers, as a page would call them (no browser needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EVIDENCE_WORDS, evidenceLabel, fmtDuration, fmtEvidence, fmtInstant, ms, shortKernelName, kernelNameHtml } from '../../web/src/lib/format.js';

test('a kernel signature shortens to its qualified name, as profilers list it', () => {
  const cases = [
    ['ampere_sgemm_128x64_nn', 'ampere_sgemm_128x64_nn'],
    ['gemm', 'gemm'],
    ['void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ' +
     'at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)',
     'at::native::vectorized_elementwise_kernel'],
    ['void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>' +
     '(float*, float const*, int, int, int, bool const*, int, bool)', 'softmax_warp_forward'],
    ['void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<' +
     'at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::' +
     '{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, ' +
     'at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::' +
     '{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, ' +
     'at::native::gpu_kernel_impl_nocast<…>(…)::{lambda(int)#1})', 'at::native::elementwise_kernel'],
    ['void cutlass::Kernel2<cutlass_80_wmma_tensorop_s161616gemm_f16_32x32_128x2_tn_align8>' +
     '(cutlass_80_wmma_tensorop_s161616gemm_f16_32x32_128x2_tn_align8::Params)',
     'cutlass::Kernel2<cutlass_80_wmma_tensorop_s161616gemm_f16_32x32_128x2_tn_align8>'],
    ['at::native::(anonymous namespace)::fill_kernel(float*, int)', 'at::native::fill_kernel'],
    ['std::enable_if<true, void>::type flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>>(Flash_fwd_params)',
     'flash::flash_fwd_kernel'],
    // Not signatures: names of their own, spaces and all.
    ['memcpy HtoD', 'memcpy HtoD'],
    ['[CUDA memcpy Device-to-Device]', '[CUDA memcpy Device-to-Device]'],
    ['Memcpy HtoD (Pageable -> Device)', 'Memcpy HtoD (Pageable -> Device)'],
    ['aten::addmm', 'aten::addmm'],
  ];
  for (const [name, short] of cases) assert.equal(shortKernelName(name), short, name);
});

test('a table cell shows the short name and keeps the whole signature, escaped, on hover', () => {
  const html = kernelNameHtml('void k<1>(int*, char const*)');
  assert.equal(html, '<span class="kname" title="void k&lt;1&gt;(int*, char const*)">k</span>');
});

test('an instant is written with its date, to the millisecond', () => {
  const ns = new Date(2026, 10, 26, 9, 58, 40, 7).getTime() * 1e6;
  assert.equal(fmtInstant(ns), '2026-11-26 09:58:40.007');
  assert.equal(fmtInstant(null), '–');
});

test('milliseconds to three significant digits, whole ones from 100 on', () => {
  assert.deepEqual([300, 1234.5, 40, 99.95, 4.5, 1, 0.046, 0.00012, 0, -12.34, null, NaN].map(ms),
                   ['300', '1235', '40.0', '100', '4.50', '1.00', '0.0460', '0.000120', '0', '-12.3', '–', '–']);
});

test('durations read in the unit that fits; nothing is 0 s, not 0.00 µs', () => {
  assert.equal(fmtDuration(0), '0 s');
  assert.equal(fmtDuration(0.85), '850 µs');
  assert.equal(fmtDuration(12.34), '12.3 ms');
  assert.equal(fmtDuration(8800), '8.80 s');
  assert.equal(fmtDuration(1.08e7), '180 min', 'three hours in minutes, not 1.08e+4 s');
  assert.equal(fmtDuration(9.99e5), '999 s');
  assert.equal(fmtDuration(3.6e8), '100 h');
  assert.equal(fmtDuration(8.64e9), '100 d');
  assert.equal(fmtEvidence('gpu_thermal_throttle_seconds', 0), '0 s');
  assert.equal(fmtEvidence('kernel_avg_gap_ms', 8.8), '8.80 ms');
});

test("every input the bottleneck rules read is named in words, the server's name kept for the tooltip", () => {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const read = new Set();
  for (const dir of ['engine/analysis', 'server/service']) {
    for (const f of readdirSync(join(root, dir)).filter((n) => n.endsWith('.cpp'))) {
      const text = readFileSync(join(root, dir, f), 'utf8');
      // What the service puts in, and what each rule of the table says it needs.
      for (const m of text.matchAll(/inputs\["([a-z0-9_]+)"\]|try_emplace\("([a-z0-9_]+)"/g)) read.add(m[1] ?? m[2]);
      for (const m of text.matchAll(/^\s+\{((?:"[a-z0-9_]+"(?:, )?)+)\},$/gm)) {
        for (const name of m[1].matchAll(/"([a-z0-9_]+)"/g)) read.add(name[1]);
      }
    }
  }
  assert.ok(read.size > 20, `the rules' inputs were found (${read.size})`);
  for (const known of ['gpu_power_cap_throttle_seconds', 'kernel_max_ms', 'collective_straggler_extra_ms', 'operator_cpu_fallback_share']) {
    assert.ok(read.has(known), `${known} was found among the rules' inputs`);
  }
  assert.deepEqual([...read].filter((k) => !(k in EVIDENCE_WORDS)), []);
  assert.equal(evidenceLabel('gpu_utilization_avg'), 'average GPU utilization');
  assert.equal(evidenceLabel('gpu_fan_speed_peak'), 'peak GPU fan speed', 'a new input reads as words until it is named');
  assert.ok(Object.values(EVIDENCE_WORDS).every((w) => !w.includes(',')), 'a finding separates its figures by commas');
  assert.equal(fmtEvidence('device_target_of_minimum_worst', 0.4), '40.0%');
  assert.equal(fmtEvidence('collective_large_busbw_share_of_peak', 0.95), '95.0%');
});
