// Alerts & anomalies view: over the dashboard's time range, the GPU alerts (power above its
// target, thermal throttling), the anomalies of sampled gauges (robust z-scores) and the change
// points in kernels' and models' per-interval p50/p99 (regressions and improvements). Each
// table teaches how to get rows into it when it has none. A regression's kernel opens the
// kernel's page.
import { esc, fmtDuration, fmtSeriesValue } from '../lib/format.js';
import { fetchJson } from '../lib/api.js';

const when = (ns) => new Date(ns / 1e6).toLocaleString();
const signed = (v) => (v >= 0 ? '+' : '') + (v * 100).toFixed(1) + '%';

function fill(id, rows, cols, emptyText) {
  const body = document.querySelector(`#${id} tbody`);
  body.innerHTML = rows.length ? rows.join('') : `<tr class="empty"><td colspan="${cols}">${emptyText}</td></tr>`;
}

export function createAlertsView({ state, range }) {
  state.alertsView = { loads: 0 };
  let shown = false;
  let timer = null;

  async function load() {
    // Alerts and anomalies are of the machine's series (the span alone); change points of the
    // run's kernels and models when one is picked.
    const span = range.query({ run: false });
    let alerts, anomalies, regressions;
    try {
      [alerts, anomalies, regressions] = await Promise.all([
        fetchJson(`/api/v1/alerts?${span}`), fetchJson(`/api/v1/anomalies?${span}`),
        fetchJson(`/api/v1/regressions?${range.query()}`)]);
    } catch (e) {
      document.getElementById('alerts-error').textContent = `Could not load: ${e.message}`;
      return;
    }
    document.getElementById('alerts-error').textContent = '';
    fill('gpu-alerts-table', alerts.alerts.slice(-200).reverse().map((a) =>
      `<tr><td>${when(a.ts_ns)}</td><td>${esc(a.kind.replace(/_/g, ' '))}</td><td><code>${esc(a.series)}</code></td>` +
      `<td class="num">${fmtSeriesValue(a.series, a.value)}</td><td class="num">${fmtSeriesValue(a.series, a.threshold)}</td>` +
      `<td>${esc(a.message)}</td></tr>`), 6,
      alerts.power_target_watts == null
        ? 'No GPU alerts. Thermal throttling is always watched; for power, start the server with <code>--power-target-watts W</code>.'
        : `No GPU alerts: no GPU went above ${alerts.power_target_watts} W or throttled for heat in this range.`);
    fill('anomalies-table', anomalies.anomalies.slice(-200).reverse().map((a) =>
      `<tr><td>${when(a.ts_ns)}</td><td><code>${esc(a.series)}</code></td><td class="num">${fmtSeriesValue(a.series, a.value)}</td>` +
      `<td class="num">${fmtSeriesValue(a.series, a.center)}</td><td class="num">${a.score.toFixed(1)}</td></tr>`), 5,
      'No anomalies in this range: a sampled series is flagged when three readings in a row lie more than 6 robust ' +
      'z-scores (|x − median| / 1.4826 MAD, the scale floored at 0.1 % of the level) and 10 % of its level from its ' +
      'recent median, after 100 samples; then it stays quiet for 300 samples. Flagged times are also marked on their ' +
      'charts (the header\'s "anomalies" button hides the marks).');
    // A kernel's link keeps the range (and everything else in the address) beside its page.
    const kernelLink = (name) => {
      const p = new URLSearchParams(window.location.search);
      p.set('view', 'kernels');
      p.set('kernel', name);
      return `?${esc(p.toString())}`;
    };
    fill('regressions-table', regressions.regressions.map((r) => {
      const subject = r.kernel != null
        ? `kernel <a href="${kernelLink(r.kernel)}" data-kernel="${esc(r.kernel)}">${esc(r.kernel)}</a>`
        : `model ${esc(r.model)}`;
      return `<tr data-direction="${esc(r.direction)}"><td>${when(r.at_ns)}</td><td>${subject}</td><td>${esc(r.statistic)}</td>` +
        `<td class="num">${fmtDuration(r.before)} → ${fmtDuration(r.after)}</td><td class="num">${signed(r.change)}</td>` +
        `<td><span class="verdict verdict-${r.direction === 'regression' ? 'slower' : 'faster'}">${esc(r.direction)}</span></td>` +
        `<td class="num">${r.p_value.toPrecision(2)}</td></tr>`;
    }), 7, `No change points in ${regressions.subjects} kernels and models: each one's p50 and p99 per ` +
      `${fmtDuration(regressions.interval_ns / 1e6)} are searched for a lasting step (E-divisive means, Welch's t-test p ≤ 0.001, ` +
      `a change of ${(regressions.min_change * 100).toFixed(0)}% or more). Report kernels or requests over a longer range to have some.`);
    state.alertsView.loads++;
  }

  return {
    show(on) {
      shown = on;
      clearInterval(timer);
      if (!on) return;
      load();
      timer = setInterval(() => { if (shown) load(); }, 10000);
    },
    load,
  };
}
