// Source text as the architecture checks read it: code without its strings and comments.
// The text with strings, characters and comments replaced by spaces (newlines kept), so that
// braces inside them do not count. C++ raw strings and digit separators (1'000) included.
export function blanked(src, js) {
  let out = '';
  let i = 0;
  const n = src.length;
  const blank = (s) => s.replace(/[^\n]/g, ' ');
  while (i < n) {
    const c = src[i];
    if (src.startsWith('//', i)) {
      let j = src.indexOf('\n', i);
      if (j < 0) j = n;
      out += blank(src.slice(i, j));
      i = j;
    } else if (src.startsWith('/*', i)) {
      let j = src.indexOf('*/', i + 2);
      j = j < 0 ? n : j + 2;
      out += blank(src.slice(i, j));
      i = j;
    } else if (!js && src.startsWith('R"', i) && /^R"[^(\s]{0,16}\(/.test(src.slice(i, i + 20))) {
      const delimiter = src.slice(i + 2, src.indexOf('(', i));
      const end = `)${delimiter}"`;
      let j = src.indexOf(end, i);
      j = j < 0 ? n : j + end.length;
      out += blank(src.slice(i, j));
      i = j;
    } else if (!js && c === "'" && /[0-9a-fA-F]/.test(src[i - 1] ?? '') && /[0-9a-fA-F]/.test(src[i + 1] ?? '')) {
      out += c;  // a digit separator
      i += 1;
    } else if (js && c === '/' && regexMayStart(out)) {
      // A regular expression literal: to its closing slash, outside a character class.
      let j = i + 1;
      let inClass = false;
      while (j < n && src[j] !== '\n' && (src[j] !== '/' || inClass)) {
        if (src[j] === '\\') j += 1;
        else if (src[j] === '[') inClass = true;
        else if (src[j] === ']') inClass = false;
        j += 1;
      }
      out += blank(src.slice(i, j + 1));
      i = j + 1;
    } else if (c === '"' || c === "'" || (js && c === '`')) {
      let j = i + 1;
      while (j < n && src[j] !== c) j += src[j] === '\\' ? 2 : 1;
      out += blank(src.slice(i, j + 1));
      i = j + 1;
    } else {
      out += c;
      i += 1;
    }
  }
  return out;
}

// Whether a slash after `before` (the text so far) starts a regular expression rather than
// dividing: after an operator, an opening bracket, a comma or a keyword that takes a value.
function regexMayStart(before) {
  const t = before.trimEnd();
  if (t === '') return true;
  return /[(,=:[!&|?{};+\-*%<>~^]$/.test(t) || /\b(return|typeof|case|in|of|void|yield|await)$/.test(t);
}
