#include "server/wire/json_scan.hpp"

#include <cstdint>
#include <cstring>

namespace perfscope::server {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF), or 0.
std::size_t utf8_sequence(const unsigned char* p, const unsigned char* end) {
  unsigned char c = p[0];
  auto cont = [&](std::size_t i) { return p + i < end && (p[i] & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;  // overlong
    if (c == 0xED && p[1] >= 0xA0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && p[1] < 0x90) return 0;  // overlong
    if (c == 0xF4 && p[1] >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

unsigned hex4(std::string_view s, std::size_t at) {
  unsigned v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = v * 16 + static_cast<unsigned>(hex_value(s[at + i]));
  return v;
}

void append_utf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

void JsonCursor::skip_ws_slow() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
    ++pos_;
  }
}

bool JsonCursor::fail(std::string message, std::string_view field) {
  if (!error_) error_ = JsonError{pos_, std::string(field), std::move(message)};
  return false;
}

bool JsonCursor::open(char open) {
  if (failed()) return false;
  skip_ws();
  if (pos_ >= text_.size() || text_[pos_] != open) {
    return fail(open == '{' ? "expected an object" : "expected an array");
  }
  ++pos_;
  return true;
}

bool JsonCursor::next(char close, bool& first) {
  if (failed()) return false;
  skip_ws();
  if (pos_ >= text_.size()) return fail("unexpected end of input");
  if (text_[pos_] == close) {
    ++pos_;
    return false;
  }
  if (!first) {
    if (text_[pos_] != ',') return fail(std::string("expected ',' or '") + close + "'");
    ++pos_;
    skip_ws();
  }
  first = false;
  return true;
}

bool JsonCursor::key(std::string_view& raw, bool& escaped, std::string_view field) {
  skip_ws();
  if (pos_ >= text_.size() || text_[pos_] != '"') return fail("expected a member name in double quotes", field);
  if (!string(raw, escaped, field)) return false;
  skip_ws();
  if (pos_ >= text_.size() || text_[pos_] != ':') return fail("expected ':' after a member name");
  ++pos_;
  return true;
}

namespace {

// Whether any of the eight bytes at p is a quote, a backslash, a control character or not
// ASCII (word-at-a-time tests, exact as yes/no answers).
bool special_byte_among(const unsigned char* p) {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  const std::uint64_t below_space = (w - kOnes * 0x20) & ~w & kHigh;
  return ((w & kHigh) | below_space | has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\'))) != 0;
}

}  // namespace

bool JsonCursor::string(std::string_view& raw, bool& escaped, std::string_view field) {
  ++pos_;  // the opening quote
  const std::size_t start = pos_;
  escaped = false;
  const auto* base = reinterpret_cast<const unsigned char*>(text_.data());
  const auto* end = base + text_.size();
  while (pos_ < text_.size()) {
    // Eight plain bytes at a time (printable ASCII other than '"' and '\\'), what most of
    // a string is; any other byte takes the checks below one at a time.
    while (pos_ + 8 <= text_.size() && !special_byte_among(base + pos_)) pos_ += 8;
    if (pos_ >= text_.size()) break;
    unsigned char c = base[pos_];
    if (c == '"') {
      raw = text_.substr(start, pos_ - start);
      ++pos_;
      return true;
    }
    if (c < 0x20) return fail("control characters must be escaped in strings", field);
    if (c == '\\') {
      escaped = true;
      if (pos_ + 1 >= text_.size()) break;
      char e = text_[pos_ + 1];
      if (e == 'u') {
        if (pos_ + 6 > text_.size()) break;
        for (std::size_t i = 2; i < 6; ++i) {
          if (hex_value(text_[pos_ + i]) < 0) return fail("bad \\u escape", field);
        }
        unsigned cp = hex4(text_, pos_ + 2);
        pos_ += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate needs its low half
          if (pos_ + 6 > text_.size() || text_[pos_] != '\\' || text_[pos_ + 1] != 'u') {
            return fail("unpaired UTF-16 surrogate in a \\u escape", field);
          }
          for (std::size_t i = 2; i < 6; ++i) {
            if (hex_value(text_[pos_ + i]) < 0) return fail("bad \\u escape", field);
          }
          unsigned low = hex4(text_, pos_ + 2);
          if (low < 0xDC00 || low > 0xDFFF) return fail("unpaired UTF-16 surrogate in a \\u escape", field);
          pos_ += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return fail("unpaired UTF-16 surrogate in a \\u escape", field);
        }
        continue;
      }
      if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't') {
        return fail("bad escape sequence", field);
      }
      pos_ += 2;
      continue;
    }
    if (c < 0x80) {
      ++pos_;
      continue;
    }
    std::size_t n = utf8_sequence(base + pos_, end);
    if (n == 0) return fail("is not valid UTF-8", field);
    pos_ += n;
  }
  return fail("unterminated string", field);
}

bool JsonCursor::number(JsonValue& out) {
  const std::size_t start = pos_;
  auto digits = [&] {
    std::size_t from = pos_;
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    return pos_ > from;
  };
  if (text_[pos_] == '-') ++pos_;
  if (pos_ < text_.size() && text_[pos_] == '0') {
    ++pos_;
  } else if (!digits()) {
    return fail("invalid number");
  }
  if (pos_ < text_.size() && text_[pos_] == '.') {
    ++pos_;
    out.fraction_or_exponent = true;
    if (!digits()) return fail("invalid number: digits must follow '.'");
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    out.fraction_or_exponent = true;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (!digits()) return fail("invalid number: digits must follow the exponent");
  }
  out.text = text_.substr(start, pos_ - start);
  return true;
}

bool JsonCursor::value(JsonValue& out, std::string_view field) {
  if (failed()) return false;
  skip_ws();
  if (pos_ >= text_.size()) return fail("unexpected end of input", field);
  const std::size_t start = pos_;
  out = JsonValue{};
  char c = text_[pos_];
  auto literal = [&](std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return fail("invalid literal", field);
    pos_ += word.size();
    out.text = word;
    return true;
  };
  switch (c) {
    case '"':
      out.kind = JsonKind::kString;
      return string(out.text, out.escaped, field);
    case '{':
    case '[':
      out.kind = c == '{' ? JsonKind::kObject : JsonKind::kArray;
      if (!skip_container(1, field)) return false;
      out.text = text_.substr(start, pos_ - start);
      return true;
    case 't':
      out.kind = JsonKind::kBool;
      out.boolean = true;
      return literal("true");
    case 'f':
      out.kind = JsonKind::kBool;
      return literal("false");
    case 'n':
      return literal("null");
    default:
      if (c == '-' || is_digit(c)) {
        out.kind = JsonKind::kNumber;
        return number(out);
      }
      return fail("unexpected character", field);
  }
}

// Validates the container starting at pos_ (iteratively over nesting, bounded depth).
bool JsonCursor::skip_container(int depth, std::string_view field) {
  if (depth > kMaxDepth) return fail("nested deeper than 64 levels", field);
  const char open = text_[pos_];
  const char close = open == '{' ? '}' : ']';
  ++pos_;
  bool first = true;
  while (next(close, first)) {
    if (open == '{') {
      std::string_view k;
      bool escaped = false;
      if (!key(k, escaped, field)) return false;
    }
    skip_ws();
    if (pos_ < text_.size() && (text_[pos_] == '{' || text_[pos_] == '[')) {
      if (!skip_container(depth + 1, field)) return false;
    } else {
      JsonValue v;
      if (!value(v, field)) return false;
    }
  }
  return !failed();
}

bool JsonCursor::at_end() {
  skip_ws();
  return pos_ == text_.size();
}

std::string json_unescape(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    char e = raw[++i];
    switch (e) {
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        unsigned cp = hex4(raw, i + 1);
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // validated: its low half follows
          unsigned low = hex4(raw, i + 3);
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          i += 6;
        }
        append_utf8(out, cp);
        break;
      }
      default: out += e; break;  // " \ /
    }
  }
  return out;
}

}  // namespace perfscope::server
