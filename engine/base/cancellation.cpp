#include "engine/base/cancellation.hpp"

#include <utility>

namespace perfscope {
namespace {
thread_local std::stop_token t_token;
}  // namespace

CancelScope::CancelScope(std::stop_token token) : previous_(std::exchange(t_token, std::move(token))) {}
CancelScope::~CancelScope() { t_token = std::move(previous_); }

std::stop_token current_stop_token() { return t_token; }
bool cancellation_requested() { return t_token.stop_requested(); }

Status cancelled_status() {
  return Status::unavailable("the request was cancelled: its client closed the connection before the answer was ready");
}

}  // namespace perfscope
