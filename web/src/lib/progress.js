// A request a person waits on (an A/B test, a run comparison): its button is disabled and its
// result area says what is running and for how long, from 300 ms on, so a five-second
// computation never looks like a click that did nothing.
export async function withProgress(form, resultEl, label, work) {
  const button = form.querySelector('button[type=submit]');
  const started = performance.now();
  let timer = 0;
  const tick = () => {
    resultEl.textContent = `${label}… ${((performance.now() - started) / 1000).toFixed(1)} s`;
    resultEl.setAttribute('aria-busy', 'true');
  };
  const shown = setTimeout(() => { tick(); timer = setInterval(tick, 100); }, 300);
  if (button) button.disabled = true;
  form.setAttribute('data-busy', 'true');
  try {
    return await work();
  } finally {
    clearTimeout(shown);
    clearInterval(timer);
    resultEl.removeAttribute('aria-busy');
    form.removeAttribute('data-busy');
    if (button) button.disabled = false;
  }
}
