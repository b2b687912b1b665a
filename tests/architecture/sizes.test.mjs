// Sizes a reader can hold: no source file over 600 lines and no function over 120 (the
// outermost function, its nested lambdas and closures included), in every C++, JavaScript and
// Python file of the tree but test data (tests/fixtures) and vendored code. Functions are found
// by their braces (C++, JavaScript) or their indentation (Python) after strings and comments
// are blanked, so the check needs no compiler and reads the tree in a second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { blanked } from './source_text.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const MAX_FILE_LINES = 600;
export const MAX_FUNCTION_LINES = 120;

const SOURCE = /\.(cpp|hpp|h|cu|js|mjs|py)$/;
const EXCLUDED = [/^tests\/fixtures\//, /^third_party\//, /\/node_modules\//, /^web\/vendor\//];

function sourceFiles() {
  const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' });
  return listed.split('\n').filter((f) => SOURCE.test(f) && !EXCLUDED.some((re) => re.test(f)));
}

const CONTROL = /^(if|for|while|switch|catch|else|do|try|return)\b/;
const CONTAINER = /\b(namespace|class|struct|union|enum)\b/;

// What a C++ brace opens, from the text before it: a function's body (the header ends with its
// parameter list and qualifiers), a namespace, class or linkage block, or a braced initializer
// (`b_{a}`, `Type{…}`), whose text runs on into the header of the next brace. Template heads
// are no class.
function cppKind(header, lastLine) {
  const h = header.replace(/\btemplate\s*<[^{};]*?>\s*/g, '');
  if (CONTROL.test(lastLine)) return 'container';
  if (CONTAINER.test(h.split('(')[0]) || /\bextern\s*$/.test(h) || h === '') return 'container';
  if (/\)\s*((const|override|noexcept|final|mutable|&&|&)\s*)*(->\s*[\w:<>,\s*&]+)?$/.test(h)) return 'fn';
  return /[\w>\]]$/.test(h) ? 'init' : 'container';
}

// Outermost functions of C++ or JavaScript text: [{name, line, lines}].
export function braceFunctions(src, js) {
  const text = blanked(src, js);
  const found = [];
  const stack = [];  // {kind: 'fn' | 'block' | 'container', line, header}
  let line = 1;
  let last = 0;
  for (let i = 0; i < text.length; ++i) {
    const c = text[i];
    if (c === '\n') {
      line += 1;
    } else if (c === '{') {
      const header = text.slice(last, i).trim();
      const lastLine = header.split('\n').pop().trim();
      let kind;
      if (stack.some((s) => s.kind === 'fn')) kind = 'block';
      else if (js) kind = (/\bfunction\b[\s\S]*\)$|=>$|\)$/.test(header) && !CONTROL.test(lastLine)) ? 'fn' : 'container';
      else kind = cppKind(header, lastLine);
      stack.push({ kind, line, header: lastLine });
      last = i + 1;
    } else if (c === '}') {
      const open = stack.pop();
      if (open && open.kind === 'fn') found.push({ name: open.header.slice(-70), line: open.line, lines: line - open.line + 1 });
      if (!open || open.kind !== 'init') last = i + 1;
    } else if (c === ';') {
      last = i + 1;
    }
  }
  if (stack.length > 0) found.push({ name: 'braces that do not balance: the finder cannot read this file', line: stack[0].line, lines: Infinity });
  return found;
}

// Python functions (nested ones inside their outermost): a def runs until the first non-blank
// line indented no deeper than it.
export function pythonFunctions(src) {
  const lines = src.split('\n');
  const found = [];
  let open = null;  // {indent, line, name}
  const indentOf = (l) => l.length - l.trimStart().length;
  let inString = false;
  for (let i = 0; i < lines.length; ++i) {
    const l = lines[i];
    const quotes = (l.match(/"""|'''/g) ?? []).length;
    const wasInString = inString;
    if (quotes % 2 === 1) inString = !inString;
    if (wasInString || l.trim() === '' || l.trim().startsWith('#')) continue;
    if (open && indentOf(l) <= open.indent) {
      let end = i - 1;
      while (end > open.line && lines[end].trim() === '') end -= 1;
      found.push({ name: open.name, line: open.line + 1, lines: end - open.line + 1 });
      open = null;
    }
    const def = /^(\s*)(async\s+)?def\s+(\w+)/.exec(l);
    if (!open && def) open = { indent: def[1].length, line: i, name: def[3] };
  }
  if (open) {
    let end = lines.length - 1;
    while (end > open.line && lines[end].trim() === '') end -= 1;
    found.push({ name: open.name, line: open.line + 1, lines: end - open.line + 1 });
  }
  return found;
}

export function functionsOf(file, src) {
  if (file.endsWith('.py')) return pythonFunctions(src);
  return braceFunctions(src, /\.m?js$/.test(file));
}

test('the finders see functions as a reader does', () => {
  const cpp = 'namespace a {\nint f(int x) {\n  if (x) {\n    return "}{"[0];\n  }\n  return 1\'000;\n}\n}  // }\n';
  assert.deepEqual(braceFunctions(cpp, false).map((f) => [f.line, f.lines]), [[2, 6]]);
  const more = 'template <class S>\nvoid A<S>::run() {\n  x();\n}\nB::B(int a) : b_{a}, c_(a) {\n  y();\n}\nextern "C" int f(void) {\n  return 0;\n}\n' +
               'extern "C" {\nint g(void);\n}\nconst int kT[] = {1, 2};\n';
  assert.deepEqual(braceFunctions(more, false).map((f) => [f.line, f.lines]), [[2, 3], [5, 3], [8, 3]]);
  const js = 'export function view({ a = () => {} }) {\n  const f = () => {\n    return `}`.replace(/["{]/g, "");\n  };\n  return f / 2;\n}\nconst o = { a: 1 };\n';
  assert.deepEqual(braceFunctions(js, true).filter((f) => f.lines > 1).map((f) => [f.line, f.lines]), [[1, 6]]);
  const py = 'def f():\n    """\ndef g():\n"""\n    return 1\n\n\nclass C:\n    def m(self):\n        pass\n';
  assert.deepEqual(pythonFunctions(py).map((f) => [f.name, f.lines]), [['f', 5], ['m', 2]]);
});

test(`no source file over ${MAX_FILE_LINES} lines and no function over ${MAX_FUNCTION_LINES}`, () => {
  const tooLong = [];
  const files = sourceFiles();
  assert.ok(files.length > 100, `only ${files.length} source files found`);
  for (const file of files) {
    const src = readFileSync(join(root, file), 'utf8');
    const lines = src.split('\n').length - (src.endsWith('\n') ? 1 : 0);
    if (lines > MAX_FILE_LINES) tooLong.push(`${file}: ${lines} lines`);
    for (const f of functionsOf(file, src)) {
      if (f.lines > MAX_FUNCTION_LINES) tooLong.push(`${file}:${f.line}: a function of ${f.lines} lines (${f.name.trim()})`);
    }
  }
  assert.deepEqual(tooLong, [], 'split these:\n' + tooLong.join('\n'));
});
