// The Export menu's report and trace links: with a token they cannot be plain links (no header on a navigation),
// so fetch them and hand the browser the result.
import { apiFetch, auth } from '../lib/api.js';

export function wireExports() {
  // The menu closes on a pick, a click elsewhere or Escape, as a menu does.
  const menu = document.querySelector('[data-testid=exports]');
  if (menu) {
    menu.addEventListener('click', (ev) => { if (ev.target.closest('a')) menu.open = false; });
    document.addEventListener('click', (ev) => { if (menu.open && !menu.contains(ev.target)) menu.open = false; });
    document.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') menu.open = false; });
  }
  document.querySelectorAll('[data-testid=exports] a').forEach((a) => {
    a.addEventListener('click', async (ev) => {
      if (!auth.token) return;
      ev.preventDefault();
      const res = await apiFetch(a.getAttribute('href'));
      const url = URL.createObjectURL(await res.blob());
      if (a.hasAttribute('download')) {
        const tmp = document.createElement('a');
        tmp.href = url;
        tmp.download = a.getAttribute('download');
        tmp.click();
      } else {
        window.open(url, '_blank', 'noopener');
      }
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    });
  });
}
