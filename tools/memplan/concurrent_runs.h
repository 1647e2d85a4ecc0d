// `memplan run --sessions N`: N sessions of one compiled model, each running its inferences on
// its own thread at the same time, for throughput.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "memplan/memplan.h"

namespace memplan::cli {

// One input of every run: its name, dtype, shape and bytes, read once from its file.
struct LoadedInput {
  std::string name;
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;
};

struct Timings {
  double min = 0, median = 0, max = 0;
  size_t runs = 0;
  double sum_ms = 0;
};
Timings summarize(std::vector<double> times_ms);

struct ConcurrentResult {
  std::vector<Timings> sessions;  // per session, its timed runs
  Timings all;                    // every timed run of every session
  double wall_s = 0;              // from the start of the timed runs to the end of the last
  double throughput_per_s = 0;    // timed runs of all sessions / wall_s
};

// Runs `warmup` untimed and then `repeat` timed inferences in each session, the sessions on
// threads of their own, all starting their timed runs together. The first error of any session
// is rethrown here once every thread has stopped.
ConcurrentResult run_concurrently(std::vector<std::unique_ptr<Session>>& sessions,
                                  const std::vector<LoadedInput>& inputs, int warmup, int repeat);

}  // namespace memplan::cli
