// Light and dark themes: the system's choice (prefers-color-scheme) unless the header's button
// picked one, kept in this browser (localStorage). The theme is the `data-theme` attribute of
// <html> that style.css keys its colours on; charts take their colours from the same CSS
// variables, so they need no redraw.
const KEY = 'perfscope-theme';
const ORDER = ['system', 'light', 'dark'];
const LABEL = { system: '◐ system', light: '☀ light', dark: '☾ dark' };

function stored() {
  try { return localStorage.getItem(KEY) || 'system'; } catch { return 'system'; }
}

function apply(choice, button) {
  if (choice === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = choice;
  if (button) {
    button.textContent = LABEL[choice];
    button.title = `Theme: ${choice} (click for ${ORDER[(ORDER.indexOf(choice) + 1) % ORDER.length]})`;
  }
}

export function initTheme(button) {
  let choice = ORDER.includes(stored()) ? stored() : 'system';
  apply(choice, button);
  button?.addEventListener('click', () => {
    choice = ORDER[(ORDER.indexOf(choice) + 1) % ORDER.length];
    try { localStorage.setItem(KEY, choice); } catch { /* private mode: this page only */ }
    apply(choice, button);
  });
}
