// The dashboard's state in the address bar: the time range, the view and the selection share
// one query string, each part set without disturbing the others. `push`: a browser history
// entry for the change (a new range, view or drill-down, so Back returns to it); else the
// current entry is rewritten (a figure typed, a field picked).
export function setSearchParams(values, { push = false } = {}) {
  const p = new URLSearchParams(window.location.search);
  for (const [key, value] of Object.entries(values)) {
    if (value == null) p.delete(key); else p.set(key, String(value));
  }
  const q = p.toString();
  const url = `${window.location.pathname}${q ? '?' + q : ''}${window.location.hash}`;
  if (url === `${window.location.pathname}${window.location.search}${window.location.hash}`) return;
  if (push) window.history.pushState(null, '', url); else window.history.replaceState(null, '', url);
}
