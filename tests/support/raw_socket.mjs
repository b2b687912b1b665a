// Raw bytes on a loopback connection, for the tests that send what no HTTP client would.
import net from 'node:net';

// Sends raw bytes to 127.0.0.1:port on a fresh connection; resolves with what came back once
// the server closes ({text, closed: true}) or `wait` ms pass (closed: false). With `then`, those
// bytes follow once the response's header has arrived (a WebSocket client sends frames only
// after the 101).
export function rawExchange(port, bytes, { wait = 1500, then = null } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const chunks = [];
    let done = false;
    const finish = (closed) => {
      if (done) return;
      done = true;
      s.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closed });
    };
    let sentThen = false;
    s.on('data', (c) => {
      chunks.push(c);
      if (then && !sentThen && Buffer.concat(chunks).includes('\r\n\r\n')) {
        sentThen = true;
        s.write(then);
      }
    });
    s.on('end', () => finish(true));
    s.on('close', () => finish(true));
    s.on('error', () => finish(true));
    s.on('connect', () => { for (const b of [].concat(bytes)) s.write(b); });
    setTimeout(() => finish(false), wait);
  });
}
