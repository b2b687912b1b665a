// Field names checked the way `kubectl apply --validate=strict` checks them: every key of an
// object must be a field its kind declares. The schemas of kubernetes-models check types and
// required fields but let unknown keys through (so `readinesProbe` would pass, and the probe be
// silently missing); the field names come from the same models' TypeScript declarations, which
// list every field of every type, with the type of each.
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';

const cache = new Map();  // declaration file → { fields, imports } of its exported interface

// The top-level `"name"?: Type;` members of a `{ … }` body (types may nest braces, <> and ()).
function members(body) {
  const out = new Map();
  let i = 0;
  while (i < body.length) {
    if (body.startsWith('/**', i)) { i = body.indexOf('*/', i) + 2; continue; }
    const m = /^\s*"([^"]+)"\??:\s*/.exec(body.slice(i));
    if (!m) { i++; continue; }
    i += m[0].length;
    let depth = 0, j = i;
    for (; j < body.length; j++) {
      const c = body[j];
      if ('{<(['.includes(c)) depth++;
      else if ('}>)]'.includes(c)) depth--;
      else if (c === ';' && depth === 0) break;
    }
    out.set(m[1], body.slice(i, j).trim());
    i = j + 1;
  }
  return out;
}

// The body of the `{ … }` starting at `open`.
function braced(text, open) {
  let depth = 0;
  for (let j = open; j < text.length; j++) {
    if (text[j] === '{') depth++;
    else if (text[j] === '}' && --depth === 0) return text.slice(open + 1, j);
  }
  throw new Error('unbalanced braces');
}

function declaration(file) {
  if (cache.has(file)) return cache.get(file);
  const text = readFileSync(file, 'utf8');
  const imports = new Map();
  for (const m of text.matchAll(/import \{([^}]+)\} from "([^"]+)"/g)) {
    const target = m[2].startsWith('.') ? path.resolve(path.dirname(file), m[2]) : path.join(nodeModules, m[2]);
    for (const name of m[1].split(',').map((s) => s.trim()).filter(Boolean)) {
      imports.set(name.split(/\s+as\s+/).pop(), target.replace(/\.js$/, '') + '.d.ts');
    }
  }
  const head = /export interface \w+(?: extends ([\w, ]+))?\s*\{/.exec(text);
  if (!head) {
    cache.set(file, null);
    return null;
  }
  // Each field with the declaration its type is written in (an inherited one's is its parent's).
  const result = { fields: new Map(), imports, typeMeta: false };
  for (const [k, t] of members(braced(text, head.index + head[0].length - 1))) result.fields.set(k, { type: t, owner: result });
  for (const parent of (head[1] || '').split(',').map((s) => s.trim()).filter(Boolean)) {
    if (parent === 'TypeMeta') { result.typeMeta = true; continue; }
    const inherited = imports.has(parent) && existsSync(imports.get(parent)) ? declaration(imports.get(parent)) : null;
    if (!inherited) throw new Error(`${file}: cannot resolve ${parent}`);
    for (const [k, f] of inherited.fields) if (!result.fields.has(k)) result.fields.set(k, f);
    result.typeMeta ||= inherited.typeMeta;
  }
  cache.set(file, result);
  return result;
}

let nodeModules = '';

// Problems ("spec.template.spec.containers[0].readinesProbe: no such field") of `value` as `type`
// (a type's text in `decl`'s file).
function check(value, type, decl, where, problems) {
  type = type.trim();
  if (value === null || value === undefined) return;
  if (type.startsWith('Array<') && type.endsWith('>')) {
    if (Array.isArray(value)) value.forEach((v, i) => check(v, type.slice(6, -1), decl, `${where}[${i}]`, problems));
    return;
  }
  if (type.endsWith('[]')) {
    if (Array.isArray(value)) value.forEach((v, i) => check(v, type.slice(0, -2), decl, `${where}[${i}]`, problems));
    return;
  }
  if (typeof value !== 'object' || Array.isArray(value)) return;  // types are the schemas' to check
  if (type.startsWith('{')) {
    const body = braced(type, 0);
    const map = /^\s*\[key: string\]:\s*([^]*?);?\s*$/.exec(body);
    if (map) {
      for (const [k, v] of Object.entries(value)) check(v, map[1], decl, `${where}.${k}`, problems);
      return;
    }
    const inline = new Map([...members(body)].map(([k, t]) => [k, { type: t, owner: decl }]));
    fields(value, inline, where, problems, false);
    return;
  }
  const file = decl.imports.get(type);
  if (!file || !existsSync(file)) return;  // a primitive, a union or an alias of one
  const inner = declaration(file);
  if (inner) fields(value, inner.fields, where, problems, inner.typeMeta);
}

function fields(value, known, where, problems, typeMeta) {
  for (const [k, v] of Object.entries(value)) {
    if (typeMeta && (k === 'apiVersion' || k === 'kind')) continue;
    if (!known.has(k)) {
      problems.push(`${where ? where + '.' : ''}${k}: no such field`);
      continue;
    }
    const { type, owner } = known.get(k);
    check(v, type, owner, where ? `${where}.${k}` : k, problems);
  }
}

// The unknown fields of a Kubernetes object whose model's declaration is `dtsFile`.
export function unknownFields(object, dtsFile, modules) {
  nodeModules = modules;
  const decl = declaration(dtsFile);
  if (!decl) throw new Error(`no interface in ${dtsFile}`);
  const problems = [];
  fields(object, decl.fields, '', problems, decl.typeMeta);
  return problems;
}
