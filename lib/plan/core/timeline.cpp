// The ASCII picture of a placement, for logs and test failure messages.
#include <algorithm>
#include <cstdio>
#include <string>

#include "plan/core/buffers.h"
#include "plan/core/prepare.h"

namespace memplan::plan {
namespace {

char letter(size_t id) {
  static constexpr char kLetters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return id < sizeof(kLetters) - 1 ? kLetters[id] : '*';
}

}  // namespace

std::string ascii_timeline(std::span<const BufferRequest> requests, const Placement& placement, int width) {
  if (width < 1) fail("ascii_timeline: width " + std::to_string(width) + " is not positive");
  // Sizes as requested (not aligned): the picture shows what each buffer really uses.
  const detail::Prepared p = detail::prepare(requests, 1);
  const size_t n = p.sizes.size();
  if (placement.offsets.size() != n) {
    fail("ascii_timeline: " + std::to_string(placement.offsets.size()) + " offsets for " + std::to_string(n) + " buffers");
  }
  const uint64_t frame = placement.frame_bytes;
  const auto cols = static_cast<size_t>(width);
  auto column = [&](uint64_t byte) {  // long double: byte * width may not fit in 64 bits
    return std::min(cols, static_cast<size_t>(static_cast<long double>(byte) * cols / frame));
  };

  std::vector<std::string> rows(p.steps.size(), std::string(cols, '.'));
  for (size_t id = 0; id < n; ++id) {
    if (p.sizes[id] == 0 || frame == 0) continue;
    const size_t begin = std::min(column(placement.offsets[id]), cols - 1);
    const size_t end = std::max(begin + 1, column(placement.offsets[id] + p.sizes[id]));
    for (uint32_t s = p.first[id]; s <= p.last[id]; ++s)
      for (size_t c = begin; c < end; ++c) rows[s][c] = rows[s][c] == '.' ? letter(id) : '!';
  }

  char header[160];
  std::snprintf(header, sizeof header, "frame %llu bytes, %d columns of %.1f bytes; buffer 0 = 'A'\n",
                static_cast<unsigned long long>(frame), width, static_cast<double>(frame) / width);
  std::string out = header;
  size_t label = 0;
  for (int32_t step : p.steps) label = std::max(label, std::to_string(step).size());
  for (size_t s = 0; s < rows.size(); ++s) {
    const std::string step = std::to_string(p.steps[s]);
    out += "step " + std::string(label - step.size(), ' ') + step + " |" + rows[s] + "|\n";
  }
  return out;
}

}  // namespace memplan::plan
