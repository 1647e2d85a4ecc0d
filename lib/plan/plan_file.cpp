#include "plan/plan_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "memplan/error.h"
#include "util/sha256.h"

namespace memplan {
namespace {

constexpr char kMagic[] = "MEMPLAN\n";  // 8 bytes
constexpr size_t kMagicSize = 8;
constexpr size_t kLengthSize = 8;
constexpr size_t kDigestSize = 64;  // hex SHA-256 of the payload

}  // namespace

void write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(path + ": cannot write: " + std::strerror(errno));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      fail(path + ": cannot write: " + std::strerror(errno));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail(path + ": cannot write: " + ec.message());
  }
}

void write_plan_file(const planfile::Plan& plan, const std::string& path) {
  planfile::Plan copy = plan;
  copy.set_format_version(kPlanFormatVersion);
  std::string payload;
  if (!copy.SerializeToString(&payload)) fail_internal("cannot serialize the plan");
  std::string file(kMagic, kMagicSize);
  uint64_t n = payload.size();
  for (size_t i = 0; i < kLengthSize; ++i) file += static_cast<char>((n >> (8 * i)) & 0xff);
  file += payload;
  file += sha256_hex(payload);
  write_file_atomically(path, file);
}

planfile::Plan read_plan_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string file = buf.str();
  if (file.size() < kMagicSize || file.compare(0, kMagicSize, kMagic, kMagicSize) != 0)
    fail(path + ": not a memplan plan file (bad magic)");
  if (file.size() < kMagicSize + kLengthSize + kDigestSize) fail(path + ": plan file is truncated");
  uint64_t n = 0;
  for (size_t i = 0; i < kLengthSize; ++i) n |= uint64_t(static_cast<unsigned char>(file[kMagicSize + i])) << (8 * i);
  const uint64_t available = file.size() - kMagicSize - kLengthSize - kDigestSize;
  if (n != available) fail(path + ": plan file is truncated or has trailing bytes");
  const std::string payload = file.substr(kMagicSize + kLengthSize, n);
  if (sha256_hex(payload) != file.substr(kMagicSize + kLengthSize + n))
    fail(path + ": plan file is corrupt (checksum mismatch)");
  planfile::Plan plan;
  if (!plan.ParseFromString(payload)) fail(path + ": plan file is corrupt (cannot parse)");
  if (plan.format_version() != kPlanFormatVersion)
    fail_unsupported(path + ": plan format version " + std::to_string(plan.format_version()) +
                     " is not supported (this memplan reads version " + std::to_string(kPlanFormatVersion) + ")");
  return plan;
}

}  // namespace memplan
