// Light and dark themes: the system's choice (prefers-color-scheme) unless the header's button
// picked one, kept in this browser (localStorage). The theme is the `data-theme` attribute of
// <html> that style.css keys its colours on. The charts' colours read on either theme; a canvas
// that paints with the theme's CSS variables (the timeline) repaints when the theme changes,
// picked or the system's.
const KEY = 'perfscope-theme';
const ORDER = ['system', 'light', 'dark'];
const LABEL = { system: '◐ system', light: '☀ light', dark: '☾ dark' };

function stored() {
  try { return localStorage.getItem(KEY) || 'system'; } catch { return 'system'; }
}

const listeners = [];
// `fn` runs after every change of the colours in effect.
export function onThemeChange(fn) { listeners.push(fn); }
function changed() { for (const fn of listeners) fn(); }

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
    changed();
  });
  // The system's scheme matters only while no theme is picked.
  window.matchMedia?.('(prefers-color-scheme: light)').addEventListener?.('change', () => { if (choice === 'system') changed(); });
}
