// Runs view: every run of a traced program (newest first) with its status and kernel figures,
// and two of them compared kernel by kernel (GET /api/v1/runs/compare): totals, then the
// kernels that moved most, with their adjusted p-values and verdicts. A duty-cycled run shows
// its observed kernels with the estimate for the whole run and the sampled fraction. A row opens
// the run's page at the top of the view (GET /api/v1/runs/{name}: what ran, where, how it ended,
// its kernels and sampling), kept in the URL (?view=runs&run_page=NAME) so Back closes it, with
// the way on: the dashboard scoped to the run, its timeline, a comparison with the run before;
// a multi-GPU run's page shows its ranks and collectives too (views/collectives.js).
import { esc, kernelNameHtml, ms } from '../lib/format.js';
import { fetchJson } from '../lib/api.js';
import { collectivesHtml } from './collectives.js';
import { withProgress } from '../lib/progress.js';
import { setSearchParams } from '../lib/url.js';

const pct = (v) => (v == null ? '–' : (v * 100).toFixed(1) + '%');
const signed = (v) => (v == null ? '–' : (v >= 0 ? '+' : '') + (v * 100).toFixed(1) + '%');
const seconds = (v) => (v == null ? '–' : v < 10 ? v.toFixed(2) + ' s' : v.toFixed(0) + ' s');

// A duty-cycled run: what its windows recorded, and the whole run's estimate.
function kernelCount(r) {
  if (!r.sampling || r.kernels.estimated_count == null) return String(r.kernels.count);
  return `${r.kernels.count} <span class="muted" data-testid="run-sampled">(≈${Math.round(r.kernels.estimated_count)}, ` +
    `sampled ${pct(r.sampling.sampled_fraction)})</span>`;
}

// The run's facts as label/value rows, each value already HTML.
// Busy time is summed over the run's GPUs: with several, it is set against that many spans.
function busy(r) {
  const n = (r.gpus || []).length;
  if (n <= 1) return `${ms(r.gpu_busy_ms)} ms of a ${ms(r.kernel_span_ms)} ms kernel span`;
  const share = r.kernel_span_ms > 0 ? r.gpu_busy_ms / (n * r.kernel_span_ms) : null;
  return `${ms(r.gpu_busy_ms)} ms on ${n} GPUs: ${pct(share)} of ${n} × ${ms(r.kernel_span_ms)} ms kernel span`;
}

function facts(r) {
  const time = (ns) => (ns == null ? '–' : new Date(ns / 1e6).toLocaleString());
  const rows = [
    ['Status', `<span class="status status-${esc(r.status)}">${esc(r.status)}</span>` +
      (r.exit_status != null ? ` (exit status ${r.exit_status})` : '')],
    ['Command', r.command.length ? `<code>${esc(r.command.join(' '))}</code>` : '–'],
    ['Host', esc(r.host || '–')],
    ['Started', esc(time(r.start_ns))],
    ['Ended', esc(r.end_ns == null ? 'still running' : time(r.end_ns))],
    ['Wall time', seconds(r.wall_s)],
    ['GPUs', esc((r.gpus || []).join(', ') || '–')],
    ['Processes', esc((r.pids || []).join(', ') || '–')],
    ['Traced', esc(r.kinds || '–')],
    ['Kernels', `${kernelCount(r)} executions of ${r.kernels.distinct} kernels, ${ms(r.kernels.total_ms)} ms`],
    ['GPU busy', r.gpu_busy_ms == null ? '–' : busy(r)],
    ['Launch efficiency', pct(r.launch_efficiency)],
  ];
  if (r.records != null) rows.push(['Records', `${r.records} traced, ${r.dropped ?? 0} lost`]);
  return rows.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join('');
}

// `onRuns(runs)`: after each read (the header's run picker). `showView(view)`, `scopeTo(run)` and
// `openTimeline(name)`: the dashboard's view switch, header run and timeline.
export function createRunsView({ state, onRuns, showView, scopeTo, openTimeline }) {
  state.runs = [];
  state.runCompare = null;
  const opened = { name: null, loads: 0, run: null };
  state.runPage = opened;
  // The view's parts, handed to the functions below: `opened` is the run page's run.
  const view = { state, opened, page: document.getElementById('run-page') };

  document.querySelector('#runs-table tbody').addEventListener('click', (ev) => {
    const row = ev.target.closest('tr[data-run]');
    if (row) showRun(view, row.dataset.run, { reveal: true });
  });
  document.getElementById('rp-close').addEventListener('click', () => showRun(view, null));
  document.getElementById('rp-scope').addEventListener('click', () => { if (opened.run && scopeTo) scopeTo(opened.run); });
  document.getElementById('rp-timeline').addEventListener('click', () => {
    if (!opened.name || !openTimeline) return;
    openTimeline(opened.name);
    if (showView) showView('timeline');
  });
  // The comparison's result is below the list: scrolled to once it is there (on a phone, far below).
  document.getElementById('rp-compare').addEventListener('click', async () => {
    const before = runBefore(state, opened.name);
    if (!before) return;
    document.getElementById('runs-a').value = before.name;
    document.getElementById('runs-b').value = opened.name;
    document.getElementById('runs-result').scrollIntoView({ block: 'start' });
    await compare(state);
    document.getElementById('runs-result').scrollIntoView({ block: 'start' });
  });
  const fromUrl = () => {
    const name = new URLSearchParams(window.location.search).get('run_page');
    if ((name || null) !== opened.name) showRun(view, name, { push: false });
  };
  fromUrl();

  document.getElementById('runs-form').addEventListener('submit', (ev) => { ev.preventDefault(); compare(state); });

  async function refresh() {
    try {
      const r = await fetchJson('/api/v1/runs?limit=50');
      state.runs = r.runs;
      render(r.runs);
      if (onRuns) onRuns(r.runs);
    } catch (e) { /* the next events notification retries */ }
  }
  return { refresh, readUrl: fromUrl, showRun: (...args) => showRun(view, ...args) };
}

// One run's page replaces the last one's: cleared before the new one is read.
async function showRun({ state, opened, page }, name, { push = true, reveal = false } = {}) {
  opened.name = name || null;
  opened.run = null;
  setSearchParams({ run_page: opened.name }, { push });
  page.hidden = !name;
  document.querySelector('#rp-facts tbody').innerHTML = '';
  const ranks = document.getElementById('rp-collectives');
  ranks.innerHTML = '';
  opened.collectives = null;
  document.getElementById('rp-summary').textContent = name ? 'Reading the run…' : '';
  if (!name) return;
  document.getElementById('rp-name').textContent = name;
  if (reveal) page.scrollIntoView({ block: 'start' });
  try {
    const r = await fetchJson(`/api/v1/runs/${encodeURIComponent(name)}`);
    if (opened.name !== name) return;  // another run was opened meanwhile
    opened.run = r;
    document.getElementById('rp-summary').textContent = r.sampling
      ? `Traced in windows: ${pct(r.sampling.sampled_fraction)} of its time; counts are what the windows saw.` : '';
    document.querySelector('#rp-facts tbody').innerHTML = facts(r);
    // The oldest run has none before it to compare with.
    const compareButton = document.getElementById('rp-compare');
    compareButton.disabled = !runBefore(state, name);
    compareButton.title = compareButton.disabled ? 'No earlier run to compare with' : '';
    opened.loads++;
  } catch (e) {
    if (opened.name === name) document.getElementById('rp-summary').textContent = 'Cannot read the run: ' + e.message;
    return;
  }
  // A multi-GPU run: its ranks and collectives (none for a run whose GPUs met in none).
  try {
    const c = await fetchJson(`/api/v1/collectives?window=all&tag.run=${encodeURIComponent(name)}`);
    if (opened.name !== name) return;
    opened.collectives = c.jobs.find((j) => j.run === name) || null;
    ranks.innerHTML = collectivesHtml(opened.collectives, c.link_peak_gb_per_second);
  } catch (e) {
    if (opened.name === name) ranks.textContent = 'Cannot read the run\'s collectives: ' + e.message;
  }
}
// The run before this one (the list is newest first) against this one.
function runBefore(state, name) {
  const i = state.runs.findIndex((r) => r.name === name);
  return i >= 0 ? state.runs[i + 1] || null : null;
}

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
    `<td>${r.command.length ? `<code>${esc(r.command.join(' '))}</code>` : '–'}</td></tr>`).join('');
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

async function compare(state) {
  const form = document.getElementById('runs-form');
  const a = document.getElementById('runs-a').value, b = document.getElementById('runs-b').value;
  if (!a || !b) return;
  try {
    const c = await withProgress(form, document.getElementById('runs-result'), `Comparing ${a} and ${b}`,
      () => fetchJson(`/api/v1/runs/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`));
    state.runCompare = c;
    renderComparison(c);
  } catch (e) {
    document.getElementById('runs-result').textContent = 'Comparison failed: ' + e.message;
  }
}
