// The REST client: every request carries the access token when there is one; a 401 asks the
// user once (every waiting request shares the question) and keeps the token for this tab only
// (sessionStorage).
export const auth = {
  token: sessionStorage.getItem('perfscope.token') || '',
  asking: null,
  headers(extra) { return this.token ? { ...extra, Authorization: 'Bearer ' + this.token } : { ...extra }; },
  ask(reason) {
    if (this.asking) return this.asking;
    const box = document.getElementById('auth');
    document.getElementById('auth-reason').textContent = reason;
    box.hidden = false;
    document.getElementById('auth-token').focus();
    this.asking = new Promise((resolve) => {
      document.getElementById('auth-form').onsubmit = (ev) => {
        ev.preventDefault();
        this.token = document.getElementById('auth-token').value.trim();
        sessionStorage.setItem('perfscope.token', this.token);
        box.hidden = true;
        this.asking = null;
        resolve();
      };
    });
    return this.asking;
  },
};

export async function apiFetch(url, opts = {}) {
  for (;;) {
    const res = await fetch(url, { ...opts, headers: auth.headers(opts.headers || {}) });
    if (res.status !== 401) return res;
    await auth.ask(auth.token ? 'That token was not accepted. Token:' : 'This perfscope server needs an access token:');
  }
}

export async function fetchJson(url) {
  const res = await apiFetch(url, { cache: 'no-store' });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.json();
}
