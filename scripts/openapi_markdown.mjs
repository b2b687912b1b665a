// docs/api.md from docs/openapi.json: the REST API reference people read, generated so that it
// cannot drift from the document the tests validate real answers against.
// Usage: node scripts/openapi_markdown.mjs [docs/openapi.json] > docs/api.md
// (the test docs.openapi compares the two; PERFSCOPE_UPDATE_DOCS=1 ctest -R docs.openapi rewrites it).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const cell = (text) => String(text ?? '').replaceAll('|', '\\|').replaceAll('\n', ' ');
const anchor = (text) => text.toLowerCase().replace(/[^a-z0-9 -]/g, '').trim().replaceAll(' ', '-');

// A schema as a short type: `string`, `integer | null`, `[Run]`, `Kernels`, `"gzip"`.
function typeOf(schema) {
  if (!schema) return '';
  if (schema.$ref) {
    const name = schema.$ref.split('/').pop();
    if (schema.$ref.startsWith('#/components/schemas/')) return `[${name}](#${anchor(name)})`;
    const file = schema.$ref.includes('report-v1') ? '../server/api/report.schema.json' : '../server/api/events.schema.json';
    return `[${schema.$ref.includes('#') ? name : path.basename(file)}](${file})`;
  }
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  if (schema.enum) return schema.enum.map((v) => `\`${v}\``).join(' \\| ');
  const types = [].concat(schema.type ?? 'any');
  return types.map((t) => {
    if (t === 'array') return `array of ${typeOf(schema.items)}`;
    if (t === 'object' && schema.additionalProperties && typeof schema.additionalProperties === 'object') {
      return `object of ${typeOf(schema.additionalProperties)}`;
    }
    return t;
  }).join(' \\| ');
}

function parameters(params, doc) {
  if (!params.length) return [];
  const out = ['| Parameter | In | Type | Default | Description |', '| --- | --- | --- | --- | --- |'];
  for (let p of params) {
    if (p.$ref) p = doc.components.parameters[p.$ref.split('/').pop()];
    const def = p.schema?.default !== undefined ? `\`${p.schema.default}\`` : (p.required ? '*required*' : '');
    out.push(`| \`${p.name}\` | ${p.in} | ${typeOf(p.schema)} | ${def} | ${cell(p.description)} |`);
  }
  return out;
}

function responses(rs, doc) {
  const out = ['| Status | Content | Schema |', '| --- | --- | --- |'];
  for (const [status, given] of Object.entries(rs)) {
    const r = given.$ref ? doc.components.responses[given.$ref.split('/').pop()] : given;
    const content = Object.entries(r.content ?? {});
    if (!content.length) out.push(`| ${status} | | ${cell(r.description)} |`);
    for (const [media, { schema }] of content) out.push(`| ${status} | \`${media}\` | ${typeOf(schema)}: ${cell(r.description)} |`);
  }
  return out;
}

// The rows of an object's fields, and of the fields of an object field one level down
// (`error.code`), so that nothing of a response is hidden in a bare "object".
function fieldRows(schema, prefix = '', depth = 0) {
  const required = new Set(schema.required ?? []);
  const rows = [];
  for (const [field, s] of Object.entries(schema.properties ?? {})) {
    rows.push(`| \`${prefix}${field}\` | ${typeOf(s)} | ${required.has(field) ? 'yes' : ''} | ${cell(s.description)} |`);
    if (depth === 0 && s.properties) rows.push(...fieldRows(s, `${prefix}${field}.`, depth + 1));
  }
  return rows;
}

function schemaSection(name, schema) {
  const out = [`### ${name}`, ''];
  if (schema.description) out.push(schema.description, '');
  if (schema.$ref) return [...out, `See ${typeOf(schema)}.`, ''];
  // One of several shapes, or a shape with more fields (allOf): each said.
  for (const [word, list] of [['One of', schema.oneOf], ['All of', schema.allOf]]) {
    if (!list || schema.properties) continue;
    out.push(`${word}:`, '');
    for (const part of list) {
      out.push(`- ${part.$ref || part.const !== undefined || !part.properties ? typeOf(part) : 'an object:'}`);
      if (part.properties && !part.$ref) out.push('', '  | Field | Type | Required | Description |', '  | --- | --- | --- | --- |',
                                                   ...fieldRows(part).map((r) => '  ' + r), '');
    }
    return [...out, ''];
  }
  const props = Object.entries(schema.properties ?? {});
  if (!props.length) return [...out, `Type: ${typeOf(schema)}.`, ''];
  out.push('| Field | Type | Required | Description |', '| --- | --- | --- | --- |');
  out.push(...fieldRows(schema));
  if (schema.oneOf) out.push('', 'One of: ' + schema.oneOf.map((o) => (o.required ?? []).map((f) => `\`${f}\``).join(' and ')).join('; or ') + '.');
  return [...out, ''];
}

export function renderApiReference(doc) {
  const out = [`# ${doc.info.title}`, '',
    '<!-- Generated from docs/openapi.json by scripts/openapi_markdown.mjs: edit the document, not this page. -->', '',
    doc.info.description, '',
    'The machine-readable description is [openapi.json](openapi.json) (OpenAPI 3.1; a server serves it at `/openapi.json`); ' +
    'the tests validate real answers against it. ' +
    `Authentication: ${doc.components.securitySchemes.bearer.description}`, ''];
  const operations = Object.entries(doc.paths).flatMap(([p, item]) => Object.entries(item).map(([m, op]) => ({ p, m, op })));
  out.push('## Endpoints', '');
  for (const tag of doc.tags.map((t) => t.name)) {
    const ops = operations.filter((o) => o.op.tags[0] === tag);
    if (!ops.length) continue;
    out.push(`- **${tag}**: ` + ops.map(({ p, m, op }) => `[${m.toUpperCase()} ${p}](#${anchor(`${m} ${p}`)}) (${op.summary.toLowerCase()})`).join(', '));
  }
  out.push('');
  for (const { p, m, op } of operations) {
    out.push(`### ${m.toUpperCase()} ${p}`, '', `**${op.summary}.** ${op.description}`, '');
    out.push(...parameters(op.parameters ?? [], doc));
    if (op.parameters?.length) out.push('');
    if (op.requestBody) {
      const bodies = Object.entries(op.requestBody.content).map(([media, { schema }]) => `\`${media}\`: ${typeOf(schema)}`);
      out.push(`Request body: ${bodies.join('; ')}.`, '');
    }
    out.push(...responses(op.responses, doc), '');
  }
  out.push('## Schemas', '');
  for (const [name, schema] of Object.entries(doc.components.schemas)) out.push(...schemaSection(name, schema));
  return out.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd() + '\n';
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'openapi.json');
  process.stdout.write(renderApiReference(JSON.parse(readFileSync(file, 'utf8'))));
}
