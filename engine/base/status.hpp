// Status and Result<T>: expected failures as values (bad input, missing data, I/O errors).
// Callers check ok() before using a Result's value. Exceptions are kept for start-up
// misconfiguration and broken invariants only. Value types; safe to copy between threads.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace perfscope {

enum class StatusCode {
  kOk,
  kInvalidArgument,  // the caller's input is wrong; message names the field
  kNotFound,
  kUnavailable,      // a source or resource is absent or busy; may work later
  kIoError,
  kInternal,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok_status() { return Status(); }
  static Status invalid_argument(std::string message, std::string field = {}) {
    return Status(StatusCode::kInvalidArgument, std::move(message), std::move(field));
  }
  static Status not_found(std::string message, std::string field = {}) {
    return Status(StatusCode::kNotFound, std::move(message), std::move(field));
  }
  static Status unavailable(std::string message) { return Status(StatusCode::kUnavailable, std::move(message)); }
  static Status io_error(std::string message) { return Status(StatusCode::kIoError, std::move(message)); }
  static Status internal(std::string message) { return Status(StatusCode::kInternal, std::move(message)); }

  // The same failure with context in front of its message ("file.db: ...").
  Status with_context(const std::string& context) const { return Status(code_, context + ": " + message_, field_); }
  // The same failure blamed on another input field (a parameter that named the faulty value).
  Status with_field(std::string field) const { return Status(code_, message_, std::move(field)); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The input field at fault, when there is one (empty otherwise).
  const std::string& field() const { return field_; }

 private:
  Status(StatusCode code, std::string message, std::string field = {})
      : code_(code), message_(std::move(message)), field_(std::move(field)) {}

  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string field_;
};

// Either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace perfscope

// Early returns, as Abseil's and LevelDB's code spells them, in functions that return a Status
// or a Result<T>: PERFSCOPE_RETURN_IF_ERROR(expr) returns the Status `expr` gives when it is
// not ok; PERFSCOPE_ASSIGN_OR_RETURN(lhs, expr) declares or assigns `lhs` (`auto rows`,
// `doc.kernels`) from the value of the Result `expr`, or returns its Status. `expr` must not
// hold an unparenthesized comma.
#define PERFSCOPE_RETURN_IF_ERROR(expr)                                                                    \
  do {                                                                                                     \
    if (::perfscope::Status perfscope_status_ = (expr); !perfscope_status_.ok()) return perfscope_status_; \
  } while (false)

#define PERFSCOPE_ASSIGN_OR_RETURN(lhs, expr) \
  PERFSCOPE_ASSIGN_OR_RETURN_IMPL_(PERFSCOPE_STATUS_CONCAT_(perfscope_result_, __LINE__), lhs, expr)
#define PERFSCOPE_ASSIGN_OR_RETURN_IMPL_(result, lhs, expr) \
  auto result = (expr);                                      \
  if (!result.ok()) return result.status();                  \
  lhs = std::move(result).value()
#define PERFSCOPE_STATUS_CONCAT_(a, b) PERFSCOPE_STATUS_CONCAT_INNER_(a, b)
#define PERFSCOPE_STATUS_CONCAT_INNER_(a, b) a##b
