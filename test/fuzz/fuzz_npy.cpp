// fuzz_npy: bytes -> a .npy file -> read_npy_info, read_npy_data and read_npy (what `memplan run
// --input` reads). An array that reads back is written with write_npy and read again: the same
// dtype, shape and bytes must come back. A memplan::Error is an expected outcome; anything else
// (a crash, a sanitizer report, a foreign exception, a round trip that differs) is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fuzz_support.h"
#include "io/npy.h"

namespace {

using namespace memplan;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  memplan::fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static memplan::fuzz::ScratchCleanup cleanup;
  const std::string path = memplan::fuzz::scratch_path("input.npy");
  const std::string again = memplan::fuzz::scratch_path("again.npy");
  memplan::fuzz::write_file(path, data, size);
  memplan::fuzz::expect_only_errors("npy", [&] {
    const io::NpyInfo info = io::read_npy_info(path);
    if (info.data_offset > size || info.data_bytes != size - info.data_offset)
      finding("read_npy_info accepted a header whose payload does not end the file");
    std::vector<std::byte> direct(info.data_bytes);
    io::read_npy_data(path, info, direct.data(), direct.size());
    const io::NpyArray a = io::read_npy(path);
    if (!(a.info == info) || a.data != direct) finding("read_npy disagrees with read_npy_info + read_npy_data");
    io::write_npy(again, a.info.dtype, a.info.shape, a.data.data(), a.data.size());
    const io::NpyArray b = io::read_npy(again);
    if (b.info.dtype != a.info.dtype || b.info.shape != a.info.shape || b.data != a.data)
      finding("write_npy then read_npy does not give the array back");
  });
  return 0;
}
