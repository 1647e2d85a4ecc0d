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

// `offset + size <= limit`, without overflow.
bool fits(uint64_t offset, uint64_t size, uint64_t limit) { return offset <= limit && size <= limit - offset; }

// A checksum only proves the file is what some writer wrote; the structure is checked before
// anything walks it: graphs form a tree whose parents come first (so no walk up the parents can
// loop), every index is in range, every buffer, frame and slot lies inside what holds it.
void check_structure(const planfile::Plan& p, const std::string& path) {
  auto invalid = [&](const std::string& why) { fail(path + ": plan file is invalid: " + why); };
  if (p.alignment() == 0 || (p.alignment() & (p.alignment() - 1)) != 0) invalid("alignment is not a power of two");
  if (p.graphs_size() == 0) invalid("it has no graphs");
  for (int gi = 0; gi < p.graphs_size(); ++gi) {
    const int parent = p.graphs(gi).parent();
    if (gi == 0 ? parent != -1 : (parent < 0 || parent >= gi))
      invalid("graph " + std::to_string(gi) + " names parent " + std::to_string(parent) +
              " (a graph's parent comes before it)");
  }
  for (int gi = 0; gi < p.graphs_size(); ++gi) {
    const planfile::GraphPlan& g = p.graphs(gi);
    const std::string where = "graph " + std::to_string(gi);
    if (!fits(g.base_offset(), g.frame_bytes(), p.arena_bytes())) invalid(where + ": its frame leaves the arena");
    if (g.num_steps() < 0) invalid(where + ": negative step count");
    for (const auto& b : g.buffers())
      if (!fits(b.offset(), b.size(), g.frame_bytes()) || b.first() < 0 || b.last() < b.first())
        invalid(where + ": buffer '" + b.name() + "' lies outside its frame or has no lifetime");
    for (const auto& r : g.regions()) {
      if (r.buffer() < 0 || r.buffer() >= g.buffers_size()) invalid(where + ": region of '" + r.node() + "' has no buffer");
      const uint64_t region_bytes = g.buffers(r.buffer()).size();
      for (int s : r.subgraphs())
        if (s <= gi || s >= p.graphs_size() || p.graphs(s).parent() != gi)
          invalid(where + ": region of '" + r.node() + "' names graph " + std::to_string(s) + ", not a child of it");
      for (const auto& c : r.carried())
        if (!fits(c.slot0(), c.size(), region_bytes) || !fits(c.slot1(), c.size(), region_bytes))
          invalid(where + ": a slot of '" + c.name() + "' lies outside its region");
    }
  }
  for (const auto& d : p.dynamic_tensors())
    if (d.graph() < 0 || d.graph() >= p.graphs_size()) invalid("dynamic tensor '" + d.name() + "' names no graph");
}

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
  check_structure(plan, path);
  return plan;
}

}  // namespace memplan
