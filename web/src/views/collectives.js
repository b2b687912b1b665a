// A multi-GPU run's ranks and collectives on its page (GET /api/v1/collectives?window=all&tag.run=NAME: the
// run's own span): the straggler named or why none is, each rank's step as one stacked bar
// (compute alone, compute with communication beside it, communication alone, idle) in the
// manner of Holistic Trace Analysis's temporal breakdown, and a row per collective operation and
// size: where NCCL's profiler plugin described them, with NCCL's algorithm and protocol and the
// bus bandwidth reached (nccl-tests' formula) against the GPUs' NVLink peak.
import { esc, fmtBytes, fmtCount, ms } from '../lib/format.js';

const pct = (v) => (v == null ? '–' : (v * 100).toFixed(0) + '%');

// The four parts of a rank's step (or run), in the order the bar draws them: over one stretch
// they add up to it; per step they are medians (see bar()).
const PARTS = [
  ['compute', 'compute alone', (b) => b.compute_ms - b.overlapped_ms],
  ['overlapped', 'communication beside compute', (b) => b.overlapped_ms],
  ['exposed', 'communication alone', (b) => b.exposed_ms],
  ['idle', 'idle', (b) => b.idle_ms],
];

// Each part as wide as its share of the parts' sum: per step the parts are medians, which need
// not add up to the median step exactly.
function bar(b) {
  const total = PARTS.reduce((sum, [, , of]) => sum + Math.max(0, of(b)), 0);
  if (!(total > 0)) return '';
  return `<div class="stack" role="img" aria-label="${PARTS.map(([, label, of]) => `${label} ${ms(of(b))} ms`).join(', ')}">` +
    PARTS.map(([key, label, of]) => {
      const share = Math.max(0, of(b)) / total;
      return `<span class="part-${key}" data-part="${key}" style="width:${(share * 100).toFixed(2)}%" title="${label}: ${ms(of(b))} ms (${pct(share)})"></span>`;
    }).join('') + '</div>';
}

const legend = () => `<div class="stack-legend muted">${PARTS.map(([key, label]) =>
  `<span><i class="part-${key}"></i>${label}</span>`).join('')}</div>`;

function stragglerLine(job) {
  const s = job.straggler;
  if (s) {
    return `<strong>Straggler: rank ${esc(s.rank)}</strong> — last to arrive in ` +
      `${pct(s.last_share)} of the collectives, ${ms(s.extra_per_step_ms)} ms more compute per ${ms(s.step_median_ms)} ms step; ` +
      'the other ranks wait for it inside each collective.';
  }
  return `No straggler: ${esc(job.no_straggler || 'none found')}.`;
}

const SMALL_BYTES = 1024 * 1024;
const gbps = (v) => (v == null ? '–' : v >= 100 ? v.toFixed(0) : v.toFixed(1));

// The operations table: with sizes, NCCL's choices and bus bandwidth where NCCL described them.
function opsTable(job, peakGbps) {
  const described = job.ops.some((o) => o.bytes != null);
  const narrow = described ? ' wide-only' : '';
  const head = '<th>Collective</th>' + (described ? '<th class="num">Size</th><th class="wide-only">Algorithm</th>' : '') +
    `<th class="num">Count</th><th class="num">p50</th><th class="num${narrow}">p99</th><th class="num${narrow}">Waiting</th>` +
    (described ? '<th class="num">Bus bw GB/s</th><th class="num">Of peak</th>' : '');
  const rows = job.ops.map((o) => {
    const low = o.busbw_share_of_peak != null && o.bytes >= 16 * 1024 * 1024 && o.busbw_share_of_peak < 0.5;
    return `<tr data-op="${esc(o.op)}" data-bytes="${o.bytes ?? ''}"><td>${esc(o.op)}</td>` +
      (described ? `<td class="num">${o.bytes == null ? '–' : fmtBytes(o.bytes)}</td>` +
        `<td class="wide-only">${o.algorithm ? esc(`${o.algorithm} · ${o.protocol}`) : '–'}</td>` : '') +
      `<td class="num">${fmtCount(o.instances)}</td><td class="num">${ms(o.duration_p50_ms)}</td>` +
      `<td class="num${narrow}">${ms(o.duration_p99_ms)}</td><td class="num${narrow}">${pct(o.wait_share)}</td>` +
      (described ? (o.bytes != null && o.bytes < SMALL_BYTES
        // A message this small is latency-bound: its bandwidth says nothing of the links.
        ? '<td class="num muted" title="under 1 MiB: latency-bound">–</td><td class="num muted">–</td>'
        : `<td class="num">${gbps(o.busbw_p50_gb_per_second)}</td><td class="num${low ? ' bad' : ''}">${pct(o.busbw_share_of_peak)}</td>`)
        : '') + '</tr>';
  }).join('');
  const note = described
    ? 'Bus bandwidth: the bytes over the time from the last rank\'s arrival to the end, times nccl-tests\' factor ' +
      '(all-reduce 2(n−1)/n), median, for messages of 1 MiB and more; ' + (peakGbps ? `of the ${gbps(peakGbps)} GB/s NVLink peak per GPU and direction.` :
        'NVML gives no NVLink peak for these GPUs.')
    : 'Bus bandwidth needs message sizes: NCCL\'s profiler plugin (loaded by perfscope run, NCCL 2.27 and newer) gives ' +
      'them; kernel names do not.';
  return { html: `<div class="table-scroll"><table class="grid" data-testid="collectives-ops"><thead><tr>${head}</tr></thead>` +
    `<tbody>${rows}</tbody></table></div>`, note };
}

// The paths between the job's GPUs: " · GPUs 0–1 over NV18 (NVSwitch)", or '' where unknown.
function linksText(links) {
  if (!links || !links.length) return '';
  return ' · ' + links.map((l) => `GPUs ${esc(l.a)}–${esc(l.b)} over ${esc(l.link)}${l.via_nvswitch ? ' (NVSwitch)' : ''}`).join(', ');
}

// The section's HTML for one job (a run's collectives), or '' when it has none. `peakGbps`: the
// GPUs' link peak (GET /api/v1/collectives' link_peak_gb_per_second), or null.
export function collectivesHtml(job, peakGbps = null) {
  if (!job || !job.ranks.length) return '';
  const perStep = job.steps > 0;
  const stepWord = job.step_collectives === 1 ? 'one collective' : `${job.step_collectives} collectives`;
  const summary = `${job.ranks.length} ranks (by ${esc(job.ranks_from)}) · ${fmtCount(job.matched)} collectives matched across them` +
    (perStep ? ` · ${fmtCount(job.steps)} steps of ${stepWord}` : ' · no repeating step found: figures over the whole run') +
    linksText(job.links) +
    (job.mismatch ? ` · ${esc(job.mismatch)}` : '');
  const rows = job.ranks.map((r) => {
    const b = (perStep && r.per_step) || r.breakdown;
    return `<tr data-rank="${esc(r.rank)}"><td>${esc(r.rank)}</td><td>${esc(r.device)}</td><td class="stack-cell">${bar(b)}</td>` +
      `<td class="num">${ms(b.compute_ms)}</td><td class="num">${ms(b.exposed_ms)}</td><td class="num">${pct(b.overlap_ratio)}</td>` +
      `<td class="num">${pct(r.wait_share)}</td><td class="num">${fmtCount(r.last_arrivals)}</td></tr>`;
  }).join('');
  const ops = opsTable(job, peakGbps);
  return `<h3>Ranks and collectives</h3><div class="muted" data-testid="collectives-summary">${summary}</div>` +
    `<p data-testid="collectives-straggler">${stragglerLine(job)}</p>` +
    `<div class="table-scroll"><table class="grid" data-testid="collectives-ranks"><thead><tr><th>Rank</th><th>GPU</th>` +
    `<th>${perStep ? 'A step (median)' : 'The run'}</th><th class="num">Compute</th><th class="num">Exposed comm.</th>` +
    `<th class="num">Overlap</th><th class="num">Waiting</th><th class="num">Last in</th></tr></thead><tbody>${rows}</tbody></table></div>` +
    legend() + ops.html +
    '<div class="muted">Milliseconds. Waiting: the share of a rank\'s time in collectives spent before the last rank arrived. ' +
    `Overlap: the share of its communication that ran beside its compute. ${ops.note}</div>`;
}
