// JsonCursor: a strict RFC 8259 reader over text that builds no tree. The ingest path reads
// hundreds of thousands of events a second; a DOM allocates a node per value, while this
// cursor checks the grammar and the UTF-8 of every string and hands back views into the
// original text. Callers walk objects and arrays with open()/next(); each value comes back
// as a JsonValue whose text is a view (strings: the bytes between the quotes, escapes as
// written; arrays and objects: their whole span, already validated, to be walked again with
// a cursor of their own when wanted).
//
// Errors: the first failure stops the cursor and is kept (byte offset, the field being read
// when the caller names one, a message). Not thread-safe; cheap to construct.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace perfscope::server {

enum class JsonKind : std::uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

struct JsonValue {
  JsonKind kind = JsonKind::kNull;
  std::string_view text;
  bool escaped = false;  // a string with backslash escapes: decode with json_unescape()
  bool boolean = false;
  bool fraction_or_exponent = false;  // a number written with '.', 'e' or 'E'

  bool is_null() const { return kind == JsonKind::kNull; }
  bool is_integer_token() const { return kind == JsonKind::kNumber && !fraction_or_exponent; }
};

struct JsonError {
  std::size_t offset = 0;
  std::string field;
  std::string message;
};

class JsonCursor {
 public:
  static constexpr int kMaxDepth = 64;

  explicit JsonCursor(std::string_view text) : text_(text) {}

  // Expects `open` ('{' or '['), after optional whitespace.
  bool open(char open);
  // Steps to the next element or member of the container most recently opened: true when
  // there is one, false at its closing `close` or on error (check failed()).
  bool next(char close, bool& first);
  // Reads a member name and the colon after it; `field` names the enclosing value in errors.
  bool key(std::string_view& raw, bool& escaped, std::string_view field = {});
  // Reads any value; `field` names it in errors (UTF-8, depth).
  bool value(JsonValue& out, std::string_view field = {});
  // The next character after whitespace, or '\0' at the end.
  char peek() {
    skip_ws();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  // True when only whitespace remains.
  bool at_end();

  bool failed() const { return error_.has_value(); }
  const std::optional<JsonError>& error() const { return error_; }
  std::size_t offset() const { return pos_; }

 private:
  // Whitespace is rare between the tokens of a machine-written body: the first byte decides.
  void skip_ws() {
    if (pos_ < text_.size() && static_cast<unsigned char>(text_[pos_]) > ' ') return;
    skip_ws_slow();
  }
  void skip_ws_slow();
  bool fail(std::string message, std::string_view field = {});
  bool string(std::string_view& raw, bool& escaped, std::string_view field);
  bool number(JsonValue& out);
  bool skip_container(int depth, std::string_view field);

  std::string_view text_;
  std::size_t pos_ = 0;
  std::optional<JsonError> error_;
};

// The decoded form of a string's raw bytes (as JsonValue::text of a validated string).
std::string json_unescape(std::string_view raw);
inline std::string json_string(const JsonValue& v) {
  return v.escaped ? json_unescape(v.text) : std::string(v.text);
}

}  // namespace perfscope::server
