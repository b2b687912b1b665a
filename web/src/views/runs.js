// Runs view: every run of a traced program (newest first) with its status and kernel figures,
// and two of them compared kernel by kernel (GET /api/v1/runs/compare): totals, then the
// kernels that moved most, with their adjusted p-values and verdicts. A duty-cycled run shows
// its observed kernels with the estimate for the whole run and the sampled fraction.
import { esc, kernelNameHtml, ms } from '../lib/format.js';
import { fetchJson } from '../lib/api.js';
import { withProgress } from '../lib/progress.js';

const pct = (v) => (v == null ? '–' : (v * 100).toFixed(1) + '%');
const signed = (v) => (v == null ? '–' : (v >= 0 ? '+' : '') + (v * 100).toFixed(1) + '%');
const seconds = (v) => (v == null ? '–' : v < 10 ? v.toFixed(2) + ' s' : v.toFixed(0) + ' s');

// A duty-cycled run: what its windows recorded, and the whole run's estimate.
function kernelCount(r) {
  if (!r.sampling || r.kernels.estimated_count == null) return String(r.kernels.count);
  return `${r.kernels.count} <span class="muted" data-testid="run-sampled">(≈${Math.round(r.kernels.estimated_count)}, ` +
    `sampled ${pct(r.sampling.sampled_fraction)})</span>`;
}

// `onRuns(runs)`: after each read (the header's run picker).
export function createRunsView({ state, onRuns }) {
  state.runs = [];
  state.runCompare = null;

  function render(runs) {
    const body = document.querySelector('#runs-table tbody');
    document.getElementById('runs-summary').textContent = runs.length ? `${runs.length} runs` : '';
    if (runs.length === 0) return;
    body.innerHTML = runs.map((r) => `<tr data-run="${esc(r.name)}"><td>${esc(r.name)}</td>` +
      `<td><span class="status status-${esc(r.status)}">${esc(r.status)}</span>` +
      `${r.exit_status != null && r.exit_status !== 0 ? ' (' + r.exit_status + ')' : ''}</td>` +
      `<td>${new Date(r.start_ns / 1e6).toLocaleString()}</td><td class="num">${seconds(r.wall_s)}</td>` +
      `<td class="num">${kernelCount(r)}</td><td class="num">${ms(r.kernels.total_ms)} ms</td>` +
      `<td class="num">${ms(r.gpu_busy_ms)} ms</td><td class="num">${pct(r.launch_efficiency)}</td>` +
      `<td><code>${esc(r.command.join(' '))}</code></td></tr>`).join('');
    for (const [id, pick] of [['runs-a', 1], ['runs-b', 0]]) {  // oldest of the newest two first
      const sel = document.getElementById(id);
      const keep = sel.value;
      sel.innerHTML = runs.map((r) => `<option value="${esc(r.name)}">${esc(r.name)}</option>`).join('');
      sel.value = runs.some((r) => r.name === keep) ? keep : runs[Math.min(pick, runs.length - 1)].name;
    }
  }

  function renderComparison(c) {
    const totals = [['Wall time', 'wall_s', (v) => seconds(v)], ['GPU busy', 'gpu_busy_ms', (v) => ms(v) + ' ms'],
                    ['Kernel time', 'kernel_ms', (v) => ms(v) + ' ms'], ['Kernels', 'kernel_count', (v) => (v == null ? '–' : v)],
                    ['Launch efficiency', 'launch_efficiency', pct]];
    const rows = c.kernels.slice(0, 20).map((k) => `<tr data-kernel="${esc(k.name)}" data-verdict="${esc(k.verdict)}">` +
      `<td>${kernelNameHtml(k.name)}</td><td class="num">${k.count_a} / ${k.count_b}</td><td class="num">${ms(k.mean_a_ms)}</td>` +
      `<td class="num">${ms(k.mean_b_ms)}</td><td class="num">${signed(k.mean_change)}</td><td class="num">${ms(k.moved_ms)}</td>` +
      `<td class="num">${k.p_adjusted == null ? '–' : k.p_adjusted.toPrecision(3)}</td>` +
      `<td><span class="verdict verdict-${esc(k.verdict)}">${esc(k.verdict.replace(/_/g, ' '))}</span></td></tr>`).join('');
    document.getElementById('runs-result').innerHTML =
      `<p><span class="verdict verdict-${esc(c.verdict)}" data-testid="runs-verdict">${esc(c.verdict)}</span> ` +
      `${esc(c.b.name)} against ${esc(c.a.name)}</p>` +
      `<table class="grid"><thead><tr><th>Total</th><th class="num">${esc(c.a.name)}</th><th class="num">${esc(c.b.name)}</th>` +
      `<th class="num">Change</th></tr></thead><tbody>` +
      totals.map(([label, key, f]) => `<tr><td>${label}</td><td class="num">${f(c.totals[key].a)}</td>` +
        `<td class="num">${f(c.totals[key].b)}</td><td class="num">${signed(c.totals[key].change)}</td></tr>`).join('') +
      `</tbody></table><table class="grid" data-testid="runs-kernels"><thead><tr><th>Kernel</th><th class="num">Executions</th>` +
      `<th class="num">Mean a ms</th><th class="num">Mean b ms</th><th class="num">Change</th><th class="num">Moved ms</th>` +
      `<th class="num">p (adjusted)</th><th>Verdict</th></tr></thead><tbody>${rows}</tbody></table>`;
  }

  document.getElementById('runs-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const a = document.getElementById('runs-a').value, b = document.getElementById('runs-b').value;
    if (!a || !b) return;
    try {
      const c = await withProgress(ev.target, document.getElementById('runs-result'), `Comparing ${a} and ${b}`,
        () => fetchJson(`/api/v1/runs/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`));
      state.runCompare = c;
      renderComparison(c);
    } catch (e) {
      document.getElementById('runs-result').textContent = 'Comparison failed: ' + e.message;
    }
  });

  async function refresh() {
    try {
      const r = await fetchJson('/api/v1/runs?limit=50');
      state.runs = r.runs;
      render(r.runs);
      if (onRuns) onRuns(r.runs);
    } catch (e) { /* the next events notification retries */ }
  }
  return { refresh };
}
