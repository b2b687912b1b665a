// Finding and loading the CUPTI library the traced program can use. The injection library
// links no CUPTI: a program from pip carries its own (PyTorch's wheels install
// nvidia/cu13/lib/libcupti.so.13 and load it before CUDA starts), a toolkit puts one in
// lib64 or extras/CUPTI/lib64, and a user may name one. The one whose CUDA matches the program
// is the one it already loaded, so that comes first:
//   1. the path given (PERFSCOPE_CUPTI_PATH, `perfscope run --cupti`), and nothing else;
//   2. a libcupti already loaded in the process, and nothing else: two CUPTIs must never hook
//      one driver, so when the program's own is refused nothing traces;
//   3. the Python environment's: nvidia/*/lib under the site-packages of any loaded library
//      and of the environment running the program (VIRTUAL_ENV, CONDA_PREFIX, or the
//      interpreter's bin/python → lib/python*/site-packages);
//   4. the CUDA toolkit's: CUDA_HOME, CUDA_PATH, /usr/local/cuda;
//   5. the dynamic loader's own search (LD_LIBRARY_PATH, the system's cache).
// Within one place, the one of the program's CUDA major version first (that of a loaded
// libcudart.so.N), then the newest.
//
// Functions are thread-compatible; a loaded library is never unloaded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"
#include "server/trace/cupti_api.hpp"

namespace perfscope::trace {

// The CUPTI library to use and no other (set by `perfscope run --cupti`).
inline constexpr const char* kCuptiPathVariable = "PERFSCOPE_CUPTI_PATH";

enum class CuptiOrigin { kGiven, kLoaded, kPythonEnvironment, kToolkit, kSystem };
std::string_view cupti_origin_name(CuptiOrigin origin);  // "given", "loaded by the program", …

struct CuptiCandidate {
  std::string path;  // a file, or a bare soname for the dynamic loader (kSystem)
  CuptiOrigin origin = CuptiOrigin::kSystem;
  friend bool operator==(const CuptiCandidate&, const CuptiCandidate&) = default;
};

// What the search starts from; `cupti_search_from_process` fills it for this process.
struct CuptiSearch {
  std::string given;                        // a path, or empty
  std::vector<std::string> loaded_objects;  // paths of the shared objects in the process
  std::string executable;                   // the program's own path (/proc/self/exe)
  std::vector<std::string> python_prefixes; // VIRTUAL_ENV, CONDA_PREFIX
  int cuda_major = 0;                       // of a loaded libcudart.so.N; 0: unknown
  std::vector<std::string> toolkit_roots;   // CUDA_HOME, CUDA_PATH, /usr/local/cuda
};
CuptiSearch cupti_search_from_process();

// The candidates in the order above, existing files only (but the sonames), each once.
std::vector<CuptiCandidate> cupti_candidates(const CuptiSearch& search);

struct LoadedCupti {
  cupti::Api api;
  std::string path;
  CuptiOrigin origin = CuptiOrigin::kSystem;
  std::uint32_t version = 0;  // cuptiGetVersion's
};
// "13.0.1" for 130001, "API version 26" for the numbering before CUDA 13.
std::string cupti_version_name(std::uint32_t version);

// Loads the first candidate that opens, exports every required entry point and is at least
// CUDA 12.0's; kUnavailable saying what each candidate lacked when none does.
Result<LoadedCupti> load_cupti(const std::vector<CuptiCandidate>& candidates);

}  // namespace perfscope::trace
