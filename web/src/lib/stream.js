// The live stream (WS /api/v1/stream): subscribes to the families the page draws, hands each
// message to its handler, shows the connection state, and reconnects with exponential backoff
// and jitter (capped at 10 s). `state` is the page's shared state (connection, counters).
import { auth } from './api.js';

function showConnection(state, s) {
  state.connection = s;
  const el = document.getElementById('connection');
  el.textContent = s;
  el.className = 'conn conn-' + s;
}

// handlers: { samples(msg), events(msg), alert(msg), reconnected() }
export function connectStream({ state, families, handlers }) {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const tokenParam = auth.token ? '?access_token=' + encodeURIComponent(auth.token) : '';
  const ws = new WebSocket(`${proto}//${location.host}/api/v1/stream${tokenParam}`);
  state.ws = ws;
  ws.onopen = () => {
    state.attempts = 0;
    showConnection(state, 'live');
    ws.send(JSON.stringify({ subscribe: families }));
    // After an outage, fill the gap the stream missed from the history.
    if (state.reconnects++ > 0) handlers.reconnected();
  };
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if (msg.type === 'samples') handlers.samples(msg);
    else if (msg.type === 'events') handlers.events(msg);
    else if (msg.type === 'alert') handlers.alert(msg);
  };
  ws.onclose = () => {
    state.ws = null;
    const delay = Math.min(10000, 500 * 2 ** state.attempts) * (0.5 + Math.random() / 2);
    state.attempts++;
    showConnection(state, state.attempts > 5 ? 'offline' : 'reconnecting');
    setTimeout(() => connectStream({ state, families, handlers }), delay);
  };
}
