// Drill-down from the inference table: a model's latency, TTFT or TPOT percentiles (p50, p90,
// p99) over the dashboard's time range, in slices the server computes (/api/v1/percentiles with
// step=), its SLO as a line and the share of requests within it per slice and over the range.
// The URL keeps the model, the field and the SLO (?model=NAME&field=ttft_ms&slo=200).
import { LiveChart } from '../lib/live_chart.js';
import { PercentilesOverTime, percentilesText } from '../lib/percentiles_over_time.js';
import { setSearchParams } from '../lib/url.js';

export function createModelDetail({ state }) {
  const panel = document.getElementById('model-detail');
  const chart = new PercentilesOverTime(document.getElementById('md-chart'));
  const fieldEl = document.getElementById('md-field');
  const sloEl = document.getElementById('md-slo');
  const p = new URLSearchParams(window.location.search);
  const detail = { model: p.get('model'), version: p.get('version') || '' };
  if (['latency_ms', 'ttft_ms', 'tpot_ms'].includes(p.get('field'))) fieldEl.value = p.get('field');
  if (Number(p.get('slo')) > 0) sloEl.value = p.get('slo');
  state.modelDetail = { loads: 0, slices: [] };

  async function load() {
    if (!detail.model) return;
    const field = fieldEl.value;
    const slo = Number(sloEl.value) || 0;
    let selector = `model=${encodeURIComponent(detail.model)}&field=${field}`;
    if (detail.version) selector += `&version=${encodeURIComponent(detail.version)}`;
    try {
      const r = await chart.load(selector, slo);
      if (!r) return;  // a newer load answers
      const within = r.sla ? ` · ${(r.sla.compliance_rate * 100).toFixed(1)}% within the SLO (${r.sla.violations} over)` : '';
      document.getElementById('md-summary').textContent = r.count
        ? `${r.count} requests in the range · ${percentilesText(r)}${within}`
        : 'No requests of this model in the range.';
      state.modelDetail = { loads: state.modelDetail.loads + 1, slices: r.over_time, field, slo };
    } catch (e) {
      document.getElementById('md-summary').textContent = `Could not read the percentiles: ${e.message || e}`;
    }
  }

  function show(model, version) {
    detail.model = model;
    detail.version = version || '';
    // Another model is a history entry; its field or SLO changed only rewrites it.
    const other = (new URLSearchParams(window.location.search).get('model') || null) !== (model || null);
    setSearchParams({ model: model || null, version: model && version ? version : null,
                      field: model ? fieldEl.value : null, slo: model && Number(sloEl.value) > 0 ? sloEl.value : null },
                    { push: other });
    panel.hidden = !model;
    if (!model) return;
    document.getElementById('md-name').textContent = model + (version ? ' v' + version : '');
    load();
  }

  document.querySelector('#inference-table tbody').addEventListener('click', (e) => {
    const row = e.target.closest('tr[data-model]');
    if (row) show(row.dataset.model, row.dataset.version);
  });
  document.getElementById('md-close').addEventListener('click', () => show(null));
  for (const el of [fieldEl, sloEl]) el.addEventListener('change', () => show(detail.model, detail.version));
  LiveChart.range.onChange(() => { if (!panel.hidden) load(); });
  if (detail.model) show(detail.model, detail.version);  // from the URL
  // Live: new slices as requests arrive.
  setInterval(() => { if (!panel.hidden && LiveChart.range.live) load(); }, 5000);
  // Back and Forward: the URL's model, opened or closed.
  function readUrl() {
    const q = new URLSearchParams(window.location.search);
    if ((q.get('model') || null) !== (detail.model || null) || (q.get('version') || '') !== detail.version) {
      show(q.get('model'), q.get('version'));
    }
  }
  return { show, load, readUrl };
}
