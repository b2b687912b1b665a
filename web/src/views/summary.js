// The overview's key figures, each linking to the view that explains it: GPU busy (mean
// utilization over the GPUs), GPU power (their sum), GPU memory headroom (the least free on
// any GPU), the top kernel of the range (its share of its device's kernel time) and serving's
// worst p99 against its SLO when one is set, and — where the range holds a multi-GPU job — its
// straggler (or that it has none), opening the job's run page. The GPU figures are the GPU
// view's newest readings (`gpus()`: GPU index → {series name: value}); the kernel and serving
// ones the events view's last read of the range; the straggler the analysis document's.
import { fmtBytes, fmtPct, fmtW, ms, shortKernelName } from '../lib/format.js';

export function createSummary({ gpus, openRun }) {
  const ranked = { kernel: null, model: null };
  const straggler = { run: null };
  document.getElementById('s-straggler-tile').addEventListener('click', (e) => {
    if (!straggler.run || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    openRun(straggler.run);
  });
  const set = (id, text, title = '') => {
    const el = document.getElementById(id);
    el.textContent = text;
    el.closest('.stat').title = title;
  };
  function render() {
    const latest = Object.entries(gpus());
    const by = (name) => latest.filter(([, g]) => g[name] != null).map(([gpu, g]) => [gpu, g[name]]);
    const sum = (xs) => xs.reduce((a, [, v]) => a + v, 0);
    const util = by('gpu_utilization_ratio');
    set('s-gpu-busy', util.length ? fmtPct(sum(util) / util.length) : '–',
      util.length ? `mean of ${util.length} GPU${util.length > 1 ? 's' : ''}` : 'no GPU sampled');
    const power = by('gpu_power_watts');
    set('s-gpu-power', power.length ? fmtW(sum(power)) : '–');
    const least = latest.filter(([, g]) => g.gpu_memory_total_bytes != null && g.gpu_memory_used_bytes != null)
      .map(([gpu, g]) => [gpu, g.gpu_memory_total_bytes - g.gpu_memory_used_bytes]).sort((a, b) => a[1] - b[1])[0];
    set('s-gpu-free', least ? fmtBytes(least[1]) : '–', least ? `the least free memory of any GPU: GPU ${least[0]}` : '');
    const k = ranked.kernel;
    // Its share goes in the label: a long name may be cut short, the share never is.
    set('s-top-kernel', k ? shortKernelName(k.name) : '–', k ? k.name : 'no kernels in the range');
    document.getElementById('s-top-kernel').previousElementSibling.textContent =
      'Top kernel (range)' + (k ? ` · ${fmtPct(k.device_share)} of its device` : '');
    const m = ranked.model;
    set('s-p99', m ? `${ms(m.p99)} ms${m.slo ? ` / ${m.slo} ms` : ''}` : '–',
      m ? `${m.model}: p99 latency${m.slo ? ' against its SLO' : ''}` : 'no inference requests in the range');
    document.getElementById('s-p99').classList.toggle('bad', !!(m && m.slo && m.p99 > m.slo));
  }
  setInterval(render, 1000);
  return {
    // After each read of the range's kernels (rows with device_share) and models; the latency
    // SLO is the serving table's.
    events(kernels, models) {
      const slo = Number(document.getElementById('slo-latency').value) || null;
      ranked.kernel = [...kernels].sort((a, b) => b.total_ms - a.total_ms)[0] || null;
      const worst = models.filter((x) => x.latency_ms && x.latency_ms.p99 != null)
        .sort((a, b) => b.latency_ms.p99 - a.latency_ms.p99)[0];
      ranked.model = worst ? { model: worst.model, p99: worst.latency_ms.p99, slo } : null;
      render();
    },
    // After each read of the analysis document: its multi-GPU jobs (`collectives`). The job
    // whose straggler costs the most compute per step is named; with jobs but no straggler, the
    // tile says so; with no multi-GPU job in the range, it is hidden.
    collectives(jobs) {
      const multi = (jobs || []).filter((j) => j.ranks && j.ranks.length > 1);
      const tile = document.getElementById('s-straggler-tile');
      tile.hidden = multi.length === 0;
      if (!multi.length) return;
      const named = multi.filter((j) => j.straggler)
        .sort((a, b) => b.straggler.extra_per_step_ms - a.straggler.extra_per_step_ms)[0];
      const job = named || multi[0];
      straggler.run = job.run || null;
      tile.href = job.run ? `?view=runs&run_page=${encodeURIComponent(job.run)}` : '?view=runs';
      const where = job.run ? `run ${job.run}` : 'a job without a run';
      // The figure goes in the label, as the top kernel's share does: the value stays short.
      const label = document.getElementById('s-straggler').previousElementSibling;
      if (named) {
        const s = named.straggler;
        set('s-straggler', `rank ${s.rank}`,
          `${where}: rank ${s.rank} arrived last at ${fmtPct(s.last_share)} of the collectives, with ` +
          `${ms(s.extra_per_step_ms)} ms more compute per ${ms(s.step_median_ms)} ms step`);
        label.textContent = `Straggler (range) · +${ms(s.extra_per_step_ms)} ms compute a step`;
      } else {
        set('s-straggler', 'none', `${where}: ${job.no_straggler || 'no straggler'}`);
        label.textContent = `Straggler (range) · ${job.ranks.length} ranks`;
      }
      document.getElementById('s-straggler').classList.toggle('bad', !!named);
    },
  };
}
