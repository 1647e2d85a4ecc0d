// How a session of two threads picks each run's thread count from the times it measured
// (runtime/run_threads.h), fed made-up times: the decision alone, whatever the machine's load.
#include <catch2/catch.hpp>

#include <sched.h>

#include <algorithm>
#include <ctime>
#include <optional>
#include <vector>

#include "runtime/free_cores.h"
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

// A core busy: two threads 5% slower than one (a small margin: probes follow the doubling wait).
// The runs of 0..runs that runs_on_all_threads() did not list: those on one thread.
std::vector<int> runs_on_one_thread(const std::vector<int>& all, int runs) {
  std::vector<int> one;
  for (int r = 0; r < runs; ++r)
    if (!std::binary_search(all.begin(), all.end(), r)) one.push_back(r);
  return one;
}

double busy(int threads, int) { return threads == 1 ? 10.0 : 10.5; }

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
  // The machine is idle from run 100: two threads take 4 ms. The probe at 126 finds it, and one
  // thread, 2.5 times as slow now, is not probed again for well over a hundred runs.
  const auto idle = [](int threads, int) { return threads == 1 ? 10.0 : 4.0; };
  const std::vector<int> all = runs_on_all_threads(adapt, 100, 140, idle);
  std::vector<int> want;
  for (int r = 126; r < 240; ++r) want.push_back(r);
  CHECK(all == want);
}

TEST_CASE("a model twice as fast on two threads probes one as rarely as keeps the probes at 2% of its time",
          "[threads]") {
  // A probe costs two runs at 20 ms instead of 10: 100 runs of 10 ms between probes make it 2%.
  LoadAdaptiveThreads adapt(2, true);
  const auto twice = [](int threads, int) { return threads == 1 ? 20.0 : 10.0; };
  const std::vector<int> one = runs_on_one_thread(runs_on_all_threads(adapt, 0, 310, twice), 310);
  // Runs 2-3 measure one thread, the first probe comes at 8 (one run of a count is not trusted
  // with a long wait), then at 10 + 100 and 112 + 100 (the doubling wait, 16 and 32, is shorter).
  CHECK(one == std::vector<int>{2, 3, 8, 9, 110, 111, 212, 213});
}

TEST_CASE("a slow first run on two threads does not hold a model on one thread: the first probe corrects it",
          "[threads]") {
  // Two threads take 4 ms but their first timed run (run 1) 15; one thread 7 ms. The first probe
  // of two (runs 8-9) takes the faster of their two runs, switches back, and one thread is then
  // probed only as rarely as keeps the probes at 2% (75 runs after run 10).
  LoadAdaptiveThreads adapt(2, true);
  const auto outlier = [](int threads, int run) { return threads == 1 ? 7.0 : run == 1 ? 15.0 : 4.0; };
  const std::vector<int> one = runs_on_one_thread(runs_on_all_threads(adapt, 0, 100, outlier), 100);
  CHECK(one == std::vector<int>{2, 3, 4, 5, 6, 7, 85, 86});
}

TEST_CASE("a slow model probes one thread for a single run, its third first", "[threads]") {
  // Two threads 1 s, one thread 1.7 s: a run that long is timed right after a switch, so one
  // thread takes run 2 (the first measurement), then probes of one run: at 8, then with 700 ms
  // extra each at most 2% of the 35 runs between them (9 + 35).
  LoadAdaptiveThreads adapt(2, true);
  const auto slow = [](int threads, int) { return threads == 1 ? 1700.0 : 1000.0; };
  const std::vector<int> one = runs_on_one_thread(runs_on_all_threads(adapt, 0, 80, slow), 80);
  CHECK(one == std::vector<int>{2, 8, 44});
}

TEST_CASE("a session that does not adapt runs every run at its own count", "[threads]") {
  LoadAdaptiveThreads adapt(2, false);
  CHECK(runs_on_all_threads(adapt, 0, 50, busy).size() == 50);
  LoadAdaptiveThreads one(1, true);
  CHECK(runs_on_all_threads(one, 0, 50, busy).empty());
}

TEST_CASE("while other processes hold a core of two, every run takes one thread and no run probes two", "[threads]") {
  LoadAdaptiveThreads adapt(2, true);
  runs_on_all_threads(adapt, 0, 20, [](int threads, int) { return threads == 1 ? 10.0 : 4.0; });  // idle: two
  std::vector<int> counts;
  for (int r = 0; r < 200; ++r) {
    const int threads = adapt.next(1);  // one core free
    counts.push_back(threads);
    adapt.record(threads, 12.0);
  }
  CHECK(std::all_of(counts.begin(), counts.end(), [](int t) { return t == 1; }));
  // The load goes: the two-thread timings from before it still stand, and the next run takes two.
  CHECK(adapt.next(2) == 2);
}

TEST_CASE("a session held to one thread from its first run takes two once a core is free, and probes one after 8 runs",
          "[threads]") {
  LoadAdaptiveThreads adapt(2, true);
  for (int r = 0; r < 10; ++r) adapt.record(adapt.next(1), 10.0);
  // Its first runs' schedule starts when the cap lifts: two threads (one is timed already, at
  // 10 ms under the load), faster by 5%, until the probe of one thread at the 8th run.
  std::vector<int> counts;
  for (int r = 0; r < 12; ++r) {
    const int threads = adapt.next(2);
    counts.push_back(threads);
    adapt.record(threads, threads == 1 ? 10.0 : 9.5);
  }
  CHECK(counts == std::vector<int>{2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 2, 2});
}

TEST_CASE("free cores: the cores other processes use, from a quarter of one on, come off, runs in flight share the rest",
          "[threads]") {
  using memplan::threads_for_free_cores;
  CHECK(threads_for_free_cores(2, 2, 0.0, 1) == 2);
  CHECK(threads_for_free_cores(2, 2, 0.2, 1) == 2);  // a light load leaves the core free
  CHECK(threads_for_free_cores(2, 2, 0.3, 1) == 1);  // a thread would lose its core too often
  CHECK(threads_for_free_cores(2, 2, 0.9, 1) == 1);  // a busy loop on the other core
  CHECK(threads_for_free_cores(4, 4, 1.1, 1) == 3);
  CHECK(threads_for_free_cores(2, 2, 5.0, 1) == 1);  // never below one
  CHECK(threads_for_free_cores(2, 2, 0.0, 2) == 1);  // two sessions of this process at once
  CHECK(threads_for_free_cores(4, 8, 1.2, 2) == 3);  // 7 free cores for two runs
  CHECK(threads_for_free_cores(4, 16, 0.0, 1) == 4);  // never above the session's count
}

TEST_CASE("the other processes' load is the busy time of the allowed CPUs less this process's own", "[threads]") {
  using memplan::CpuSample;
  using memplan::others_busy_cores;
  const CpuSample before{1'000'000'000, 5'000'000'000, 2'000'000'000, 2};
  // 100 ms later: the CPUs were busy 190 ms between them, 95 ms of it this process's.
  const CpuSample after{1'100'000'000, 5'190'000'000, 2'095'000'000, 2};
  CHECK(others_busy_cores(before, after) == Approx(0.95));
  CHECK(others_busy_cores(after, before) == 0.0);  // out of order
  const CpuSample own_only{1'100'000'000, 5'090'000'000, 2'095'000'000, 2};  // ticks lag the process's clock
  CHECK(others_busy_cores(before, own_only) == 0.0);
}

TEST_CASE("this machine's CPU counters are read, for the CPUs this process may run on", "[threads]") {
  const std::optional<memplan::CpuSample> s = memplan::read_cpu_sample();
  REQUIRE(s.has_value());  // Linux: /proc/stat
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
  CHECK(s->cpus == CPU_COUNT(&allowed));
  CHECK(s->busy_ns > 0);
  // 100 ms of this thread's CPU time shows in this process's time and in the CPUs' busy time
  // (counted in ticks of 10 ms), however busy the machine is.
  auto thread_ns = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  };
  const int64_t start = thread_ns();
  volatile uint64_t spin = 0;
  while (thread_ns() - start < 100'000'000) spin = spin + 1;
  const std::optional<memplan::CpuSample> later = memplan::read_cpu_sample();
  REQUIRE(later.has_value());
  CHECK(later->own_ns - s->own_ns >= 100'000'000);
  CHECK(later->busy_ns - s->busy_ns >= 70'000'000);
  CHECK(later->wall_ns - s->wall_ns >= 100'000'000);
}

TEST_CASE("asked to wait, the machine's load is measured over a whole first window, never unknown", "[threads]") {
  // Kernel selection times kernels at the threads the free cores allow: it waits for the first
  // window (at most 100 ms) rather than time two threads blind beside a busy process.
  memplan::FreeCores& cores = memplan::FreeCores::process();
  const std::optional<double> others = cores.others_busy(true);
  REQUIRE(others.has_value());
  CHECK(*others >= 0.0);
  CHECK(cores.others_busy().has_value());
  const int threads = memplan::threads_left_free(2, true);
  CHECK(threads >= 1);
  CHECK(threads <= 2);
}

TEST_CASE("a session of four threads with three cores free runs on one: its kernels have no three-thread form",
          "[threads]") {
  LoadAdaptiveThreads adapt(4, true);
  CHECK(adapt.next(3) == 1);
  adapt.record(1, 10.0);
  CHECK(adapt.next(4) == 4);
}
