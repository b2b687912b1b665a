// The dashboard's state in the address bar: the time range, the view and the selection share
// one query string, each part set without disturbing the others (replaceState: no history entry
// per change).
export function setSearchParams(values) {
  const p = new URLSearchParams(window.location.search);
  for (const [key, value] of Object.entries(values)) {
    if (value == null) p.delete(key); else p.set(key, String(value));
  }
  const q = p.toString();
  window.history.replaceState(null, '', `${window.location.pathname}${q ? '?' + q : ''}${window.location.hash}`);
}
