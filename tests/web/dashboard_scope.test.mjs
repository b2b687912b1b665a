// Browser tests of the dashboard's range and themes: every table, analysis and export follows
// the chosen scope (5 min, 1 h, 7 d, a dragged span, a run); the range moves, zooms out, takes
// typed ends and Back returns to each earlier one; the light and dark themes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { postEvents } from '../support/perfscope_server.mjs';
import { artifacts, baseUrl, browser } from './dashboard_fixture.mjs';

test('every table, analysis and export follows the scope: 5 min, 1 h, 7 d, a dragged span and a run', async () => {
  const now = Date.now() * 1e6;
  await postEvents(baseUrl, [{ type: 'kernel', name: 'twenty_minutes_ago', stream: '1', start_ns: now - 1200e9, end_ns: now - 1200e9 + 3e6 }]);
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const asked = [];
  page.on('request', (r) => { if (r.url().includes('/api/v1/')) asked.push(r.url()); });
  await page.goto(baseUrl + '/?view=kernels&range=5m');
  await page.waitForFunction(() => window.perfscope.state.eventRefreshes > 0, null, { timeout: 20000 });
  assert.equal(await page.$('[data-testid=kernels-table] tr[data-kernel="twenty_minutes_ago"]'), null, 'not in the last 5 min');
  assert.equal(await page.evaluate(() => document.querySelector('h2 .scope-label').textContent), 'last 5 min');
  asked.length = 0;
  await page.selectOption('#range-pick', '1h');
  await page.waitForSelector('[data-testid=kernels-table] tr[data-kernel="twenty_minutes_ago"]', { timeout: 20000 });
  // Each panel's request carries the hour, and the table holds what the API gives for it.
  await page.waitForFunction(() => window.perfscope.state.analysis !== undefined);
  for (const path of ['/api/v1/kernels?', '/api/v1/memory?', '/api/v1/inference?', '/api/v1/operators?', '/api/v1/processes?', '/api/v1/analysis?']) {
    // Asked at the change (each panel reads at once); waited for, not assumed.
    // (A refresh already under way as the range changed may still ask for the old span.)
    const hour = (u) => u.includes(path) && new URL(u).searchParams.get('from') === 'now-3600s';
    for (let i = 0; i < 200 && !asked.some(hour); i++) await new Promise((r) => setTimeout(r, 100));
    const urls = asked.filter((u) => u.includes(path));
    assert.ok(urls.some(hour), `${path} asked for the hour: ${urls.join(' ')}`);
    assert.ok(hour(urls.at(-1)), `${path}: the newest request is for the hour: ${urls.join(' ')}`);
  }
  const api = await (await fetch(baseUrl + '/api/v1/kernels?from=now-3600s')).json();
  const rows = await page.$$eval('[data-testid=kernels-table] tbody tr[data-kernel]', (trs) => trs.map((t) => t.dataset.kernel));
  assert.deepEqual(rows.sort(), api.kernels.map((k) => k.name).sort());
  assert.deepEqual(await page.$$eval('.scope-label', (els) => [...new Set(els.map((e) => e.textContent))]), ['last hour']);
  const report = await page.getAttribute('[data-testid=exports] a[href*="format=html"]', 'href');
  assert.equal(new URL(report, baseUrl).searchParams.get('from'), 'now-3600s');
  // The exports sit in a menu: opened from the header, it names the scope; Escape closes it.
  const htmlLink = '[data-testid=exports] a[href*="format=html"]';
  assert.equal(await page.isVisible(htmlLink), false, 'the menu starts closed');
  await page.click('[data-testid=exports] summary');
  assert.equal(await page.isVisible(htmlLink), true, 'the menu opens');
  assert.match(await page.textContent('[data-testid=exports] .menu'), /Report of last hour/);
  await page.keyboard.press('Escape');
  assert.equal(await page.isVisible(htmlLink), false, 'Escape closes it');
  // Back to five minutes: the older kernel's row goes, not left over from the hour.
  await page.selectOption('#range-pick', '5m');
  await page.waitForSelector('[data-testid=kernels-table] tr[data-kernel="twenty_minutes_ago"]', { state: 'detached', timeout: 20000 });

  // Each panel's newest request carries the scope `want` names (waited for: each reads at the change).
  const paths = ['/api/v1/kernels?', '/api/v1/memory?', '/api/v1/inference?', '/api/v1/processes?', '/api/v1/analysis?'];
  const carries = async (want, what) => {
    for (const path of paths) {
      const ok = (u) => u.includes(path) && want(new URL(u).searchParams);
      for (let i = 0; i < 200 && !(asked.filter((u) => u.includes(path)).length && ok(asked.filter((u) => u.includes(path)).at(-1))); i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      const urls = asked.filter((u) => u.includes(path));
      assert.ok(urls.length && ok(urls.at(-1)), `${path} for ${what}: ${urls.join(' ')}`);
    }
  };
  // Seven days.
  asked.length = 0;
  await page.selectOption('#range-pick', '7d');
  await carries((q) => q.get('from') === 'now-604800s' && !q.has('run'), '7 days');
  // A span dragged across the CPU chart (on the overview, which shows it): fixed ends, the same
  // on every panel.
  await page.click('[data-testid=views] [data-view-link=overview]');
  const box = await page.locator('[data-testid=chart-cpu] .u-over').boundingBox();
  asked.length = 0;
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.9, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  const fixed = await page.evaluate(() => window.perfscope.range.fixed);
  assert.ok(fixed && fixed.to > fixed.from, 'a fixed span');
  const spanFrom = String(Math.round(fixed.from * 1e9)), spanTo = String(Math.round(fixed.to * 1e9));
  await carries((q) => q.get('from') === spanFrom && q.get('to') === spanTo, 'the dragged span');
  // A run: its events only, over its own span, named on every panel.
  const runStart = now - 600e9, runEnd = now - 540e9;
  await postEvents(baseUrl, [{ type: 'run', name: 'scope-run', start_ns: runStart, end_ns: runEnd },
    { type: 'kernel', name: 'in_the_run', start_ns: runStart + 1e9, end_ns: runStart + 2e9, tags: { run: 'scope-run' } },
    { type: 'kernel', name: 'beside_the_run', start_ns: runStart + 1e9, end_ns: runStart + 2e9 }]);
  await page.waitForFunction(() => [...document.querySelectorAll('#run-pick option')].some((o) => o.value === 'scope-run'),
    null, { timeout: 20000 });
  await page.click('[data-testid=views] [data-view-link=kernels]');  // back where the kernels table is
  asked.length = 0;
  await page.selectOption('#run-pick', 'scope-run');
  await page.waitForSelector('[data-testid=kernels-table] tr[data-kernel="in_the_run"]', { timeout: 20000 });
  await carries((q) => q.get('run') === 'scope-run', 'the run');
  const runScope = await page.evaluate(() => window.perfscope.range.query());
  const inRun = await (await fetch(`${baseUrl}/api/v1/kernels?${runScope}`)).json();
  assert.deepEqual(inRun.kernels.map((k) => k.name), ['in_the_run']);
  assert.deepEqual(await page.$$eval('[data-testid=kernels-table] tbody tr[data-kernel]', (trs) => trs.map((t) => t.dataset.kernel)),
                   ['in_the_run']);
  assert.match(await page.textContent('h2 .scope-label'), /^run scope-run, /);
  assert.equal(new URL(page.url()).searchParams.get('run'), 'scope-run');
  // All runs again: the kernel beside it is back.
  await page.selectOption('#run-pick', '');
  await page.waitForSelector('[data-testid=kernels-table] tr[data-kernel="beside_the_run"]', { timeout: 20000 });
  await page.close();
});

test('the range moves by half a span, zooms out, takes typed ends, and Back returns to each earlier range and view', async () => {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.goto(baseUrl + '/?view=kernels&range=15m');
  await page.waitForFunction(() => window.perfscope.state.eventRefreshes > 0, null, { timeout: 20000 });
  const range = () => page.evaluate(() => ({ live: window.perfscope.range.live, preset: window.perfscope.range.preset,
    fixed: window.perfscope.range.fixed, search: window.location.search }));
  // Zoom out from the last 15 minutes: the next preset at least twice as long, still live.
  await page.click('[data-testid=range-zoom-out]');
  assert.deepEqual(await page.evaluate(() => [window.perfscope.range.live, window.perfscope.range.preset]), [true, '1h']);
  // Half a span earlier: a fixed hour ending half an hour ago.
  const before = Date.now() / 1000;
  await page.click('[data-testid=range-back]');
  const back = await range();
  assert.equal(back.live, false);
  assert.ok(Math.abs(back.fixed.to - back.fixed.from - 3600) < 1e-6);
  assert.ok(Math.abs(back.fixed.to - (before - 1800)) < 30, JSON.stringify(back));
  assert.match(await page.textContent('h2 .scope-label'), /\d{1,2}:\d{2}:\d{2}/);
  // Half a span later reaches now: the hour is live again.
  await page.click('[data-testid=range-forward]');
  assert.deepEqual(await page.evaluate(() => [window.perfscope.range.live, window.perfscope.range.preset]), [true, '1h']);
  // Typed ends, to the second; an end before the start is refused in place.
  await page.click('[data-testid=range-edit]');
  const from = new Date(Date.now() - 7200e3), to = new Date(Date.now() - 3600e3);
  const local = (d) => new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
  await page.fill('[data-testid=range-from]', local(to));
  await page.fill('[data-testid=range-to]', local(from));
  await page.click('[data-testid=range-apply]');
  assert.match(await page.textContent('[data-testid=range-abs-error]'), /after/);
  await page.fill('[data-testid=range-from]', local(from));
  await page.fill('[data-testid=range-to]', local(to));
  await page.click('[data-testid=range-apply]');
  const typed = await range();
  assert.deepEqual([typed.fixed.from, typed.fixed.to], [Math.floor(from / 1000), Math.floor(to / 1000)]);
  assert.equal(await page.isVisible('[data-testid=range-abs]'), false);
  // A view switch, then Back through every step: view, typed span, live hour, the shifted hour,
  // the zoomed-out hour, the first quarter hour — each panel read again over it.
  await page.click('[data-testid=views] [data-view-link=serving]');
  const steps = [['kernels', typed.search], ['kernels', null, '1h'], ['kernels', back.search], ['kernels', null, '1h'],
                 ['kernels', null, '15m']];
  for (const [view, search, preset] of steps) {
    const moves = await page.evaluate(() => window.perfscope.state.historyMoves || 0);
    await page.goBack();
    await page.waitForFunction((n) => (window.perfscope.state.historyMoves || 0) > n, moves);
    assert.equal(await page.getAttribute(`[data-view-link=${view}]`, 'class'), 'current');
    const now = await range();
    if (search) assert.equal(now.search, search);
    else assert.deepEqual([now.live, now.preset], [true, preset]);
  }
  assert.equal(await page.textContent('h2 .scope-label'), 'last 15 min');
  await page.close();
});

const background = (page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor);

test('a light and a dark theme follow the system; the header button picks one, and a reload keeps it', async () => {
  const dark = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: 'dark' });
  await dark.goto(baseUrl + '/');
  assert.equal(await background(dark), 'rgb(17, 18, 23)');
  await dark.close();

  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(baseUrl + '/');
  assert.equal(await background(page), 'rgb(244, 245, 245)');
  assert.match(await page.textContent('[data-testid=theme]'), /system/);
  await page.waitForFunction(() => window.perfscope.charts.cpu.xs.length >= 3, null, { timeout: 15000 });
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: path.join(artifacts, 'dashboard-light.png') });
  // system → light (the same here) → dark, over the system's light.
  await page.click('[data-testid=theme]');
  assert.match(await page.textContent('[data-testid=theme]'), /light/);
  assert.equal(await background(page), 'rgb(244, 245, 245)');
  await page.click('[data-testid=theme]');
  assert.match(await page.textContent('[data-testid=theme]'), /dark/);
  assert.equal(await background(page), 'rgb(17, 18, 23)');
  await page.reload();
  assert.equal(await background(page), 'rgb(17, 18, 23)');
  assert.match(await page.textContent('[data-testid=theme]'), /dark/);
  // Back to the system's.
  await page.click('[data-testid=theme]');
  assert.match(await page.textContent('[data-testid=theme]'), /system/);
  assert.equal(await background(page), 'rgb(244, 245, 245)');
  assert.deepEqual(errors, []);
  await page.close();
});
