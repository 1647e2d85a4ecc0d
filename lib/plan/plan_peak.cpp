#include "plan/plan_peak.h"

#include <algorithm>
#include <cstdint>
#include <map>

namespace memplan::plan {

std::vector<Storage> storages_of(const GraphPlan& g) {
  std::vector<Storage> out;
  std::map<size_t, size_t> at;  // root buffer -> index in out
  for (size_t i = 0; i < g.buffers.size(); ++i)
    if (g.buffers[i].group < 0 && g.buffers[i].in_frame()) {  // not in an If output's bytes or the caller's
      at[i] = out.size();
      out.push_back({&g.buffers[i], {}, g.buffers[i].first, g.buffers[i].last});
    }
  for (const auto& b : g.buffers) {
    if (b.group < 0 || !at.count(static_cast<size_t>(b.group))) continue;
    Storage& s = out[at[static_cast<size_t>(b.group)]];
    s.members.push_back(&b);
    s.first = std::min(s.first, b.first);
    s.last = std::max(s.last, b.last);
  }
  return out;
}

Peak peak_of(const GraphPlan& g) {
  Peak peak;
  const std::vector<Storage> storages = storages_of(g);
  // Sizes come from files and may each be near 2^64: the sums are 128-bit, the peak saturates.
  std::map<int32_t, __int128> delta;
  for (const auto& s : storages) {
    delta[s.first] += static_cast<__int128>(s.root->size);
    delta[s.last + 1] -= static_cast<__int128>(s.root->size);
  }
  __int128 live = 0, most = 0;
  for (const auto& [step, d] : delta) {
    live += d;
    if (live > most) {
      most = live;
      peak.step = step;
    }
  }
  peak.bytes = most > static_cast<__int128>(UINT64_MAX) ? UINT64_MAX : static_cast<uint64_t>(most);
  for (const auto& s : storages)
    if (s.first <= peak.step && peak.step <= s.last) peak.live.push_back(s);
  std::sort(peak.live.begin(), peak.live.end(), [](auto& a, auto& b) { return a.root->size > b.root->size; });
  return peak;
}

}  // namespace memplan::plan
