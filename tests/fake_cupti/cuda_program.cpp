// A stand-in for a CUDA program, for machines without a GPU. It does what the CUDA driver does
// at cuInit for a program that `perfscope run` starts: loads the library CUDA_INJECTION64_PATH
// names and calls its InitializeInjection. Then the CUPTI that library chose — the stand-in
// of fake_cupti.cpp — plays back records recorded on a GPU, as CUPTI would deliver them.
// --preload LIB (repeatable) loads a library first, as PyTorch loads its CUDA libraries (its
// CUPTI among them) when it is imported, before CUDA starts.
// Usage: cuda_program RECORDS.ndjson [--preload LIB]...
// Exits 0 whether or not a CUPTI was found (a traced program runs on either way); says on
// stderr which CUPTI played the records back.
#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// The path of the libcupti loaded in this process, or empty.
std::string loaded_cupti() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const char* name = info->dlpi_name ? std::strrchr(info->dlpi_name, '/') : nullptr;
        if (name && std::strncmp(name + 1, "libcupti.so", 11) == 0) *static_cast<std::string*>(out) = info->dlpi_name;
        return 0;
      },
      &found);
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cuda_program RECORDS.ndjson [--preload LIB]...\n");
    return 2;
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--preload") != 0) continue;
    if (!dlopen(argv[i + 1], RTLD_NOW | RTLD_GLOBAL)) {
      std::fprintf(stderr, "cuda_program: %s\n", dlerror());
      return 2;
    }
  }
  if (const char* injection = std::getenv("CUDA_INJECTION64_PATH"); injection && *injection) {
    void* library = dlopen(injection, RTLD_NOW | RTLD_LOCAL);
    auto* initialize = library ? reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection")) : nullptr;
    if (!initialize) {
      std::fprintf(stderr, "cuda_program: no InitializeInjection in %s\n", injection);
      return 2;
    }
    initialize();
  }
  const std::string cupti = loaded_cupti();
  if (cupti.empty()) {
    std::fprintf(stderr, "cuda_program: ran without CUPTI\n");
    return 0;
  }
  void* handle = dlopen(cupti.c_str(), RTLD_NOW | RTLD_NOLOAD);
  auto* replay = handle ? reinterpret_cast<int (*)(const char*)>(dlsym(handle, "fake_cupti_replay")) : nullptr;
  const int played = replay ? replay(argv[1]) : 1;
  if (played == 3) {  // loaded, and refused by the injection library
    std::fprintf(stderr, "cuda_program: ran without CUPTI (%s loaded, not in use)\n", cupti.c_str());
    return 0;
  }
  if (played != 0) {
    std::fprintf(stderr, "cuda_program: %s could not play back %s\n", cupti.c_str(), argv[1]);
    return 2;
  }
  std::fprintf(stderr, "cuda_program: played back through %s\n", cupti.c_str());
  return 0;
}
