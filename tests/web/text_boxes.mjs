// Text a reader cannot read, found by comparing boxes in the page: two pieces of text that
// overlap, text cut off by its box (without an ellipsis that says so), and the tick labels
// uPlot draws on its canvases — overlapping their neighbours, or wider than the axis that
// holds them. Runs in the page; returns one line per problem.
export function textProblems(page) {
  return page.evaluate(() => {
    const problems = [];
    const visible = (el) => {
      if (!el.offsetParent && getComputedStyle(el).position !== 'fixed') return false;
      const s = getComputedStyle(el);
      return s.visibility !== 'hidden' && Number(s.opacity) > 0;
    };
    const name = (el) => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}${el.dataset.testid ? `[${el.dataset.testid}]` : ''}` +
      ` "${el.textContent.trim().slice(0, 30)}"`;
    // What of a box shows: cut to every ancestor that clips (an ellipsis, a scrolling panel).
    const shown = (el, r) => {
      let { left, right, top, bottom } = r;
      for (let e = el; e && e !== document.body; e = e.parentElement) {
        const s = getComputedStyle(e);
        if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
        const c = e.getBoundingClientRect();
        if (s.overflowX !== 'visible') { left = Math.max(left, c.left); right = Math.min(right, c.right); }
        if (s.overflowY !== 'visible') { top = Math.max(top, c.top); bottom = Math.min(bottom, c.bottom); }
      }
      return { left, right, top, bottom, width: right - left, height: bottom - top };
    };
    // Each text node's line boxes as shown, with the element holding it.
    const boxes = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.textContent.trim()) continue;
      const el = n.parentElement;
      if (!el || !visible(el) || el.closest('select, option, script, style, [hidden], .u-legend .u-marker')) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      for (const full of range.getClientRects()) {
        const r = shown(el, full);
        if (r.width > 0.5 && r.height > 0.5) boxes.push({ el, r });
      }
    }
    // Overlaps: boxes of different text nodes sharing more than a sliver (1 px each way).
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i].r, b = boxes[j].r;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1 && boxes[i].el !== boxes[j].el) {
          problems.push(`overlap: ${name(boxes[i].el)} and ${name(boxes[j].el)}`);
        }
      }
    }
    // Cut off: an element that clips its content, wider or taller inside than its box, unless
    // it ends in an ellipsis (and a panel, which scrolls).
    for (const el of new Set(boxes.map((b) => b.el))) {
      for (let e = el; e && e !== document.body; e = e.parentElement) {
        const s = getComputedStyle(e);
        if (s.overflowX !== 'hidden' && s.overflowY !== 'hidden') continue;
        if (s.textOverflow === 'ellipsis') break;
        if (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1) {
          problems.push(`cut off: ${name(e)} (${e.scrollWidth}×${e.scrollHeight} in ${e.clientWidth}×${e.clientHeight})`);
        }
        break;
      }
    }
    // The charts' tick labels, as uPlot placed them (its axes' splits and the strings drawn).
    const ctx = document.createElement('canvas').getContext('2d');
    for (const plot of window.perfscope?.plots?.() || []) {
      if (!visible(plot.root)) continue;
      const label = plot.root.closest('.panel')?.querySelector('h2, h3')?.textContent.trim().slice(0, 30) || '?';
      plot.axes.forEach((axis, i) => {
        if (!axis.show || !axis._values || !axis._splits) return;
        ctx.font = axis.font ? axis.font[0] : '12px sans-serif';
        const horizontal = axis.side % 2 === 0;
        const placed = axis._splits.map((v, k) => ({ text: String(axis._values[k] ?? ''), v }))
          .filter((l) => l.text)
          .map((l) => {
            const pos = plot.valToPos(l.v, axis.scale);
            const w = ctx.measureText(l.text).width;
            return { ...l, pos, w };
          })
          .filter((l) => Number.isFinite(l.pos) && l.pos >= -1 && l.pos <= (horizontal ? plot.bbox.width : plot.bbox.height) / devicePixelRatio + 1)
          .sort((a, b) => a.pos - b.pos);
        const fontPx = parseFloat(ctx.font) || 12;
        for (let k = 1; k < placed.length; k++) {
          const gap = placed[k].pos - placed[k - 1].pos;
          const need = horizontal ? (placed[k].w + placed[k - 1].w) / 2 : fontPx;
          if (gap < need) problems.push(`ticks overlap on "${label}" axis ${i}: "${placed[k - 1].text}" and "${placed[k].text}"`);
        }
        if (!horizontal) {
          const room = axis._size - (axis.ticks?.show === false ? 0 : axis.ticks?.size ?? 10) - (axis.gap ?? 5);
          for (const l of placed) {
            if (l.w > room + 1) problems.push(`tick cut off on "${label}" axis ${i}: "${l.text}" (${Math.round(l.w)} px in ${Math.round(room)})`);
          }
        }
      });
    }
    return [...new Set(problems)];
  });
}
