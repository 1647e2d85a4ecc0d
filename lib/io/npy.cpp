#include "io/npy.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>

#include "memplan/error.h"
#include "util/checked.h"

namespace memplan::io {
namespace {

constexpr std::string_view kMagic{"\x93NUMPY", 6};
constexpr uint64_t kAlign = 64;              // numpy aligns the payload to 64 bytes
constexpr size_t kGrowthAxisMaxDigits = 21;  // numpy's spare room after the dict, for appending

struct Code {
  std::string_view code;  // descr without the byte-order character
  DType dtype;
};
constexpr Code kCodes[] = {
    {"f2", DType::Float16}, {"f4", DType::Float32}, {"f8", DType::Float64}, {"i1", DType::Int8},
    {"i2", DType::Int16},   {"i4", DType::Int32},   {"i8", DType::Int64},   {"u1", DType::Uint8},
    {"u2", DType::Uint16},  {"u4", DType::Uint32},  {"u8", DType::Uint64},  {"b1", DType::Bool},
};

struct Closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, Closer>;

// Untrusted text for an error message: quoted, at most 40 characters, non-printables as '?'.
std::string quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 40)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out + (s.size() > 40 ? "...'" : "'");
}

std::string format_shape(std::span<const int64_t> shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

DType dtype_from_descr(const std::string& descr, const std::string& path) {
  if (descr.size() >= 2 && descr[1] == 'O')
    fail_unsupported(path + ": object arrays ('|O') are not supported; memplan reads numeric arrays only");
  for (const Code& c : kCodes) {
    if (descr.size() != 3 || descr.substr(1) != c.code) continue;
    if (descr[0] == '>')
      fail_unsupported(path + ": big-endian arrays ('" + descr +
                       "') are not supported; convert with a.astype(a.dtype.newbyteorder('<'))");
    if (descr[0] == '<' || (descr[0] == '|' && dtype_size(c.dtype) == 1)) return c.dtype;
  }
  fail_unsupported(path + ": unsupported npy dtype descr " + quoted(descr));
}

// A strict parser for the Python dict literal in the header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  void parse(NpyInfo& info) {
    std::string descr;
    bool fortran = false, have_descr = false, have_fortran = false, have_shape = false;
    expect('{');
    while (!eat('}')) {
      const std::string key = string_literal("key");
      expect(':');
      if (key == "descr") {
        once(have_descr, key);
        if (eat('[')) fail_unsupported(path_ + ": structured (record) dtypes are not supported");
        descr = string_literal("descr");
      } else if (key == "fortran_order") {
        once(have_fortran, key);
        fortran = boolean();
      } else if (key == "shape") {
        once(have_shape, key);
        info.shape = shape();
      } else {
        malformed("unexpected key " + quoted(key));
      }
      if (!eat(',')) {
        expect('}');
        break;
      }
    }
    skip_ws();
    if (pos_ != s_.size()) malformed("unexpected text after the dict");
    if (!have_descr) malformed("missing key 'descr'");
    if (!have_fortran) malformed("missing key 'fortran_order'");
    if (!have_shape) malformed("missing key 'shape'");
    if (fortran)
      fail_unsupported(path_ + ": Fortran-order arrays are not supported; save with np.ascontiguousarray");
    info.dtype = dtype_from_descr(descr, path_);
  }

 private:
  [[noreturn]] void malformed(const std::string& why) const {
    fail(path_ + ": malformed npy header: " + why);
  }
  void once(bool& seen, const std::string& key) const {
    if (seen) malformed("duplicate key '" + key + "'");
    seen = true;
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::string_view(" \t\r\n").find(s_[pos_]) != std::string_view::npos) ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  void expect(char c) {
    if (!eat(c)) malformed(std::string("expected '") + c + "' at offset " + std::to_string(pos_));
  }
  std::string string_literal(const char* what) {
    skip_ws();
    const char quote = pos_ < s_.size() ? s_[pos_] : '\0';
    if (quote != '\'' && quote != '"') malformed(std::string("expected a quoted ") + what);
    const size_t start = ++pos_;
    while (pos_ < s_.size() && s_[pos_] != quote && s_[pos_] != '\n' && s_[pos_] != '\\') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '\\') malformed(std::string("escape sequences in a ") + what);
    if (pos_ == s_.size() || s_[pos_] != quote) malformed(std::string("unterminated ") + what);
    return std::string(s_.substr(start, pos_++ - start));
  }
  bool boolean() {
    skip_ws();
    size_t end = pos_;
    while (end < s_.size() && std::isalnum(static_cast<unsigned char>(s_[end]))) ++end;
    const std::string_view word = s_.substr(pos_, end - pos_);
    if (word != "True" && word != "False") malformed("'fortran_order' must be True or False");
    pos_ = end;
    return word == "True";
  }
  std::vector<int64_t> shape() {
    std::vector<int64_t> dims;
    expect('(');
    if (eat(')')) return dims;
    while (true) {
      dims.push_back(dimension());
      if (eat(')')) {
        if (dims.size() == 1) malformed("'shape' must be a tuple; write (N,) for one dimension");
        return dims;
      }
      expect(',');
      if (eat(')')) return dims;
    }
  }
  int64_t dimension() {
    const bool negative = eat('-');
    if (pos_ == s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_])))
      malformed("expected an integer in 'shape'");
    uint64_t v = 0;
    const size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      v = v * 10 + static_cast<uint64_t>(s_[pos_++] - '0');
      if (v > static_cast<uint64_t>(INT64_MAX)) malformed("dimension too large in 'shape'");
    }
    if (negative)
      fail(path_ + ": negative dimension -" + std::string(s_.substr(start, pos_ - start)) + " in shape");
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long literal
    return static_cast<int64_t>(v);
  }

  std::string_view s_;
  const std::string& path_;
  size_t pos_ = 0;
};

uint64_t element_count(std::span<const int64_t> shape, const std::string& what) {
  for (int64_t d : shape)
    if (d == 0) return 0;
  uint64_t n = 1;
  for (int64_t d : shape) n = checked_mul(n, static_cast<uint64_t>(d), what);
  return n;
}

struct OpenFile {
  FilePtr file;
  uint64_t size;
};

OpenFile open_for_read(const std::string& path) {
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    const int err = errno;
    fail(path + ": cannot open: " + std::strerror(err));
  }
  struct stat st {};
  if (fstat(fileno(f.get()), &st) != 0) {
    const int err = errno;
    fail(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) fail(path + ": not a regular file");
  return {std::move(f), static_cast<uint64_t>(st.st_size)};
}

void read_exact(std::FILE* f, void* dst, uint64_t n, const std::string& path) {
  if (n == 0 || std::fread(dst, 1, n, f) == n) return;
  const int err = errno;
  if (std::ferror(f)) fail(path + ": read failed: " + std::strerror(err));
  fail(path + ": file ended early; was it modified while being read?");
}

// Reads and validates everything up to the payload, leaving `f` positioned at its start.
NpyInfo read_header(std::FILE* f, uint64_t file_size, const std::string& path) {
  unsigned char pre[12];
  if (file_size < 8) fail(path + ": not an npy file (bad magic)");
  read_exact(f, pre, 8, path);
  if (std::string_view(reinterpret_cast<const char*>(pre), 6) != kMagic)
    fail(path + ": not an npy file (bad magic)");
  const unsigned major = pre[6], minor = pre[7];
  if (major < 1 || major > 3 || minor != 0)
    fail_unsupported(path + ": unsupported npy format version " + std::to_string(major) + "." +
                     std::to_string(minor) + " (memplan reads 1.0, 2.0 and 3.0)");
  const uint64_t len_bytes = major == 1 ? 2 : 4, prefix = 8 + len_bytes;
  if (file_size < prefix) fail(path + ": header length runs past the end of the file");
  read_exact(f, pre + 8, len_bytes, path);
  uint64_t header_len = 0;
  for (uint64_t i = 0; i < len_bytes; ++i) header_len |= uint64_t{pre[8 + i]} << (8 * i);

  NpyInfo info;
  info.data_offset = prefix + header_len;
  if (info.data_offset > file_size)
    fail(path + ": header length " + std::to_string(header_len) + " runs past the end of the file (" +
         std::to_string(file_size) + " bytes)");
  std::string text(header_len, '\0');
  read_exact(f, text.data(), header_len, path);
  HeaderParser(text, path).parse(info);

  const std::string what = path + ": shape " + format_shape(info.shape) + " of " + dtype_name(info.dtype);
  info.data_bytes = checked_mul(element_count(info.shape, what), dtype_size(info.dtype), what);
  const uint64_t actual = file_size - info.data_offset;
  if (actual < info.data_bytes)
    fail(what + " needs " + std::to_string(info.data_bytes) + " bytes of data but the file is truncated to " +
         std::to_string(actual));
  if (actual > info.data_bytes)
    fail(what + " needs " + std::to_string(info.data_bytes) + " bytes of data but the file has " +
         std::to_string(actual - info.data_bytes) + " trailing bytes after it");
  return info;
}

// numpy's header for a C-order array: the dict, spare room, then spaces and '\n' so that the
// payload starts at a multiple of 64. Version 1.0 when the length fits in 16 bits, else 2.0.
std::string make_header(const std::string& path, DType dtype, std::span<const int64_t> shape) {
  const uint32_t size = dtype_size(dtype);
  // Built by appending: `const char* + std::string&&` inserts at the front, where GCC 12's
  // -Wrestrict sees a memcpy that might overlap (a false positive at -O2 and above).
  std::string descr;
  for (const Code& c : kCodes)
    if (c.dtype == dtype) {
      descr.assign(1, size == 1 ? '|' : '<');
      descr.append(c.code);
    }
  if (descr.empty()) fail_unsupported(path + ": cannot write " + dtype_name(dtype) + " arrays to npy");
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + format_shape(shape) + ", }";
  if (!shape.empty()) {
    const size_t digits = std::to_string(shape[0]).size();
    dict.append(kGrowthAxisMaxDigits - std::min(kGrowthAxisMaxDigits, digits), ' ');
  }
  for (const uint64_t len_bytes : {2, 4}) {
    const uint64_t prefix = 8 + len_bytes, hlen = dict.size() + 1;
    const uint64_t total = hlen + kAlign - (prefix + hlen) % kAlign;  // numpy pads by 1..64
    if (total >> (8 * len_bytes)) continue;
    std::string out(kMagic);
    out += static_cast<char>(len_bytes == 2 ? 1 : 2);
    out += '\0';
    for (uint64_t i = 0; i < len_bytes; ++i) out += static_cast<char>((total >> (8 * i)) & 0xff);
    out += dict;
    out.append(total - hlen, ' ');
    return out + '\n';
  }
  fail_unsupported(path + ": npy header for " + std::to_string(shape.size()) + " dimensions is too long");
}

void write_all(std::FILE* f, const void* src, uint64_t n, const std::string& path, const std::string& tmp) {
  if (n == 0 || std::fwrite(src, 1, n, f) == n) return;
  const int err = errno;
  fail(path + ": cannot write " + tmp + ": " + std::strerror(err));
}

}  // namespace

NpyInfo read_npy_info(const std::string& path) {
  OpenFile f = open_for_read(path);
  return read_header(f.file.get(), f.size, path);
}

void read_npy_data(const std::string& path, const NpyInfo& info, void* dst, uint64_t dst_bytes) {
  if (dst_bytes != info.data_bytes)
    fail(path + ": the array holds " + std::to_string(info.data_bytes) +
         " bytes of data but the destination buffer is " + std::to_string(dst_bytes) + " bytes");
  OpenFile f = open_for_read(path);
  if (read_header(f.file.get(), f.size, path) != info)
    fail(path + ": file changed since its header was read");
  read_exact(f.file.get(), dst, dst_bytes, path);
}

NpyArray read_npy(const std::string& path) {
  OpenFile f = open_for_read(path);
  NpyArray a;
  a.info = read_header(f.file.get(), f.size, path);  // data_bytes now matches the file size
  a.data.resize(a.info.data_bytes);
  read_exact(f.file.get(), a.data.data(), a.info.data_bytes, path);
  return a;
}

void write_npy(const std::string& path, DType dtype, std::span<const int64_t> shape, const void* data,
               uint64_t bytes) {
  for (int64_t d : shape)
    if (d < 0) fail_internal("write_npy(" + path + "): negative dimension in shape " + format_shape(shape));
  const std::string header = make_header(path, dtype, shape);
  const std::string what =
      "write_npy(" + path + "): shape " + format_shape(shape) + " of " + dtype_name(dtype);
  const uint64_t expected = checked_mul(element_count(shape, what), dtype_size(dtype), what);
  if (bytes != expected || (bytes && !data))
    fail_internal(what + " needs " + std::to_string(expected) + " bytes, got " + std::to_string(bytes));

  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  FilePtr f(std::fopen(tmp.c_str(), "wb"));
  if (!f) {
    const int err = errno;
    fail(path + ": cannot create " + tmp + ": " + std::strerror(err));
  }
  try {
    write_all(f.get(), header.data(), header.size(), path, tmp);
    write_all(f.get(), data, bytes, path, tmp);
    if (std::fclose(f.release()) != 0) {
      const int err = errno;
      fail(path + ": cannot write " + tmp + ": " + std::strerror(err));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      fail(path + ": cannot rename " + tmp + " to it: " + std::strerror(err));
    }
  } catch (...) {
    f.reset();
    std::remove(tmp.c_str());
    throw;
  }
}

}  // namespace memplan::io
