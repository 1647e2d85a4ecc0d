// Shared by the libFuzzer targets: a per-process scratch file (the library reads models, plans and
// .npy files from paths, as the CLI does), and the rule that a memplan::Error is an expected
// outcome while anything else escaping is a finding.
#pragma once

#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "memplan/error.h"

namespace memplan::fuzz {

// A directory of scratch files for this process: $MEMPLAN_FUZZ_TMP, else /dev/shm (no disk
// writes per input), else the system temp directory.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    namespace fs = std::filesystem;
    fs::path base;
    if (const char* env = std::getenv("MEMPLAN_FUZZ_TMP"); env && *env) base = env;
    else if (::access("/dev/shm", W_OK) == 0) base = "/dev/shm";
    else base = fs::temp_directory_path();
    fs::path d = base / ("memplan_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d.string();
  }();
  return dir;
}

inline std::string scratch_path(const std::string& name) { return scratch_dir() + "/" + name; }

inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "fuzz harness: cannot write %s\n", path.c_str());
    std::abort();
  }
}

// The library logs warnings (spdlog); a fuzzer prints nothing per input.
inline void quiet() { spdlog::set_level(spdlog::level::off); }

// MEMPLAN_FUZZ_STRICT=1: an Error of kind Internal (a broken invariant: "internal error: ...")
// counts as a finding too. Off by default: the short runs in tools/test.sh judge crashes, sanitizer
// reports, hangs and foreign exceptions only.
inline bool strict() {
  static const bool on = [] {
    const char* env = std::getenv("MEMPLAN_FUZZ_STRICT");
    return env && std::string(env) == "1";
  }();
  return on;
}

// Runs `f`; memplan::Error is what every hostile input may end in. Any other exception escaping
// is a finding: it is printed and the process aborts so libFuzzer saves the input.
template <typename F>
void expect_only_errors(const char* stage, F&& f) {
  try {
    f();
  } catch (const memplan::Error& e) {
    if (strict() && e.kind() == memplan::ErrorKind::Internal) {
      std::fprintf(stderr, "fuzz finding: %s: %s\n", stage, e.what());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz finding: %s: a non-memplan exception escaped: %s\n", stage, e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz finding: %s: an unknown exception escaped\n", stage);
    std::abort();
  }
}

// Removes the scratch directory when the process exits normally.
// (It keeps its own copy of the name: statics are destroyed in any order at exit.)
struct ScratchCleanup {
  std::string dir = scratch_dir();
  ~ScratchCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace memplan::fuzz
