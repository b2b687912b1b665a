#include "server/http/request_handler.hpp"

#include <atomic>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "server/http/log.hpp"

namespace perfscope::server {

void handle_guarded(const RequestHandler& handler, HttpRequest request, std::function<void(HttpResponse)> done) {
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto once = [answered, done](HttpResponse response) {
    if (answered->exchange(true)) return;
    try {
      done(std::move(response));
    } catch (...) {
      answered->store(false);  // not answered after all: the 500 below may still go out
      throw;
    }
  };
  std::string what;
  try {
    handler.handle_async(std::move(request), once);
    return;
  } catch (const std::bad_alloc&) {
    what = "out of memory";
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  log_error("a request failed with an exception: " + what);
  once(error_response(500, "internal", "the request failed inside the server: " + what));
}

}  // namespace perfscope::server
