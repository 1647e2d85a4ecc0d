#include "io/npy.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "memplan/error.h"
#include "support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace io = memplan::io;
using memplan::DType;
using memplan::Error;
using memplan::ErrorKind;
using memplan::test::TempDir;

// Files produced by numpy 1.24.2 (python3 -c 'import numpy as np, io; f = io.BytesIO(); ...'), in hex.
// np.save(f, np.array([[1.5, -2, 0.25], [3, 4e10, -0.0]], dtype='<f4'))
const char* const kNumpyFloat32x2x3 =
    "934e554d5059010076007b276465736372273a20273c6634272c2027666f7274"
    "72616e5f6f72646572273a2046616c73652c20277368617065273a2028322c20"
    "33292c207d202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a"
    "0000c03f000000c00000803e00004040f902155100000080";
// np.save(f, np.int64(-1234567890123))
const char* const kNumpyInt64Scalar =
    "934e554d5059010076007b276465736372273a20273c6938272c2027666f7274"
    "72616e5f6f72646572273a2046616c73652c20277368617065273a2028292c20"
    "7d20202020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a"
    "35fb048ee0feffff";
// np.save(f, np.array([True, False, True]))
const char* const kNumpyBoolVector =
    "934e554d5059010076007b276465736372273a20277c6231272c2027666f7274"
    "72616e5f6f72646572273a2046616c73652c20277368617065273a2028332c29"
    "2c207d2020202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a"
    "010001";
// np.lib.format.write_array(f, np.array([1, -2, 300], dtype='<i2'), version=(2, 0))
const char* const kNumpyInt16V2 =
    "934e554d50590200740000007b276465736372273a20273c6932272c2027666f"
    "727472616e5f6f72646572273a2046616c73652c20277368617065273a202833"
    "2c292c207d202020202020202020202020202020202020202020202020202020"
    "202020202020202020202020202020202020202020202020202020202020200a"
    "0100feff2c01";

std::string from_hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// An npy file with the given header dict and `payload` bytes of zeros, padded the way numpy pads.
std::string make_npy(const std::string& dict, size_t payload, char major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict + "\n";
  header.insert(header.size() - 1, (64 - (prefix + header.size()) % 64) % 64, ' ');
  std::string out = "\x93NUMPY";
  out += major;
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + std::string(payload, '\0');
}

std::string npy_dict(const std::string& descr, const std::string& shape,
                     const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

void require_error(const std::function<void()>& fn, ErrorKind kind, const std::string& path,
                   const std::string& reason) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK(static_cast<int>(e.kind()) == static_cast<int>(kind));
    CHECK_THAT(message, Catch::Contains(path) && Catch::Contains(reason));
    CHECK(message.find('\n') == std::string::npos);
    return;
  }
  FAIL("expected a memplan::Error saying: " << reason);
}

// Writes `bytes` to a file and checks that both readers reject it.
void require_read_error(const std::string& bytes, ErrorKind kind, const std::string& reason) {
  TempDir dir("npy_test");
  const std::string path = dir.file("bad.npy");
  write_file(path, bytes);
  require_error([&] { io::read_npy_info(path); }, kind, path, reason);
  require_error([&] { io::read_npy(path); }, kind, path, reason);
}

std::vector<std::byte> pattern(size_t n, DType dtype) {
  std::vector<std::byte> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = std::byte(dtype == DType::Bool ? i % 2 : (i * 37 + 5) & 0xff);
  return out;
}

template <typename T>
std::vector<T> values(const io::NpyArray& a) {
  std::vector<T> out(a.data.size() / sizeof(T));
  std::memcpy(out.data(), a.data.data(), a.data.size());
  return out;
}

}  // namespace

TEST_CASE("npy round-trips every supported dtype", "[npy]") {
  TempDir dir("npy_test");
  for (DType dtype : {DType::Float16, DType::Float32, DType::Float64, DType::Int8, DType::Int16, DType::Int32,
                      DType::Int64, DType::Uint8, DType::Uint16, DType::Uint32, DType::Uint64, DType::Bool}) {
    INFO(memplan::dtype_name(dtype));
    const std::string path = dir.file(memplan::dtype_name(dtype) + ".npy");
    const std::vector<int64_t> shape{2, 3};
    const auto data = pattern(6 * memplan::dtype_size(dtype), dtype);
    io::write_npy(path, dtype, shape, data.data(), data.size());
    const io::NpyArray a = io::read_npy(path);
    CHECK(a.info.dtype == dtype);
    CHECK(a.info.shape == shape);
    CHECK(a.info.data_offset % 64 == 0);
    CHECK(a.info.data_bytes == data.size());
    CHECK(a.data == data);
    CHECK(fs::file_size(path) == a.info.data_offset + a.info.data_bytes);
  }
}

TEST_CASE("npy round-trips 0-d, 1-d, 4-d and zero-size shapes", "[npy]") {
  TempDir dir("npy_test");
  const std::vector<std::vector<int64_t>> shapes{{}, {5}, {2, 3, 4, 5}, {0}, {3, 0, 2}, {1, 1, 1, 1}};
  for (const auto& shape : shapes) {
    uint64_t count = 1;
    for (int64_t d : shape) count *= static_cast<uint64_t>(d);
    INFO("elements " << count << ", rank " << shape.size());
    const auto data = pattern(count * 4, DType::Float32);
    const std::string path = dir.file("a.npy");
    io::write_npy(path, DType::Float32, shape, data.data(), data.size());
    const io::NpyInfo info = io::read_npy_info(path);
    CHECK(info.dtype == DType::Float32);
    CHECK(info.shape == shape);
    CHECK(info.data_bytes == data.size());
    std::vector<std::byte> buffer(info.data_bytes);
    io::read_npy_data(path, info, buffer.data(), buffer.size());
    CHECK(buffer == data);
  }
}

TEST_CASE("npy reads a float32 (2, 3) array saved by numpy", "[npy]") {
  TempDir dir("npy_test");
  write_file(dir.file("a.npy"), from_hex(kNumpyFloat32x2x3));
  const io::NpyArray a = io::read_npy(dir.file("a.npy"));
  CHECK(a.info.dtype == DType::Float32);
  CHECK(a.info.shape == std::vector<int64_t>{2, 3});
  CHECK(a.info.data_offset == 128);
  CHECK(values<float>(a) == std::vector<float>{1.5f, -2.0f, 0.25f, 3.0f, 4e10f, -0.0f});
  CHECK(std::signbit(values<float>(a)[5]));
}

TEST_CASE("npy reads an int64 scalar saved by numpy as a 0-d array", "[npy]") {
  TempDir dir("npy_test");
  write_file(dir.file("a.npy"), from_hex(kNumpyInt64Scalar));
  const io::NpyArray a = io::read_npy(dir.file("a.npy"));
  CHECK(a.info.dtype == DType::Int64);
  CHECK(a.info.shape.empty());
  CHECK(values<int64_t>(a) == std::vector<int64_t>{-1234567890123});
}

TEST_CASE("npy reads a bool vector saved by numpy", "[npy]") {
  TempDir dir("npy_test");
  write_file(dir.file("a.npy"), from_hex(kNumpyBoolVector));
  const io::NpyArray a = io::read_npy(dir.file("a.npy"));
  CHECK(a.info.dtype == DType::Bool);
  CHECK(a.info.shape == std::vector<int64_t>{3});
  CHECK(values<uint8_t>(a) == std::vector<uint8_t>{1, 0, 1});
}

TEST_CASE("npy reads format 2.0 files written by numpy, and 3.0 the same way", "[npy]") {
  TempDir dir("npy_test");
  std::string bytes = from_hex(kNumpyInt16V2);
  for (char major : {2, 3}) {
    bytes[6] = major;
    write_file(dir.file("a.npy"), bytes);
    const io::NpyArray a = io::read_npy(dir.file("a.npy"));
    CHECK(a.info.dtype == DType::Int16);
    CHECK(a.info.shape == std::vector<int64_t>{3});
    CHECK(a.info.data_offset == 128);
    CHECK(values<int16_t>(a) == std::vector<int16_t>{1, -2, 300});
  }
}

TEST_CASE("npy writer output is byte-identical to numpy.save", "[npy]") {
  TempDir dir("npy_test");
  const std::string path = dir.file("a.npy");
  for (const char* hex : {kNumpyFloat32x2x3, kNumpyInt64Scalar, kNumpyBoolVector}) {
    write_file(path, from_hex(hex));
    const io::NpyArray numpy = io::read_npy(path);
    io::write_npy(dir.file("mine.npy"), numpy.info.dtype, numpy.info.shape, numpy.data.data(),
                  numpy.data.size());
    CHECK(read_file(dir.file("mine.npy")) == from_hex(hex));
  }
}

TEST_CASE("npy header parser accepts any key order, whitespace, double quotes and no trailing comma",
          "[npy]") {
  const std::vector<std::string> dicts{
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
      "{ 'fortran_order' : False ,\t'descr':'<f4','shape':(2,3,) , }",
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",
  };
  TempDir dir("npy_test");
  for (const auto& dict : dicts) {
    INFO(dict);
    write_file(dir.file("a.npy"), make_npy(dict, 24));
    const io::NpyInfo info = io::read_npy_info(dir.file("a.npy"));
    CHECK(info.dtype == DType::Float32);
    CHECK(info.shape == std::vector<int64_t>{2, 3});
    CHECK(info.data_bytes == 24);
  }
}

TEST_CASE("npy read_npy_data rejects a destination of the wrong size", "[npy]") {
  TempDir dir("npy_test");
  const std::string path = dir.file("a.npy");
  write_file(path, from_hex(kNumpyFloat32x2x3));
  const io::NpyInfo info = io::read_npy_info(path);
  std::vector<std::byte> buffer(20);
  require_error([&] { io::read_npy_data(path, info, buffer.data(), buffer.size()); }, ErrorKind::InvalidInput,
                path, "holds 24 bytes of data but the destination buffer is 20 bytes");
}

TEST_CASE("npy read_npy_data rejects a file that changed after read_npy_info", "[npy]") {
  TempDir dir("npy_test");
  const std::string path = dir.file("a.npy");
  write_file(path, from_hex(kNumpyFloat32x2x3));
  const io::NpyInfo info = io::read_npy_info(path);
  write_file(path, make_npy(npy_dict("<f4", "(3, 2)"), 24));
  std::vector<std::byte> buffer(24);
  require_error([&] { io::read_npy_data(path, info, buffer.data(), buffer.size()); }, ErrorKind::InvalidInput,
                path, "changed since its header was read");
}

TEST_CASE("npy writer switches to format 2.0 when the header outgrows 64 KiB", "[npy]") {
  TempDir dir("npy_test");
  for (size_t rank : {1000, 30000}) {
    const std::vector<int64_t> shape(rank, 1);
    const std::byte value{42};
    io::write_npy(dir.file("a.npy"), DType::Uint8, shape, &value, 1);
    const std::string bytes = read_file(dir.file("a.npy"));
    CHECK(bytes[6] == (rank == 1000 ? 1 : 2));
    const io::NpyArray a = io::read_npy(dir.file("a.npy"));
    CHECK(a.info.shape == shape);
    CHECK(a.info.data_offset % 64 == 0);
    CHECK(a.data == std::vector<std::byte>{value});
  }
}

TEST_CASE("npy writer replaces an existing file and leaves no temp file behind", "[npy]") {
  TempDir dir("npy_test");
  const std::string path = dir.file("a.npy");
  write_file(path, "old contents");
  const int32_t value = 7;
  io::write_npy(path, DType::Int32, {}, &value, sizeof value);
  CHECK(dir.entries() == std::vector<std::string>{"a.npy"});
  CHECK(values<int32_t>(io::read_npy(path)) == std::vector<int32_t>{7});
}

TEST_CASE("npy writer to a missing directory throws and leaves nothing behind", "[npy]") {
  TempDir dir("npy_test");
  const std::string path = dir.file("no_such_dir/a.npy");
  const float value = 1.0f;
  require_error([&] { io::write_npy(path, DType::Float32, {}, &value, sizeof value); },
                ErrorKind::InvalidInput, path, "No such file or directory");
  CHECK_FALSE(fs::exists(path));
  CHECK(dir.entries().empty());
}

TEST_CASE("npy writer removes its temp file when the final rename fails", "[npy]") {
  TempDir dir("npy_test");
  const std::string path = dir.file("taken");
  fs::create_directory(path);
  write_file(dir.file("taken/keep"), "x");
  const float value = 1.0f;
  require_error([&] { io::write_npy(path, DType::Float32, {}, &value, sizeof value); },
                ErrorKind::InvalidInput, path, "cannot rename");
  CHECK(dir.entries() == std::vector<std::string>{"taken"});
  CHECK(fs::is_directory(path));
}

TEST_CASE("npy writer rejects dtypes npy cannot hold and byte counts that do not match the shape", "[npy]") {
  TempDir dir("npy_test");
  const std::string path = dir.file("a.npy");
  const std::vector<std::byte> data(8);
  require_error([&] { io::write_npy(path, DType::BFloat16, std::vector<int64_t>{4}, data.data(), 8); },
                ErrorKind::Unsupported, path, "cannot write bfloat16 arrays to npy");
  require_error([&] { io::write_npy(path, DType::Float32, std::vector<int64_t>{3}, data.data(), 8); },
                ErrorKind::Internal, path, "needs 12 bytes, got 8");
  CHECK(dir.entries().empty());
}

TEST_CASE("npy reader names the file it cannot open", "[npy]") {
  TempDir dir("npy_test");
  require_error([&] { io::read_npy(dir.file("missing.npy")); }, ErrorKind::InvalidInput,
                dir.file("missing.npy"), "cannot open: No such file or directory");
  require_error([&] { io::read_npy_info(dir.file("")); }, ErrorKind::InvalidInput, dir.file(""),
                "not a regular file");
}

TEST_CASE("npy reader rejects files without the npy magic", "[npy]") {
  require_read_error("PK\x03\x04 this is a zip file, not an npy file", ErrorKind::InvalidInput,
                     "not an npy file (bad magic)");
  require_read_error("\x93NUM", ErrorKind::InvalidInput, "not an npy file (bad magic)");
  require_read_error("", ErrorKind::InvalidInput, "not an npy file (bad magic)");
}

TEST_CASE("npy reader rejects unsupported format versions", "[npy]") {
  std::string bytes = from_hex(kNumpyFloat32x2x3);
  bytes[6] = 4;
  require_read_error(bytes, ErrorKind::Unsupported, "unsupported npy format version 4.0");
  bytes[6] = 1;
  bytes[7] = 1;
  require_read_error(bytes, ErrorKind::Unsupported, "unsupported npy format version 1.1");
}

TEST_CASE("npy reader rejects a header length past the end of the file", "[npy]") {
  std::string bytes = from_hex(kNumpyFloat32x2x3);
  bytes[8] = bytes[9] = '\xff';
  require_read_error(bytes, ErrorKind::InvalidInput,
                     "header length 65535 runs past the end of the file (152 bytes)");
  require_read_error(bytes.substr(0, 9), ErrorKind::InvalidInput,
                     "header length runs past the end of the file");
  std::string v2 = from_hex(kNumpyInt16V2);
  v2[11] = '\x7f';
  require_read_error(v2, ErrorKind::InvalidInput, "runs past the end of the file");
}

TEST_CASE("npy reader rejects big-endian arrays", "[npy]") {
  require_read_error(make_npy(npy_dict(">f4", "(2,)"), 8), ErrorKind::Unsupported,
                     "big-endian arrays ('>f4') are not supported");
}

TEST_CASE("npy reader rejects Fortran-order arrays", "[npy]") {
  require_read_error(make_npy(npy_dict("<f4", "(2, 3)", "True"), 24), ErrorKind::Unsupported,
                     "Fortran-order arrays are not supported; save with np.ascontiguousarray");
}

TEST_CASE("npy reader rejects object arrays", "[npy]") {
  require_read_error(make_npy(npy_dict("|O", "(2,)"), 16), ErrorKind::Unsupported,
                     "object arrays ('|O') are not supported");
}

TEST_CASE("npy reader names other unsupported dtypes", "[npy]") {
  require_read_error(make_npy(npy_dict("<c8", "(2,)"), 16), ErrorKind::Unsupported,
                     "unsupported npy dtype descr '<c8'");
  require_read_error(make_npy(npy_dict("<U5", "(2,)"), 40), ErrorKind::Unsupported,
                     "unsupported npy dtype descr '<U5'");
  require_read_error(make_npy(npy_dict("|f4", "(2,)"), 8), ErrorKind::Unsupported,
                     "unsupported npy dtype descr '|f4'");
  require_read_error(make_npy("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8),
                     ErrorKind::Unsupported, "structured (record) dtypes are not supported");
}

TEST_CASE("npy reader rejects negative dimensions", "[npy]") {
  require_read_error(make_npy(npy_dict("<f4", "(2, -3)"), 24), ErrorKind::InvalidInput,
                     "negative dimension -3 in shape");
}

TEST_CASE("npy reader rejects shapes whose byte size overflows 64 bits", "[npy]") {
  require_read_error(make_npy(npy_dict("<f4", "(4294967296, 4294967296)"), 0), ErrorKind::InvalidInput,
                     "shape (4294967296, 4294967296) of float32: size overflows 64 bits");
  require_read_error(make_npy(npy_dict("<f8", "(9223372036854775807,)"), 0), ErrorKind::InvalidInput,
                     "size overflows 64 bits");
  require_read_error(make_npy(npy_dict("<f8", "(99999999999999999999,)"), 0), ErrorKind::InvalidInput,
                     "dimension too large");
}

TEST_CASE("npy reader rejects truncated data, saying expected and actual bytes", "[npy]") {
  const std::string bytes = from_hex(kNumpyFloat32x2x3);
  require_read_error(bytes.substr(0, bytes.size() - 4), ErrorKind::InvalidInput,
                     "shape (2, 3) of float32 needs 24 bytes of data but the file is truncated to 20");
  // A huge shape in a tiny file fails before anything is allocated.
  require_read_error(make_npy(npy_dict("<f4", "(1000000000000,)"), 4), ErrorKind::InvalidInput,
                     "needs 4000000000000 bytes of data but the file is truncated to 4");
}

TEST_CASE("npy reader rejects trailing bytes after the data", "[npy]") {
  require_read_error(from_hex(kNumpyFloat32x2x3) + "xyz", ErrorKind::InvalidInput,
                     "needs 24 bytes of data but the file has 3 trailing bytes after it");
}

TEST_CASE("npy reader rejects malformed header dicts", "[npy]") {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"{'descr': '<f4', 'shape': (2,), }", "missing key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "'shape' must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "expected '('"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, x)}", "expected an integer in 'shape'"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "'fortran_order' must be True or False"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", "expected ':'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "unexpected text after the dict"},
      {"{'descr': '<f4', 'fortran_order': False 'shape': (2,)}", "expected '}'"},
      {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,)}", "escape sequences in a descr"},
      {"{'descr': '<f4", "unterminated descr"},
      {"{descr: '<f4'}", "expected a quoted key"},
      {"", "expected '{'"},
  };
  for (const auto& [dict, reason] : cases) {
    INFO(dict);
    require_read_error(make_npy(dict, 8), ErrorKind::InvalidInput, "malformed npy header: " + reason);
  }
}
