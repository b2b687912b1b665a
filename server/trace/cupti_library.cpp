#include "server/trace/cupti_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace perfscope::trace {
namespace {

namespace fs = std::filesystem;

bool is_cupti_file(std::string_view name) { return name.starts_with("libcupti.so"); }

// "libcupti.so.13.0.85" → {13, 0, 85}: ordering the versions of one folder, newest first.
std::vector<long> version_of(std::string_view name) {
  std::vector<long> parts;
  std::string_view rest = name.substr(std::string_view("libcupti.so").size());
  while (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    const std::size_t end = std::min(rest.find('.'), rest.size());
    parts.push_back(std::strtol(std::string(rest.substr(0, end)).c_str(), nullptr, 10));
    rest.remove_prefix(end);
  }
  return parts;
}

bool newer_first(const std::string& a, const std::string& b) {
  return version_of(fs::path(a).filename().string()) > version_of(fs::path(b).filename().string());
}

// Files of the program's CUDA major version first (libcupti.so.13 for libcudart.so.13), each
// group newest first; a toolkit's year-numbered file (libcupti.so.2025.3.1) matches none.
void order_for(std::vector<std::string>& files, int cuda_major) {
  std::sort(files.begin(), files.end());  // the same order whatever the directory's
  std::stable_sort(files.begin(), files.end(), newer_first);
  if (cuda_major <= 0) return;
  std::stable_partition(files.begin(), files.end(), [&](const std::string& f) {
    const auto v = version_of(fs::path(f).filename().string());
    return !v.empty() && v.front() == cuda_major;
  });
}

// The libcupti files of a folder, newest version first (a bare libcupti.so, the development
// link, last: it is often absent or dangling outside a toolkit).
std::vector<std::string> cupti_files_in(const fs::path& dir) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code exists_ec;
    if (is_cupti_file(name) && fs::exists(it->path(), exists_ec)) found.push_back(it->path());
  }
  std::vector<std::string> out;
  for (const fs::path& p : found) out.push_back(p.string());
  return out;
}

// The site-packages (or dist-packages) folder a path lies in, or empty.
std::string site_packages_of(std::string_view path) {
  for (std::string_view marker : {"/site-packages/", "/dist-packages/"}) {
    if (std::size_t at = path.find(marker); at != std::string_view::npos) {
      return std::string(path.substr(0, at + marker.size() - 1));
    }
  }
  return {};
}

// An environment at PREFIX has its packages in PREFIX/lib/python*/site-packages.
std::vector<std::string> site_packages_of_prefix(const fs::path& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path lib = prefix / "lib";
  for (fs::directory_iterator it(lib, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->path().filename().string().starts_with("python")) continue;
    for (const char* sub : {"site-packages", "dist-packages"}) {
      if (fs::is_directory(it->path() / sub, ec)) out.push_back((it->path() / sub).string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The prefix of an interpreter at PREFIX/bin/python*, or empty.
std::string prefix_of_interpreter(const std::string& executable) {
  const fs::path exe(executable);
  if (!exe.filename().string().starts_with("python") || exe.parent_path().filename() != "bin") return {};
  return exe.parent_path().parent_path().string();
}

template <typename Fn>
bool resolve(void* handle, Fn*& out, const char* name) {
  out = reinterpret_cast<Fn*>(dlsym(handle, name));
  return out != nullptr;
}

// Fills `api` from `handle`; the name of the first required entry point missing, or empty.
std::string resolve_api(void* handle, cupti::Api& api) {
  std::string missing;
  auto need = [&](auto& fn, const char* name) {
    if (!resolve(handle, fn, name) && missing.empty()) missing = name;
  };
  need(api.get_version, "cuptiGetVersion");
  need(api.get_result_string, "cuptiGetResultString");
  need(api.activity_register_callbacks, "cuptiActivityRegisterCallbacks");
  need(api.activity_enable, "cuptiActivityEnable");
  need(api.activity_disable, "cuptiActivityDisable");
  need(api.activity_flush_all, "cuptiActivityFlushAll");
  need(api.activity_get_next_record, "cuptiActivityGetNextRecord");
  need(api.activity_get_num_dropped_records, "cuptiActivityGetNumDroppedRecords");
  need(api.finalize, "cuptiFinalize");
  need(api.subscribe, "cuptiSubscribe");
  need(api.unsubscribe, "cuptiUnsubscribe");
  need(api.enable_callback, "cuptiEnableCallback");
  need(api.get_timestamp, "cuptiGetTimestamp");
  need(api.get_callback_name, "cuptiGetCallbackName");
  // Optional: CUPTI before 12.6 has no per-function switches.
  resolve(handle, api.activity_enable_runtime_api, "cuptiActivityEnableRuntimeApi");
  resolve(handle, api.activity_enable_driver_api, "cuptiActivityEnableDriverApi");
  return missing;
}

}  // namespace

std::string_view cupti_origin_name(CuptiOrigin origin) {
  switch (origin) {
    case CuptiOrigin::kGiven: return "given";
    case CuptiOrigin::kLoaded: return "loaded by the program";
    case CuptiOrigin::kPythonEnvironment: return "the Python environment's";
    case CuptiOrigin::kToolkit: return "the CUDA toolkit's";
    case CuptiOrigin::kSystem: return "found by the dynamic loader";
  }
  return "unknown";
}

CuptiSearch cupti_search_from_process() {
  CuptiSearch search;
  if (const char* given = std::getenv(kCuptiPathVariable); given && *given) search.given = given;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        if (info->dlpi_name && *info->dlpi_name) static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
        return 0;
      },
      &search.loaded_objects);
  std::error_code ec;
  search.executable = fs::read_symlink("/proc/self/exe", ec).string();
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    if (const char* prefix = std::getenv(var); prefix && *prefix) search.python_prefixes.push_back(prefix);
  }
  for (const std::string& object : search.loaded_objects) {
    const std::string name = fs::path(object).filename().string();
    if (name.starts_with("libcudart.so.")) {
      search.cuda_major = static_cast<int>(std::strtol(name.c_str() + std::string_view("libcudart.so.").size(), nullptr, 10));
      break;
    }
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(var); root && *root) search.toolkit_roots.push_back(root);
  }
  search.toolkit_roots.push_back("/usr/local/cuda");
  return search;
}

std::vector<CuptiCandidate> cupti_candidates(const CuptiSearch& search) {
  std::vector<CuptiCandidate> out;
  auto add = [&](const std::string& path, CuptiOrigin origin) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](const CuptiCandidate& c) {
      std::error_code ec;
      return c.path == path || (origin != CuptiOrigin::kSystem && fs::equivalent(c.path, path, ec));
    });
    if (!seen) out.push_back({path, origin});
  };
  if (!search.given.empty()) {
    out.push_back({search.given, CuptiOrigin::kGiven});
    return out;
  }
  for (const std::string& object : search.loaded_objects) {
    if (is_cupti_file(fs::path(object).filename().string())) add(object, CuptiOrigin::kLoaded);
  }
  if (!out.empty()) return out;  // the program's own, or none: never a second CUPTI in one process
  std::vector<std::string> sites;
  for (const std::string& object : search.loaded_objects) {
    if (std::string site = site_packages_of(object); !site.empty()) sites.push_back(std::move(site));
  }
  std::vector<std::string> prefixes = search.python_prefixes;
  if (std::string prefix = prefix_of_interpreter(search.executable); !prefix.empty()) prefixes.push_back(prefix);
  for (const std::string& prefix : prefixes) {
    for (std::string& site : site_packages_of_prefix(prefix)) sites.push_back(std::move(site));
  }
  std::vector<std::string> seen_sites;
  for (const std::string& site : sites) {
    if (std::find(seen_sites.begin(), seen_sites.end(), site) != seen_sites.end()) continue;
    seen_sites.push_back(site);
    // nvidia/cu13/lib (CUDA 13's wheels), nvidia/cuda_cupti/lib (CUDA 12's): newest first.
    std::vector<std::string> files;
    std::error_code ec;
    for (fs::directory_iterator it(fs::path(site) / "nvidia", ec), end; !ec && it != end; it.increment(ec)) {
      for (std::string& file : cupti_files_in(it->path() / "lib")) files.push_back(std::move(file));
    }
    order_for(files, search.cuda_major);
    for (const std::string& file : files) add(file, CuptiOrigin::kPythonEnvironment);
  }
  for (const std::string& root : search.toolkit_roots) {
    for (const char* sub : {"lib64", "extras/CUPTI/lib64", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"}) {
      std::vector<std::string> files = cupti_files_in(fs::path(root) / sub);
      order_for(files, search.cuda_major);
      for (const std::string& file : files) add(file, CuptiOrigin::kToolkit);
    }
  }
  std::vector<std::string> sonames = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  order_for(sonames, search.cuda_major);
  for (const std::string& soname : sonames) add(soname, CuptiOrigin::kSystem);
  return out;
}

std::string cupti_version_name(std::uint32_t version) {
  if (version < 130000) return "API version " + std::to_string(version);
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

Result<LoadedCupti> load_cupti(const std::vector<CuptiCandidate>& candidates) {
  std::string why;
  for (const CuptiCandidate& candidate : candidates) {
    auto tried = [&](const std::string& what) { why += (why.empty() ? "" : "; ") + candidate.path + ": " + what; };
    void* handle = dlopen(candidate.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      // A soname the loader does not find is the usual case, not worth a word.
      if (candidate.origin != CuptiOrigin::kSystem) {
        const char* err = dlerror();
        tried(err ? err : "could not be loaded");
      }
      continue;
    }
    LoadedCupti loaded;
    if (std::string missing = resolve_api(handle, loaded.api); !missing.empty()) {
      tried("has no " + missing);
      dlclose(handle);
      continue;
    }
    if (loaded.api.get_version(&loaded.version) != cupti::kSuccess) {
      tried("cuptiGetVersion failed");
      dlclose(handle);
      continue;
    }
    if (loaded.version < cupti::kOldestApiVersion) {
      tried("CUPTI " + cupti_version_name(loaded.version) + " is older than CUDA 12.0's");
      dlclose(handle);
      continue;
    }
    loaded.path = candidate.path;
    loaded.origin = candidate.origin;
    return loaded;
  }
  return Status::unavailable("no usable CUPTI library (" + (why.empty() ? std::string("none found") : why) +
                             "); name one with `perfscope run --cupti PATH` or PERFSCOPE_CUPTI_PATH");
}

}  // namespace perfscope::trace
