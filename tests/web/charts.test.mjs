// The dashboard's chart helpers, as uPlot calls them (no browser needed): where a series'
// line breaks, and the ticks of a logarithmic axis.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { roundLogTicks, silences, timeTick } from '../../web/src/lib/live_chart.js';

// A stand-in for the uPlot instance the callback is given: its data and a linear x mapping.
const plotOf = (xs, ...series) => ({ data: [xs, ...series], valToPos: (v) => v * 10 });

test('a series is broken only where it fell silent for more than three of its own steps', () => {
  // Sampled every second, nothing between 5 s and 20 s.
  const xs = [0, 1, 2, 3, 4, 5, 20, 21, 22, 23];
  assert.deepEqual(silences(plotOf(xs, xs.map(() => 1)), 1, 0, xs.length - 1), [[50, 200]]);
  // Nulls where another series of the chart was sampled join, however many.
  const rows = [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4];
  const everyOther = rows.map((_, i) => (i % 2 ? null : 7));
  assert.deepEqual(silences(plotOf(rows, everyOther), 1, 0, rows.length - 1), []);
  // Steady data: no gap; a step of 3.5 spacings is one.
  assert.deepEqual(silences(plotOf([0, 1, 2, 3, 4], [1, 1, 1, 1, 1]), 1, 0, 4), []);
  assert.deepEqual(silences(plotOf([0, 1, 2, 3, 6.5, 7.5], [1, 1, 1, 1, 1, 1]), 1, 0, 5), [[30, 65]]);
  // Too few points to know a spacing: drawn as they are.
  assert.deepEqual(silences(plotOf([0, 100], [1, 1]), 1, 0, 1), []);
});

test('a logarithmic axis is labelled at 1, 2 and 5 of each decade, or at the decades when crowded', () => {
  assert.deepEqual(roundLogTicks(0.8, 120, 20), [1, 2, 5, 10, 20, 50, 100]);
  assert.deepEqual(roundLogTicks(0.8, 120, 4), [1, 10, 100]);
  assert.deepEqual(roundLogTicks(0.003, 0.04, 10), [0.005, 0.01, 0.02]);
  // Floating-point decades print round: 0.1 × 3 is not 0.30000000000000004 here.
  assert.ok(roundLogTicks(1e-4, 1e4, 100).every((v) => String(v).length <= 6));
});

test('time ticks read on one line, as precise as their spacing', () => {
  const t = new Date(2026, 10, 26, 14, 5, 30).getTime() / 1000;
  assert.equal(timeTick(t, 10), '14:05:30');
  // Ticks under a second apart name the fraction (minutes and seconds, as many decimals as the step).
  assert.equal(timeTick(t + 0.5, 0.5), '05:30.5');
  assert.equal(timeTick(t + 0.25, 0.25), '05:30.25');
  assert.equal(timeTick(t, 0.5), '05:30.0');
  assert.equal(timeTick(t, 300), '14:05');
  assert.equal(timeTick(t, 86400), '11-26');
  assert.equal(timeTick(new Date(2026, 10, 27, 0, 0, 0).getTime() / 1000, 3600), '11-27');
});
