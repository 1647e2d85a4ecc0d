#include "runtime/run_threads.h"

#include <omp.h>

#include <algorithm>
#include <chrono>

namespace memplan {

namespace {

thread_local int requested_threads = 0;

uint64_t static_elements(const Value* v) {
  if (!v || !v->type.is_static()) return 0;
  uint64_t n = 1;
  for (int64_t d : v->type.static_dims()) n *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  return n;
}

// Input size per output element: the sum each output element takes.
uint64_t reduction_length(const Node& n) {
  const std::string& op = n.op_type;
  auto dims = [&](size_t i) {
    const Value* v = i < n.inputs.size() ? n.inputs[i] : nullptr;
    return v && v->type.is_static() ? v->type.static_dims() : std::vector<int64_t>{};
  };
  if (op == "Conv" || op == "ConvTranspose") {
    const std::vector<int64_t> w = dims(1);
    if (w.size() < 3) return 1;
    uint64_t k = static_cast<uint64_t>(std::max<int64_t>(op == "Conv" ? w[1] : w[0], 1));
    for (size_t d = 2; d < w.size(); ++d) k *= static_cast<uint64_t>(std::max<int64_t>(w[d], 1));
    return op == "Conv" ? k : k / static_cast<uint64_t>(std::max<int64_t>(n.attr_int("group", 1), 1));
  }
  if (op == "MatMul" || op == "Gemm") {
    const std::vector<int64_t> a = dims(0);
    if (a.empty()) return 1;
    const bool trans_a = op == "Gemm" && n.attr_int("transA", 0) != 0;
    return static_cast<uint64_t>(std::max<int64_t>(trans_a && a.size() >= 2 ? a[a.size() - 2] : a.back(), 1));
  }
  if (op == "LSTM" || op == "GRU" || op == "RNN") {
    const std::vector<int64_t> r = dims(2);  // [dirs, gates * hidden, hidden]
    const std::vector<int64_t> x = dims(0);
    if (r.size() != 3 || x.size() != 3) return 1;
    // Per element of Y ([T, dirs, N, hidden]): each gate's row of W and R.
    const int64_t gates = r[2] > 0 ? r[1] / r[2] : 1;
    return static_cast<uint64_t>(std::max<int64_t>(gates * (r[2] + x[2]), 1));
  }
  return 0;
}

uint64_t graph_flops(const Graph& g) {
  uint64_t total = 0;
  for (const auto& node : g.nodes) {
    const Node& n = *node;
    for (const auto& sub : n.subgraphs) total += graph_flops(*sub);
    const uint64_t out = static_elements(n.outputs.empty() ? nullptr : n.outputs[0]);
    const uint64_t k = reduction_length(n);
    total += k ? 2 * out * k : out;
  }
  return total;
}

}  // namespace

uint64_t estimated_flops(const Graph& main) { return graph_flops(main); }

int choose_model_threads(const Graph& main, int requested) {
  if (requested > 0) return requested;
  if (estimated_flops(main) < kSmallModelFlops) return 1;
  return std::max(omp_get_max_threads(), 1);
}

RequestedThreads::RequestedThreads(int threads) : previous_(requested_threads) { requested_threads = threads; }
RequestedThreads::~RequestedThreads() { requested_threads = previous_; }
int RequestedThreads::current() { return requested_threads; }

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int LoadAdaptiveThreads::next(int free_cores) {
  if (full_ <= 1) return fixed_;
  const int chosen = choose();
  // Held below it: one thread. The kernels keep primitives for the session's count and for one
  // (a primitive made for more threads runs that many whatever the setting).
  capped_ = free_cores < chosen;
  return capped_ ? 1 : chosen;
}

int LoadAdaptiveThreads::choose() const {
  if (runs_ < 2) return full_;  // run 0 untimed (it touches the arena first), run 1 timed
  // Then one thread until it is timed: run 2 if it is long (see record()), else run 3.
  if (average_ms_[0] < 0) return 1;
  if (!last_timed_) return last_;  // the run after a switch: the timed one of that count
  const int best = faster();
  return probing() ? (best == 1 ? full_ : 1) : best;
}

uint64_t LoadAdaptiveThreads::cost_wait() const {
  if (samples_[0] < 2 || samples_[1] < 2) return 0;  // a single run may have been a slow one
  const double fast = std::min(average_ms_[0], average_ms_[1]), slow = std::max(average_ms_[0], average_ms_[1]);
  if (fast <= 0) return 0;
  // A probe's runs at the slower count: one, timed, for a long run; else two (the first untimed).
  const double probe_runs = slow >= kLongRunMs ? 1 : 2;
  const double wait = probe_runs * (slow - fast) / (kProbeCostShare * fast);
  return wait >= static_cast<double>(kLongestCostWait) ? kLongestCostWait : static_cast<uint64_t>(wait);
}

void LoadAdaptiveThreads::begin(int threads) {
  used_ = threads;
  if (full_ > 1) started_ns_ = now_ns();
}

void LoadAdaptiveThreads::end() {
  if (full_ > 1) record(used_, static_cast<double>(now_ns() - started_ns_) / 1e6);
}

void LoadAdaptiveThreads::record(int threads, double ms) {
  if (full_ <= 1) return;
  used_ = threads;
  // The first run after a switch is not timed: one thread right after all of them shares the
  // machine with their workers, which still spin (libgomp's wait) for a few milliseconds; all
  // threads right after one first wake workers that had gone to sleep. Neither matters to a long run.
  const bool timed = (runs_ > 0 || capped_) && (used_ == last_ || ms >= kLongRunMs);
  if (timed && (used_ == 1 || used_ == full_)) {
    // Whether this run is a probe, asked before its time moves the wait (cost_wait()).
    const bool probe = !capped_ && probing();
    const int k = used_ == 1 ? 0 : 1;
    double& avg = average_ms_[k];
    // The faster of the first two runs, then half of each new run: a couple of runs follow a
    // change of load.
    avg = samples_[k] == 0 ? ms : samples_[k] == 1 ? std::min(avg, ms) : 0.5 * avg + 0.5 * ms;
    samples_[k] = std::min(samples_[k] + 1, 2);
    // A probe's timed run ends it: the wait before the next doubles if the choice stands.
    if (probe) {
      probe_wait_ = faster() == used_ ? kFirstProbeAfter : std::min(probe_wait_ * 2, kLongestProbeWait);
      probe_from_ = runs_ + 1;
    }
  }
  last_ = used_;
  last_timed_ = timed;
  if (!capped_) ++runs_;
}

ThreadScope::ThreadScope(int threads) : previous_(omp_get_max_threads()) {
  if (threads != previous_) omp_set_num_threads(threads);
}
ThreadScope::~ThreadScope() {
  if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
}

}  // namespace memplan
