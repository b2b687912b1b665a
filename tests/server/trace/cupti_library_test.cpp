// Where the injection library looks for CUPTI, in what order, and what it refuses; loading
// the stand-in CUPTI (tests/fake_cupti) through the same code path as a real one.
#include "server/trace/cupti_library.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.hpp"

namespace perfscope::trace {
namespace {

namespace fs = std::filesystem;

// Creates an empty file (and its folders) under `root`; its path.
std::string touch(const testing::TempDir& root, const std::string& relative) {
  const fs::path p = fs::path(root.str()) / relative;
  fs::create_directories(p.parent_path());
  std::ofstream(p).put('\0');
  return p.string();
}

std::vector<std::string> paths_of(const std::vector<CuptiCandidate>& candidates) {
  std::vector<std::string> out;
  for (const auto& c : candidates) out.push_back(c.path);
  return out;
}

TEST(CuptiSearch, AGivenPathIsTheOnlyCandidate) {
  testing::TempDir dir;
  CuptiSearch s;
  s.given = touch(dir, "mine/libcupti.so.12");
  s.loaded_objects = {touch(dir, "lib/libcupti.so.13")};
  s.toolkit_roots = {dir.str()};
  EXPECT_EQ(cupti_candidates(s), (std::vector<CuptiCandidate>{{s.given, CuptiOrigin::kGiven}}));
}

TEST(CuptiSearch, ItsPythonEnvironmentThenTheToolkitThenTheLoader) {
  testing::TempDir dir;
  const std::string site = "venv/lib/python3.12/site-packages/";
  const std::string cu13 = touch(dir, site + "nvidia/cu13/lib/libcupti.so.13");
  const std::string cu12 = touch(dir, site + "nvidia/cuda_cupti/lib/libcupti.so.12");
  touch(dir, site + "nvidia/cublas/lib/libcublas.so.12");  // not CUPTI
  const std::string kit_old = touch(dir, "cuda/extras/CUPTI/lib64/libcupti.so.12.8");
  const std::string kit_new = touch(dir, "cuda/extras/CUPTI/lib64/libcupti.so.13.0.85");
  CuptiSearch s;
  s.loaded_objects = {"/lib/x86_64-linux-gnu/libc.so.6", dir.str() + "/" + site + "torch/lib/libtorch_cuda.so"};
  s.toolkit_roots = {dir.str() + "/cuda", dir.str() + "/nowhere"};
  const auto candidates = cupti_candidates(s);
  EXPECT_EQ(paths_of(candidates), (std::vector<std::string>{cu13, cu12, kit_new, kit_old, "libcupti.so.13",
                                                            "libcupti.so.12", "libcupti.so"}));
  EXPECT_EQ(candidates[0].origin, CuptiOrigin::kPythonEnvironment);
  EXPECT_EQ(candidates[2].origin, CuptiOrigin::kToolkit);
  EXPECT_EQ(candidates.back().origin, CuptiOrigin::kSystem);
  // A program of CUDA 12 (its libcudart.so.12 loaded): CUDA 12's first in every place.
  s.cuda_major = 12;
  EXPECT_EQ(paths_of(cupti_candidates(s)), (std::vector<std::string>{cu12, cu13, kit_old, kit_new, "libcupti.so.12",
                                                                     "libcupti.so.13", "libcupti.so"}));
}

TEST(CuptiSearch, ACuptiTheProgramLoadedIsTheOnlyCandidate) {
  testing::TempDir dir;
  const std::string own = touch(dir, "own/libcupti.so.13");
  touch(dir, "venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13");
  CuptiSearch s;
  s.loaded_objects = {dir.str() + "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", own};
  s.toolkit_roots = {dir.str() + "/cuda"};
  // Refused, it leaves the program untraced: a second CUPTI must never hook the same driver.
  EXPECT_EQ(cupti_candidates(s), (std::vector<CuptiCandidate>{{own, CuptiOrigin::kLoaded}}));
}

TEST(CuptiSearch, TheEnvironmentsOwnBeforeAnythingIsImported) {
  testing::TempDir dir;
  const std::string cupti = touch(dir, "venv/lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
  CuptiSearch s;
  s.executable = dir.str() + "/venv/bin/python3.11";  // an interpreter installed in the prefix
  EXPECT_EQ(cupti_candidates(s).front(), (CuptiCandidate{cupti, CuptiOrigin::kPythonEnvironment}));
  s.executable = dir.str() + "/venv/bin/myprogram";  // not an interpreter: no environment of its own
  EXPECT_EQ(cupti_candidates(s).front().origin, CuptiOrigin::kSystem);
  // A venv's bin/python links to the system's interpreter, which /proc/self/exe names: the
  // environment comes from VIRTUAL_ENV (or CONDA_PREFIX) then.
  s.executable = "/usr/bin/python3.11";
  s.python_prefixes = {dir.str() + "/venv"};
  EXPECT_EQ(cupti_candidates(s).front(), (CuptiCandidate{cupti, CuptiOrigin::kPythonEnvironment}));
}

TEST(CuptiSearch, ALibraryLoadedFromTheEnvironmentIsNamedOnceAsLoaded) {
  testing::TempDir dir;
  const std::string cupti = touch(dir, "env/site-packages/nvidia/cu13/lib/libcupti.so.13");
  CuptiSearch s;
  s.loaded_objects = {cupti};
  const auto candidates = cupti_candidates(s);
  EXPECT_EQ(candidates.front(), (CuptiCandidate{cupti, CuptiOrigin::kLoaded}));
  EXPECT_EQ(std::count_if(candidates.begin(), candidates.end(), [&](const auto& c) { return c.path == cupti; }), 1);
}

TEST(CuptiVersion, NamesBothNumberings) {
  EXPECT_EQ(cupti_version_name(130001), "13.0.1");
  EXPECT_EQ(cupti_version_name(130200), "13.2.0");
  EXPECT_EQ(cupti_version_name(26), "API version 26");
}

TEST(CuptiLoad, TheStandInLoadsThroughTheSamePath) {
  auto loaded = load_cupti({{PERFSCOPE_FAKE_CUPTI, CuptiOrigin::kGiven}});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->version, 130001u);
  EXPECT_EQ(loaded->origin, CuptiOrigin::kGiven);
  EXPECT_NE(loaded->api.activity_enable_runtime_api, nullptr);
  const char* name = nullptr;
  ASSERT_EQ(loaded->api.get_callback_name(cupti::kDomainRuntimeApi, 211, &name), cupti::kSuccess);
  EXPECT_STREQ(name, "cudaLaunchKernel_v7000");
}

TEST(CuptiLoad, SaysWhatEachCandidateLacked) {
  testing::TempDir dir;
  const std::string not_a_library = touch(dir, "libcupti.so.13");
  auto loaded = load_cupti({{not_a_library, CuptiOrigin::kToolkit},
                            {PERFSCOPE_FAKE_NVML, CuptiOrigin::kLoaded},  // a library, but not CUPTI
                            {"libcupti-does-not-exist.so", CuptiOrigin::kSystem}});
  ASSERT_FALSE(loaded.ok());
  const std::string& m = loaded.status().message();
  EXPECT_NE(m.find(not_a_library + ": "), std::string::npos) << m;
  EXPECT_NE(m.find(std::string(PERFSCOPE_FAKE_NVML) + ": has no cuptiGetVersion"), std::string::npos) << m;
  EXPECT_EQ(m.find("does-not-exist"), std::string::npos) << m;  // the loader's usual miss goes unsaid
  EXPECT_NE(m.find("perfscope run --cupti PATH"), std::string::npos) << m;
}

TEST(CuptiLoad, NoneFoundSaysSo) {
  auto loaded = load_cupti({{"libcupti-does-not-exist.so.13", CuptiOrigin::kSystem}});
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("no usable CUPTI library (none found)"), std::string::npos)
      << loaded.status().message();
}

TEST(CuptiLoad, RefusesACuptiOlderThanTheRecordsDeclared) {
  ::setenv("PERFSCOPE_FAKE_CUPTI_VERSION", "18", 1);  // CUDA 11.8's
  auto loaded = load_cupti({{PERFSCOPE_FAKE_CUPTI, CuptiOrigin::kGiven}});
  ::unsetenv("PERFSCOPE_FAKE_CUPTI_VERSION");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("API version 18 is older than CUDA 12.0's"), std::string::npos)
      << loaded.status().message();
}

}  // namespace
}  // namespace perfscope::trace
