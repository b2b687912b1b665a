// Reading events back as a user exports them: the report's CSV tables (RFC 4180).
import assert from 'node:assert/strict';

// RFC 4180 rows as objects keyed by the header.
export function parseCsv(text) {
  const rows = [];
  let row = [], field = '', quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; }
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field); rows.push(row); row = []; field = '';
    } else field += c;
  }
  if (field !== '' || row.length) { row.push(field); rows.push(row); }
  const [header, ...body] = rows;
  return body.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i]])));
}

// A report table (kernels, memory, …) of all time.
export async function csvTable(url, table) {
  const r = await fetch(`${url}/api/v1/report?format=csv&table=${table}&window=all`);
  assert.equal(r.status, 200);
  return parseCsv(await r.text());
}

// The rows of a table tagged with run NAME, once the writer has committed them (it commits in
// intervals): read again a moment after the first appear, so a batch still in flight is in.
export async function eventsOfRun(url, table, name) {
  const ofRun = async () => (await csvTable(url, table)).filter((r) => r.tags.includes(`run="${name}"`));
  for (let i = 0; i < 50; i++) {
    if ((await ofRun()).length > 0) {
      await new Promise((r) => setTimeout(r, 300));
      return ofRun();
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return [];
}
