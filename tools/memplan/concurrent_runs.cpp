#include "concurrent_runs.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

namespace memplan::cli {

Timings summarize(std::vector<double> t) {
  if (t.empty()) return {};
  std::sort(t.begin(), t.end());
  const size_t n = t.size();
  double sum = 0;
  for (double x : t) sum += x;
  return {t.front(), n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2, t.back(), n, sum};
}

ConcurrentResult run_concurrently(std::vector<std::unique_ptr<Session>>& sessions,
                                  const std::vector<LoadedInput>& inputs, int warmup, int repeat) {
  using clock = std::chrono::steady_clock;
  const size_t n = sessions.size();
  std::vector<std::vector<double>> times(n);
  std::exception_ptr error;
  std::mutex error_mutex;
  std::atomic<bool> failed{false};
  clock::time_point start;
  // Everyone finishes its warm-up before the clock starts; the last one to arrive starts it.
  std::barrier warm(static_cast<std::ptrdiff_t>(n), [&]() noexcept { start = clock::now(); });

  auto work = [&](size_t k) {
    Session& s = *sessions[k];
    bool arrived = false;
    try {
      auto set_inputs = [&] {
        for (const LoadedInput& in : inputs) s.set_input(in.name, in.dtype, in.shape, in.bytes.data(), in.bytes.size());
      };
      for (int r = 0; r < warmup && !failed; ++r) {
        set_inputs();
        s.run();
      }
      arrived = true;
      warm.arrive_and_wait();
      times[k].reserve(static_cast<size_t>(repeat));
      for (int r = 0; r < repeat && !failed; ++r) {
        set_inputs();
        const auto t0 = clock::now();
        s.run();
        times[k].push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
      }
    } catch (...) {
      failed = true;
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      if (!arrived) warm.arrive_and_drop();  // the others must not wait for this one
    }
  };
  std::vector<std::thread> threads;
  for (size_t k = 0; k < n; ++k) threads.emplace_back(work, k);
  for (std::thread& t : threads) t.join();
  const auto end = clock::now();
  if (error) std::rethrow_exception(error);

  ConcurrentResult r;
  std::vector<double> all;
  for (size_t k = 0; k < n; ++k) {
    r.sessions.push_back(summarize(times[k]));
    all.insert(all.end(), times[k].begin(), times[k].end());
  }
  r.all = summarize(all);
  r.wall_s = std::chrono::duration<double>(end - start).count();
  r.throughput_per_s = r.wall_s > 0 ? static_cast<double>(all.size()) / r.wall_s : 0;
  return r;
}

}  // namespace memplan::cli
