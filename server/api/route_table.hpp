// RouteTable: method and path to a handler, as the REST API routes its requests. A route's
// pattern is an exact path ("/api/v1/runs") or a prefix, one name and a suffix
// ("/api/v1/kernels/{name}/records"; the name is non-empty and may hold '/', as C++ template
// names and file paths do). The first route whose pattern matches the path decides; the methods
// of every route with that same pattern make the Allow of a 405, so an exact path listed before
// a named one ("/api/v1/runs/compare" before "/api/v1/runs/{name}") is never taken for a name.
// A GET route answers HEAD too.
//
// Thread-safety: immutable after construction; find() is safe from any thread.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace perfscope::server {

template <typename Handler>
class RouteTable {
 public:
  struct Route {
    std::string method;   // "GET" (HEAD too) or "POST"
    std::string pattern;  // "/exact/path" or "/prefix/{name}/suffix"
    Handler handler;
  };

  // What a request found: its route's handler and name, or (no handler) whether the path is
  // known at all and, if so, the methods it takes.
  struct Match {
    const Handler* handler = nullptr;
    std::string name;
    bool path_known = false;
    std::string allow;  // "GET, HEAD", "POST", "GET, HEAD, POST": for a 405
  };

  RouteTable(std::initializer_list<Route> routes) {
    for (const Route& r : routes) entries_.push_back(Entry{r, split(r.pattern)});
  }

  Match find(std::string_view method, std::string_view path) const {
    Match m;
    const Pattern* decided = nullptr;
    for (const Entry& e : entries_) {
      if (decided ? !(e.pattern == *decided) : !matches(e.pattern, path, m.name)) continue;
      decided = &e.pattern;
      m.path_known = true;
      if (!m.handler && (method == e.route.method || (method == "HEAD" && e.route.method == "GET"))) {
        m.handler = &e.route.handler;
      }
      if (!m.allow.empty()) m.allow += ", ";
      m.allow += e.route.method == "GET" ? "GET, HEAD" : e.route.method;
    }
    if (!m.handler) m.name.clear();
    return m;
  }

 private:
  struct Pattern {
    std::string prefix, suffix;
    bool named = false;
    bool operator==(const Pattern&) const = default;
  };
  struct Entry {
    Route route;
    Pattern pattern;
  };

  static Pattern split(const std::string& pattern) {
    const auto open = pattern.find('{');
    const auto close = pattern.find('}', open == std::string::npos ? 0 : open);
    if (open == std::string::npos || close == std::string::npos) return Pattern{pattern, {}, false};
    return Pattern{pattern.substr(0, open), pattern.substr(close + 1), true};
  }

  static bool matches(const Pattern& p, std::string_view path, std::string& name) {
    if (!p.named) return path == p.prefix;
    if (path.size() <= p.prefix.size() + p.suffix.size() || !path.starts_with(p.prefix) || !path.ends_with(p.suffix)) {
      return false;
    }
    name = std::string(path.substr(p.prefix.size(), path.size() - p.prefix.size() - p.suffix.size()));
    return true;
  }

  std::vector<Entry> entries_;
};

}  // namespace perfscope::server
