// How many OpenMP threads memplan's oneDNN kernels use, and for which runs.
//
// oneDNN (over OpenMP) fixes a primitive's work split, and the per-thread parts of its
// scratchpad, for the thread count in effect when the primitive is made; many primitives then
// run exactly that many threads whatever the caller's setting. So the count is chosen once, when
// a model's kernels are made (CompileOptions::threads, or by the model's work: a model too small
// to gain from a second thread gets one), and a session's runs use that many or fewer
// (SessionOptions::threads). Each run sets the calling thread's OpenMP thread count for its
// duration only, so sessions on different threads each get their own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "ir/graph.h"

namespace memplan {

// Below this many floating-point operations per inference (tens of microseconds of one core's
// work), a model runs on one thread: waking a second for each of its small primitives costs more
// than it saves. MNIST's CNN (1.6 MFLOP) still gains from two; models/tiny_mlp, scan_sum and the
// control-flow toys (a few thousand) lose. Measured in docs/MEASUREMENTS.md.
constexpr uint64_t kSmallModelFlops = 1'000'000;

// A rough count of one inference's floating-point operations: 2·MACs for Conv, ConvTranspose,
// Gemm, MatMul, LSTM/GRU/RNN; one per output element for every other node; subgraphs once.
uint64_t estimated_flops(const Graph& main);

// The thread count a model's kernels are made for: `requested` when positive, else one for a
// small model (kSmallModelFlops) and otherwise OpenMP's default (OMP_NUM_THREADS, or the CPUs
// this process may run on).
int choose_model_threads(const Graph& main, int requested);

// CompiledModel::compile passes CompileOptions::threads to kernel selection through this (the
// compile pipeline between them does not carry it). 0 = choose by the model's work.
class RequestedThreads {
 public:
  explicit RequestedThreads(int threads);
  ~RequestedThreads();
  RequestedThreads(const RequestedThreads&) = delete;
  RequestedThreads& operator=(const RequestedThreads&) = delete;
  static int current();  // on this thread; 0 when none is in effect

 private:
  int previous_;
};

// Each run's thread count for a session of several threads: all of them, or one when one is
// faster, and never more than the cores other processes leave free (runtime/free_cores.h).
// oneDNN's threads meet at a barrier after every primitive, so a thread that loses its core to
// another process stalls the others: on a machine whose other cores are busy, one thread beats
// several (and a waiting OpenMP thread spins on the core the busy one needs). The free cores
// cap each run (next()'s argument): with one core of two busy, every run takes one thread, with
// no probes of two. Below the cap, which count is faster is measured (a model may gain nothing
// from a second thread): the session times its first runs at both counts, then keeps a
// moving average of its run times at each and runs the faster. Now and then it probes the other
// count for two runs, timing the second (the first after a switch pays for it: the other count's
// workers still spin, or must be woken), so it follows the machine's load both ways. A run of
// kLongRunMs or more is timed even right after a switch (what the switch costs is a few
// milliseconds of it), so a slow model's probe is one run, and its first one-thread run the
// third, not the fourth: a 2-second model need not spend two runs on one thread to find two
// faster. A probe that
// confirms the choice doubles the wait before the next (8 runs, then 16, ... up to 64: a steady
// load costs a probe's slower runs ever more rarely); one that changes it starts again from 8.
// Where the other count is much slower, the wait is longer still: long enough that a probe's
// extra time is at most kProbeCostShare of the runs' time between probes (a model twice as fast
// on two threads probes one every 100 runs, not every 64), up to kLongestCostWait; only once
// each count is timed twice, so the first probe still comes after 8 runs. A count's time is the
// faster of its first two runs, then the moving average: a slow first run (a page fault, a core
// busy for a moment) would otherwise hold the choice on the slower count.
// Two clock reads a run, no allocation.
class LoadAdaptiveThreads {
 public:
  static constexpr uint64_t kFirstProbeAfter = 8, kLongestProbeWait = 64, kLongestCostWait = 1024;
  static constexpr double kLongRunMs = 200, kProbeCostShare = 0.02;

  // enabled = false: every run uses `threads`.
  LoadAdaptiveThreads(int threads, bool enabled) : full_(enabled ? threads : 1), fixed_(threads) {}
  // The coming run's count: the timings' choice, or one thread where fewer than that many cores
  // are free. A run held so is timed for one thread but moves neither the probes nor the first
  // runs' schedule.
  int next(int free_cores = std::numeric_limits<int>::max());
  // Around a run at `threads` (next()'s count): times it and records it.
  void begin(int threads);
  void end();
  // What end() does with the run's time: exposed for tests, which give the times themselves.
  void record(int threads, double ms);

 private:
  int choose() const;  // the count the timings choose, free cores aside
  int faster() const { return average_ms_[0] < average_ms_[1] ? 1 : full_; }
  bool probing() const { return runs_ >= 4 && runs_ >= probe_from_ + std::max(probe_wait_, cost_wait()); }
  uint64_t cost_wait() const;  // the runs between probes that keep them at kProbeCostShare

  int full_;   // the count to adapt from (1: no adapting)
  int fixed_;  // the count when not adapting
  int used_ = 1;
  bool capped_ = false;  // the coming (or last) run is held below the timings' choice
  int last_ = 0;            // the count of the previous run
  bool last_timed_ = false;  // whether the previous run was timed
  uint64_t runs_ = 0;
  uint64_t probe_wait_ = kFirstProbeAfter;  // runs between the last probe and the next, at least
  uint64_t probe_from_ = 0;                 // the run after the last probe (0: none yet)
  double average_ms_[2] = {-1, -1};  // [0]: one thread, [1]: all; -1 until measured
  int samples_[2] = {0, 0};          // timed runs behind each average, counted up to 2
  int64_t started_ns_ = 0;
};

// Sets the calling thread's OpenMP thread count for this scope, restoring the previous one.
class ThreadScope {
 public:
  explicit ThreadScope(int threads);
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int previous_;
};

}  // namespace memplan
