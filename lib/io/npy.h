// Reading and writing numpy .npy files: versions 1.0, 2.0 and 3.0, little-endian, C order, numeric
// dtypes only. Files are untrusted: every size is checked against the file before it is used, and
// every failure is a memplan::Error with a one-line message that names the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace memplan::io {

struct NpyInfo {
  DType dtype = DType::Undefined;
  std::vector<int64_t> shape;  // () for a 0-d array
  uint64_t data_offset = 0;    // where the payload starts in the file
  uint64_t data_bytes = 0;     // element count * itemsize; the file ends exactly there

  bool operator==(const NpyInfo&) const = default;
};

// Parses and validates the header; checks that the file holds exactly data_bytes after it.
NpyInfo read_npy_info(const std::string& path);

// Reads the payload of `path` straight into dst. `info` must come from read_npy_info(path), and
// dst_bytes must equal info.data_bytes; a file that changed since is an error.
void read_npy_data(const std::string& path, const NpyInfo& info, void* dst, uint64_t dst_bytes);

struct NpyArray {
  NpyInfo info;
  std::vector<std::byte> data;
};

NpyArray read_npy(const std::string& path);

// Writes a C-order little-endian array the way numpy.save does (byte-identical header). Writes to
// "<path>.tmp.<pid>" and renames; on failure the temp file is removed and nothing is left at path.
// bytes must equal the element count of shape times dtype_size(dtype).
void write_npy(const std::string& path, DType dtype, std::span<const int64_t> shape, const void* data,
               uint64_t bytes);

}  // namespace memplan::io
