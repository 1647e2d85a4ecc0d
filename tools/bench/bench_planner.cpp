// bench_planner: how fast each planning strategy is, and how close to the lower bound it gets, on
// synthetic DNN-like buffer lists. Prints a table; not a test.
//
// The lists mimic what an inference graph produces: step i creates one tensor, most tensors are read
// by the next 1-5 steps, about 2% are skip connections read 20-500 steps later, and 0.1% live across
// a large part of the graph. Sizes are log-uniform between 64 B and 4 MiB. The seed is fixed.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "plan/core/buffers.h"
#include "plan/core/strategies.h"

using namespace memplan::plan;

namespace {

std::vector<BufferRequest> dnn_like(int32_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  std::uniform_real_distribution<double> log_size(std::log(64.0), std::log(4.0 * 1024 * 1024));
  std::vector<BufferRequest> out;
  out.reserve(static_cast<size_t>(n));
  for (int32_t step = 0; step < n; ++step) {
    const int64_t kind = uniform(0, 999);
    int64_t lifetime = uniform(1, 5);
    if (kind < 1) lifetime = uniform(n / 20, n / 4);  // long-lived: e.g. an encoder output
    else if (kind < 21) lifetime = uniform(20, 500);  // skip connection
    const auto last = static_cast<int32_t>(std::min<int64_t>(step + lifetime, n - 1));
    out.push_back(BufferRequest{static_cast<uint64_t>(std::exp(log_size(rng))), step, last});
  }
  return out;
}

}  // namespace

int main() {
  constexpr uint64_t kAlign = 64;
  std::printf("%8s  %-18s %10s %16s %16s %7s\n", "buffers", "strategy", "time ms", "frame bytes", "lower bound",
              "ratio");
  for (int32_t n : {1000, 10000, 100000}) {
    const std::vector<BufferRequest> requests = dnn_like(n, 42);
    const uint64_t bound = lower_bound(requests, kAlign);
    std::vector<Strategy> strategies = concrete_strategies();
    strategies.push_back(Strategy::Auto);
    for (Strategy s : strategies) {
      const auto start = std::chrono::steady_clock::now();
      const Placement placement = plan(s, requests, kAlign);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (auto error = find_placement_error(requests, placement, kAlign)) {
        std::fprintf(stderr, "%s produced an invalid placement: %s\n", std::string(strategy_name(s)).c_str(),
                     error->c_str());
        return 1;
      }
      std::printf("%8d  %-18s %10.2f %16llu %16llu %7.3f\n", n, std::string(strategy_name(s)).c_str(), ms,
                  static_cast<unsigned long long>(placement.frame_bytes), static_cast<unsigned long long>(bound),
                  static_cast<double>(placement.frame_bytes) / static_cast<double>(bound));
    }
  }
  return 0;
}
