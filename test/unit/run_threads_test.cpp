// How a session of two threads picks each run's thread count from the times it measured
// (runtime/run_threads.h), fed made-up times: the decision alone, whatever the machine's load.
#include <catch2/catch.hpp>

#include <vector>

#include "runtime/run_threads.h"

using memplan::LoadAdaptiveThreads;

namespace {

// Runs `runs` runs from `adapt`'s state; each takes `ms(threads, run)`. Returns the runs (by
// index, counting from `first`) that used all threads.
template <typename F>
std::vector<int> runs_on_all_threads(LoadAdaptiveThreads& adapt, int first, int runs, F&& ms) {
  std::vector<int> all;
  for (int r = first; r < first + runs; ++r) {
    const int threads = adapt.next();
    if (threads == 2) all.push_back(r);
    adapt.record(threads, ms(threads, r));
  }
  return all;
}

double busy(int threads, int) { return threads == 1 ? 10.0 : 15.0; }

}  // namespace

TEST_CASE("with a core busy, a session settles on one thread and probes two ever more rarely, up to every 64 runs",
          "[threads]") {
  LoadAdaptiveThreads adapt(2, true);
  // Runs 0-1 time two threads, 2-3 one; then probes of two runs at 8, 26 (8 + 2 + 16), 60, 126, 192.
  CHECK(runs_on_all_threads(adapt, 0, 200, busy) == std::vector<int>{0, 1, 8, 9, 26, 27, 60, 61, 126, 127, 192, 193});
}

TEST_CASE("when the load goes, a probe finds two threads faster, switches back and probes one thread after 8 runs",
          "[threads]") {
  LoadAdaptiveThreads adapt(2, true);
  runs_on_all_threads(adapt, 0, 100, busy);
  // The machine is idle from run 100: two threads take 4 ms. The probe at 126 finds it.
  const auto idle = [](int threads, int) { return threads == 1 ? 10.0 : 4.0; };
  const std::vector<int> all = runs_on_all_threads(adapt, 100, 40, idle);
  std::vector<int> want{126, 127, 128, 129, 130, 131, 132, 133, 134, 135};  // then 136-137 probe one thread
  want.insert(want.end(), {138, 139});
  CHECK(all == want);
}

TEST_CASE("a slow model probes one thread for a single run, its third first", "[threads]") {
  // Two threads 1 s, one thread 1.7 s: a run that long is timed right after a switch, so one
  // thread takes runs 2 (the first measurement), 8 and 25 (probes of one run, the wait doubling).
  LoadAdaptiveThreads adapt(2, true);
  const auto slow = [](int threads, int) { return threads == 1 ? 1700.0 : 1000.0; };
  const std::vector<int> all = runs_on_all_threads(adapt, 0, 31, slow);
  std::vector<int> one;
  for (int r = 0, k = 0; r < 31; ++r) {
    if (k < static_cast<int>(all.size()) && all[static_cast<size_t>(k)] == r) ++k;
    else one.push_back(r);
  }
  CHECK(one == std::vector<int>{2, 8, 25});
}

TEST_CASE("a session that does not adapt runs every run at its own count", "[threads]") {
  LoadAdaptiveThreads adapt(2, false);
  CHECK(runs_on_all_threads(adapt, 0, 50, busy).size() == 50);
  LoadAdaptiveThreads one(1, true);
  CHECK(runs_on_all_threads(one, 0, 50, busy).empty());
}
