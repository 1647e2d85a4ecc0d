#include "pipeline/lean_kernels.h"

#include <omp.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/winograd_conv.h"
#include "memplan/error.h"
#include "plan/plan_peak.h"
#include "runtime/free_cores.h"
#include "runtime/run_threads.h"
#include "util/checked.h"

namespace memplan {

std::optional<KernelPreference> parse_preference(const std::string& name) {
  if (name == "balanced") return KernelPreference::Balanced;
  if (name == "memory") return KernelPreference::Memory;
  if (name == "speed") return KernelPreference::Speed;
  return std::nullopt;
}

const char* preference_name(KernelPreference p) {
  return p == KernelPreference::Memory ? "memory" : p == KernelPreference::Speed ? "speed" : "balanced";
}

namespace {

// Nodes whose scratchpads are live at the peak of graph `gi`, and of the regions live there.
void scratchpads_at_peak(const Compilation& c, const std::vector<const Graph*>& graphs, size_t gi,
                         std::vector<const Node*>& out) {
  const GraphPlan& gp = c.plan.graphs[gi];
  const plan::Peak peak = plan::peak_of(gp);
  for (const plan::Storage& s : peak.live) {
    const PlannedBuffer& b = *s.root;
    if (b.node < 0 || static_cast<size_t>(b.node) >= graphs[gi]->nodes.size()) continue;
    if (b.kind == BufferKind::Scratchpad) out.push_back(graphs[gi]->nodes[static_cast<size_t>(b.node)].get());
    if (b.kind == BufferKind::Region)
      for (const Region& r : gp.regions)
        if (r.step == b.node)
          for (int32_t sub : r.subgraphs) scratchpads_at_peak(c, graphs, static_cast<size_t>(sub), out);
  }
}

// Pushes [p, p + bytes) out of every level of the caches (written back where dirty), as if an
// inference had run between: the bytes of the next timed run start in memory. Flushing the timed
// node's own bytes costs no memory, where writing a buffer larger than the caches over them (the
// way this was done before) held 8 MiB more for every compile, more than a small model's whole
// floor. A few milliseconds for the largest node timed (kMaxTimedBytes): lines not cached go fast.
void flush_from_caches(const std::byte* p, uint64_t bytes) {
  constexpr uint64_t kLine = 64;
#if defined(__x86_64__) || defined(__i386__)
  for (uint64_t i = 0; i < bytes; i += kLine) _mm_clflush(p + i);
  _mm_mfence();
#elif defined(__aarch64__)
  for (uint64_t i = 0; i < bytes; i += kLine) asm volatile("dc civac, %0" : : "r"(p + i) : "memory");
  asm volatile("dsb ish" : : : "memory");
#else
  (void)p, (void)bytes, (void)kLine;  // no flush: the runs start as warm as the last one left them
#endif
}

// The main graph's nodes with the kLargestScratchpads largest scratchpads, largest first. Where
// the arena is above its peak (the placement could not pack the buffers tighter), a scratchpad
// off the peak can set it too (mobilenet_v2_dyn below VNNI: a depthwise convolution's 6 MB of
// staged float32 copies); the few largest are tried, not every node, to keep compiles short.
constexpr size_t kLargestScratchpads = 3;
void largest_scratchpads(const Compilation& c, const Graph& main, std::vector<const Node*>& out) {
  std::vector<const PlannedBuffer*> pads;
  for (const PlannedBuffer& b : c.plan.graphs[0].buffers)
    if (b.kind == BufferKind::Scratchpad && b.node >= 0 && static_cast<size_t>(b.node) < main.nodes.size())
      pads.push_back(&b);
  std::stable_sort(pads.begin(), pads.end(), [](const PlannedBuffer* a, const PlannedBuffer* b) { return a->size > b->size; });
  pads.resize(std::min(pads.size(), kLargestScratchpads));
  for (const PlannedBuffer* b : pads) out.push_back(main.nodes[static_cast<size_t>(b->node)].get());
}

// A kernel's speed depends on where its streams fall in the caches' sets: streams at the same
// offset within their pages contend (4K aliasing). shufflenet's strided depthwise Conv in bands
// timed 1.2x its whole kernel on buffers wherever the heap put them and 1.5x with every buffer
// page-aligned; which one a compile saw depended on what it had allocated before (`memplan -v`,
// whose log allocates, saw 1.5x every time). So a timing places its buffers itself, and a
// verdict near kLeanerSlowdown is timed again in other placements (slowdown()).
constexpr uint64_t kPage = 4096;
constexpr int kLayouts = 3;
uint64_t layout_offset(int layout, size_t k) {
  return (static_cast<uint64_t>(2 * layout + 3) * (k + 1) * 1088) % kPage / 64 * 64;
}

// The most bytes a timing uses (the node's tensors, the larger scratchpad), and the most seconds
// its rounds run (after the first two). Sizes come from the model: a Conv over a 3.7 GB tensor,
// timed as any other, held a compile for minutes in 9.5 GB of memory. A node past the bytes is
// not timed (it keeps its fastest kernel unless memory is preferred).
constexpr uint64_t kMaxTimedBytes = uint64_t{512} << 20;
constexpr double kMaxTimedSeconds = 0.2;

// The memory every timing of one choice runs in: one mapping, grown to the largest node timed
// and unmapped when the choice is over, so that the timings neither fault in fresh pages each
// time nor leave their bytes in the heap for the run to carry as resident memory.
class TimingPool {
 public:
  TimingPool() = default;
  TimingPool(const TimingPool&) = delete;
  TimingPool& operator=(const TimingPool&) = delete;
  ~TimingPool() { unmap(); }
  // `bytes` of page-aligned memory, their contents whatever the last timing left; null where the
  // system has none.
  std::byte* reserve(uint64_t bytes) {
    if (bytes <= size_) return base_;
    unmap();
    void* p = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    base_ = static_cast<std::byte*>(p);
    size_ = bytes;
    return base_;
  }

 private:
  void unmap() {
    if (base_) munmap(base_, static_cast<size_t>(size_));
    base_ = nullptr;
    size_ = 0;
  }
  std::byte* base_ = nullptr;
  uint64_t size_ = 0;
};

// A node's tensors and one scratchpad, placed in the pool for timing its kernels on zeroed
// values; the constants the model still holds are read where they are, as in an inference (a
// zeroed copy of a fully connected layer's weights would cost the compile their size again).
// Throws where the node is too large to time or the memory cannot be had.
class NodeBench {
 public:
  // `cold`: each run starts with the node's bytes out of the caches (seconds()).
  NodeBench(const Node& n, uint64_t scratchpad_bytes, int layout, bool cold, TimingPool& pool)
      : n_(n), layout_(layout), cold_(cold) {
    uint64_t bytes = scratchpad_bytes;
    std::vector<uint64_t> sizes;
    for (const auto* values : {&n.inputs, &n.outputs})
      for (const Value* v : *values) {
        if (!v) continue;
        // A shape the run decides (a bound, an If's branches of different shapes) has no dims to
        // give the kernel here: such a node is not timed.
        if (!v->type.is_static() || v->type.dims.size() > static_cast<size_t>(rt::kMaxRank))
          fail(n.describe() + ": tensor '" + v->name + "' has no static shape of rank <= " + std::to_string(rt::kMaxRank));
        const uint64_t placed = held(*v) ? 0 : bytes_of(*v);
        bytes = checked_add(bytes, placed, n.describe());
        sizes.push_back(placed);
      }
    if (bytes > kMaxTimedBytes)
      fail(n.describe() + ": " + std::to_string(bytes) + " bytes of tensors, too many to time at compile");
    sizes.push_back(scratchpad_bytes);
    uint64_t total = 0;
    for (size_t k = 0; k < sizes.size(); ++k) total += span(k, sizes[k]);
    base_ = pool.reserve(total);
    if (!base_) fail(n.describe() + ": cannot map " + std::to_string(total) + " bytes to time it");
    std::fill_n(base_, total, std::byte{0});
    in_ = views(n.inputs);
    outs_ = views(n.outputs);
    pad_ = buffer(scratchpad_bytes);
  }

  // Seconds of one run of `k`, started as in an inference: its inputs just written by their
  // producers, its scratchpad and output last touched several nodes ago (out of the nearest
  // caches). Timed back to back on the same bytes, a kernel with large staged copies would find
  // them all in cache and look faster than it runs in the model (squeezenet's staged MaxPool:
  // 0.15 ms here against 0.32 ms in the model, while two chunks of its channels run in 0.33 ms
  // in both).
  // (Made warm: the caches as the last run left them.)
  double seconds(rt::Kernel& k, rt::KernelState* state) {
    if (cold_) {
      flush_from_caches(base_, used_);
      for (const Value* v : n_.inputs)
        if (const std::byte* c = v ? held(*v) : nullptr) flush_from_caches(c, v->constant->bytes.size());
    }
    for (size_t i = 0; i < in_.size(); ++i)
      if (in_[i].data && !n_.inputs[i]->constant) std::fill_n(in_[i].data, in_[i].capacity, std::byte{0});
    const auto t0 = std::chrono::steady_clock::now();
    k.run(rt::KernelArgs{in_, outs_, pad_, state});
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

 private:
  static uint64_t bytes_of(const Value& v) { return v.constant ? v.constant->byte_size() : v.capacity_bytes; }
  // The bytes of a constant the model holds in full (not released to a kernel's own copy, not a
  // splat); null otherwise.
  static const std::byte* held(const Value& v) {
    const Tensor* c = v.constant.get();
    return c && !c->splat && !c->bytes.empty() && c->bytes.size() == c->byte_size() ? c->bytes.data() : nullptr;
  }
  // Buffer k starts at page offset layout_offset(layout, k) of its own pages, with a page to
  // spare after it: the same in every compile (not wherever the heap puts it), a different
  // pattern per layout.
  uint64_t span(size_t k, uint64_t bytes) const { return (bytes + layout_offset(layout_, k) + kPage - 1) / kPage * kPage + kPage; }
  std::byte* buffer(uint64_t bytes) {
    const size_t k = placed_++;
    std::byte* at = base_ + used_ + layout_offset(layout_, k);
    used_ += span(k, bytes);
    return at;
  }
  std::vector<rt::TensorView> views(const std::vector<Value*>& values) {
    std::vector<rt::TensorView> out;
    for (const Value* v : values) {
      rt::TensorView t;
      if (v) {
        const uint64_t bytes = bytes_of(*v);
        std::byte* placed = buffer(held(*v) ? 0 : bytes);
        // Kernels only read their inputs (the bench gives each output bytes of its own).
        t.data = held(*v) ? const_cast<std::byte*>(held(*v)) : placed;
        t.dtype = v->type.dtype;
        t.rank = static_cast<int>(v->type.dims.size());  // static, at most kMaxRank (checked above)
        for (int d = 0; d < t.rank; ++d) t.dims[static_cast<size_t>(d)] = v->type.dims[static_cast<size_t>(d)].value;
        t.capacity = bytes;
      }
      out.push_back(t);
    }
    return out;
  }

  const Node& n_;
  const int layout_;
  std::byte* base_ = nullptr;
  uint64_t used_ = 0;
  size_t placed_ = 0;
  std::vector<rt::TensorView> in_, outs_;
  std::byte* pad_ = nullptr;
  const bool cold_;
};

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What choosing leaner kernels by timing them has at hand: the pool, the clock and the model's
// time share.
class Timer {
 public:
  // `share`: slower kernels may spend a share of the model's time (choose_lean_kernels); without
  // it, none can (choose_faster_variants, where only a faster one is taken), and the model is not
  // timed for it.
  Timer(const Compilation& c, const Graph& main, double budget_seconds, bool share = true)
      : c_(c), main_(main), clock_(budget_seconds, now_seconds),
        share_([this, share] { return share ? model_seconds() : 0.0; }) {}
  TuningClock& clock() { return clock_; }
  TimeBudget& share() { return share_; }
  TimingPool& pool() { return pool_; }

 private:
  // Seconds of one inference of the main graph, from below: the sum of its nodes' kernels, each
  // by itself (kernel_seconds), while the clock lasts. A kernel that refuses the zeroed tensors,
  // a node too large to time, the control-flow nodes (their kernels run subgraphs), a node with a
  // shape the run decides and the nodes past the budget count nothing: the estimate errs low,
  // and so does the share taken from it.
  double model_seconds() {
    // Its own pool: the share is first asked for while a slowdown is being timed, whose bench
    // still points into pool_ (growing pool_ here would map it elsewhere under that bench).
    TimingPool pool;
    double total = 0;
    for (const auto& node : main_.nodes) {
      if (clock_.left() <= 0) {
        spdlog::debug("the tuning budget ran out while timing the model's kernels: the rest count nothing");
        break;
      }
      if (node->is_control_flow()) continue;
      auto it = c_.kernels.kernels.find(node.get());
      if (it == c_.kernels.kernels.end() || !it->second) continue;
      total += kernel_seconds(*node, *it->second, pool);
    }
    spdlog::debug("the main graph's kernels take {:.3f} ms by themselves", total * 1e3);
    return total;
  }

  // Seconds of a run of `k` by itself on zeroed tensors (the second of two, caches warm); none
  // where it refuses the zeroed tensors or the node is too large to time.
  double kernel_seconds(const Node& n, rt::Kernel& k, TimingPool& pool) {
    try {
      const ThreadScope threads(threads_left_free(c_.dnnl->threads, true));
      NodeBench bench(n, k.scratchpad_bytes(), 0, false, pool);
      const std::unique_ptr<rt::KernelState> state = k.make_state();
      bench.seconds(k, state.get());
      return bench.seconds(k, state.get());
    } catch (const Error& e) {
      spdlog::debug("{}: not in the model's time ({})", n.describe(), e.what());
      return 0;
    }
  }

  const Compilation& c_;
  const Graph& main_;
  TuningClock clock_;
  TimeBudget share_;
  TimingPool pool_;
};

// A candidate's timing: its slowdown, or why it was not run.
struct Timing {
  Slowdown slowdown;
  TimingVerdict verdict = TimingVerdict::Time;
};

// slowdown() in one placement of the buffers; throws where a kernel refuses the zeroed tensors
// or the node is too large to time. With `gate`, the fastest kernel's first run decides whether
// the candidate runs at all (before_timing); the first runs of the two, whether rounds follow
// (cannot_win); the clock, whether each round does.
Timing timed_slowdown(rt::Kernel& fast, rt::Kernel& lean, const Node& n, int model_threads, int layout, bool gate,
                      Timer& timer) {
  NodeBench bench(n, std::max(fast.scratchpad_bytes(), lean.scratchpad_bytes()), layout, true, timer.pool());
  const std::unique_ptr<rt::KernelState> fast_state = fast.make_state(), lean_state = lean.make_state();
  // The rounds run at the threads an inference would get now: one where other processes hold
  // cores (runtime/run_threads.h). Two OpenMP threads timed there wait at every barrier for the
  // one that lost its core, by many times a kernel's time, and which kernel it hits most is
  // chance: the plain MaxPool, 16x slower alone, once timed at 0.3x the staged one beside a busy
  // process.
  const ThreadScope threads(threads_left_free(model_threads, true));
  const double fast_first = bench.seconds(fast, fast_state.get());
  if (gate) {
    const TimingVerdict before = before_timing(fast_first, lean.expected_slowdown(), timer.share(), timer.clock().left());
    if (before != TimingVerdict::Time) return {{lean.expected_slowdown(), fast_first}, before};
  }
  const double lean_first = bench.seconds(lean, lean_state.get());
  // A kernel's first run can be many times its next (paddle_hardswish's Conv in bands: 93x the
  // whole kernel's first run, 0.87x once warm): a first run that rules the candidate out is
  // checked by the first round before the rounds stop.
  const bool suspect = gate && cannot_win({lean_first / std::max(fast_first, 1e-12), fast_first}, timer.share());
  std::vector<TimedRound> rounds;
  double total = 0;
  for (int round = 0; round < 31 && (round < 8 || total < 0.02) && (round < 2 || total < kMaxTimedSeconds); ++round) {
    if (!rounds.empty() && timer.clock().left() < rounds.back().fast + rounds.back().lean) break;
    // The first in a round goes second in the next, so neither always finds the other's warmth.
    TimedRound r;
    if (round % 2 == 0) {
      r.fast = bench.seconds(fast, fast_state.get());
      r.lean = bench.seconds(lean, lean_state.get());
    } else {
      r.lean = bench.seconds(lean, lean_state.get());
      r.fast = bench.seconds(fast, fast_state.get());
    }
    rounds.push_back(r);
    total += r.fast + r.lean;
    const Slowdown once{r.lean / std::max(r.fast, 1e-12), r.fast};
    if (suspect && rounds.size() == 1 && cannot_win(once, timer.share())) {
      spdlog::debug("timing {}: lean / fast {:.2f} in the first runs and {:.2f} in the first round (fast {:.3f} ms): "
                    "it cannot win, no more rounds",
                    n.describe(), lean_first / std::max(fast_first, 1e-12), once.ratio, r.fast * 1e3);
      return {once, TimingVerdict::Time};
    }
  }
  const Slowdown s = round_slowdown(rounds);
  spdlog::debug("timing {}: lean / fast {:.2f}, fast {:.3f} ms ({} rounds, {} threads)", n.describe(), s.ratio,
                s.fast_seconds * 1e3, rounds.size(), omp_get_max_threads());
  return {s, TimingVerdict::Time};
}

// How many times as long `lean` takes as `fast` for one run on zeroed tensors of the node's
// compile-time shapes, each run with its bytes out of the caches as an inference leaves them: the
// ratio of their lower quartiles over rounds that run the two in turn (after a first run each),
// for at least 8 rounds and 20 ms as the clock allows (near kLeanerSlowdown, and where the clock
// has room for it, the median of three placements of the buffers). Not run where its estimate
// rules it out (Timing::verdict). Infinite where a kernel refuses the zeroed tensors (a run-time
// scale of 0) or the node is too large to time: it cannot be timed.
Timing slowdown(rt::Kernel& fast, rt::Kernel& lean, const Node& n, int model_threads, Timer& timer) {
  try {
    const double start = timer.clock().spent();
    const Timing first = timed_slowdown(fast, lean, n, model_threads, 0, true, timer);
    if (first.verdict != TimingVerdict::Time) return first;
    // Within a fifth of the line, the median over kLayouts placements decides.
    std::vector<Slowdown> timings{first.slowdown};
    const double took = timer.clock().spent() - start;
    if (std::abs(timings[0].ratio / kLeanerSlowdown - 1) <= kNearLine && timer.clock().left() > (kLayouts - 1) * took) {
      for (int layout = 1; layout < kLayouts; ++layout)
        timings.push_back(timed_slowdown(fast, lean, n, model_threads, layout, false, timer).slowdown);
      std::sort(timings.begin(), timings.end(), [](const Slowdown& a, const Slowdown& b) { return a.ratio < b.ratio; });
      spdlog::debug("{}: near the line, lean / fast {:.2f} to {:.2f} in {} placements", n.describe(), timings.front().ratio,
                    timings.back().ratio, timings.size());
    }
    return {timings[timings.size() / 2], TimingVerdict::Time};
  } catch (const Error& e) {
    spdlog::debug("{}: cannot be timed ({})", n.describe(), e.what());
    return {{std::numeric_limits<double>::infinity(), 0}, TimingVerdict::Time};
  }
}

}  // namespace

Slowdown round_slowdown(const std::vector<TimedRound>& rounds) {
  if (rounds.empty()) return {std::numeric_limits<double>::infinity(), 0};
  const auto lower_quartile = [&](double TimedRound::*side) {
    std::vector<double> s;
    for (const TimedRound& r : rounds) s.push_back(r.*side);
    const auto q = s.begin() + static_cast<std::ptrdiff_t>(s.size() / 4);
    std::nth_element(s.begin(), q, s.end());
    return *q;
  };
  const double fast = lower_quartile(&TimedRound::fast);
  return {lower_quartile(&TimedRound::lean) / std::max(fast, 1e-12), fast};
}

int choose_faster_variants(Compilation& c, const PlanOptions& planning, KernelPreference prefer) {
  if (prefer != KernelPreference::Balanced || planning.tuning_seconds <= 0) return 0;
  const ThreadScope model_threads(c.dnnl->threads);  // as the kernels and their variants were made
  const Graph& main = *c.model.main;
  Timer timer(c, main, planning.tuning_seconds * kFasterVariantsShare, false);
  KernelTuning tuning = c.plan.tuning;
  std::vector<int32_t> swapped;
  for (size_t step = 0; step < main.nodes.size(); ++step) {
    const Node& n = *main.nodes[step];
    auto it = c.kernels.kernels.find(&n);
    if (it == c.kernels.kernels.end() || !it->second || !it->second->reorders_both_ways() ||
        it->second->gives_way_for_memory())
      continue;
    if (timer.clock().left() <= 0) {
      spdlog::debug("the tuning budget of {:.2f} s is spent: no more kernels are timed for speed", timer.clock().budget());
      ++tuning.candidates_skipped;
      break;
    }
    std::unique_ptr<rt::Kernel> variant = it->second->take_leaner();
    if (!variant) continue;
    const Timing t = slowdown(*it->second, *variant, n, c.dnnl->threads, timer);
    if (t.verdict != TimingVerdict::Time) {
      ++tuning.candidates_skipped;
    } else {
      ++tuning.candidates_timed;
      ++tuning.nodes_timed;
    }
    if (t.verdict == TimingVerdict::Time && faster_variant_wins(t.slowdown)) {
      spdlog::debug("{}: its leaner kernel ({}) takes {:.2f}x the time of the one reordering both ways ({}): taken",
                    n.describe(), variant->implementation(), t.slowdown.ratio, it->second->implementation());
      it->second = std::move(variant);
      swapped.push_back(static_cast<int32_t>(step));
    } else {
      if (t.verdict == TimingVerdict::Time)
        spdlog::debug("{}: its leaner kernel ({}) takes {:.2f}x the time of the one reordering both ways: kept for memory's "
                      "choice",
                      n.describe(), variant->implementation(), t.slowdown.ratio);
      else
        spdlog::debug("{}: its leaner kernel ({}) is not timed for speed: {}", n.describe(), variant->implementation(),
                      t.verdict == TimingVerdict::CannotWin ? "its first run rules it out" : "the budget has no room");
      it->second->set_leaner(std::move(variant));  // back at the head of its chain, for memory's choice
    }
  }
  tuning.seconds += timer.clock().spent();
  if (!swapped.empty()) {
    std::vector<int32_t> listed = std::move(c.plan.graphs[0].leaner_kernels);
    listed.insert(listed.end(), swapped.begin(), swapped.end());
    c.plan = plan_memory(c.model, planning);
    c.plan.graphs[0].leaner_kernels = std::move(listed);
  }
  c.plan.tuning = tuning;
  return static_cast<int>(swapped.size());
}

int choose_lean_kernels(Compilation& c, const PlanOptions& planning, KernelPreference prefer) {
  if (prefer == KernelPreference::Speed) return 0;
  // Variants are made here (take_leaner), for the thread count the model's kernels were made for
  // (oneDNN fixes a primitive's work split and per-thread scratchpad when it is made).
  const ThreadScope model_threads(c.dnnl->threads);
  std::vector<const Graph*> graphs;
  for_each_graph(*c.model.main, [&](Graph& g) { graphs.push_back(&g); });
  std::vector<const Node*> tried, swapped_nodes;
  for (size_t gi = 0; gi < graphs.size(); ++gi)  // kept from an earlier call
    for (int32_t step : std::exchange(c.plan.graphs[gi].leaner_kernels, {}))
      swapped_nodes.push_back(graphs[gi]->nodes[static_cast<size_t>(step)].get());
  int swapped = 0;
  // A kernel's leaner variant may have a leaner one of its own (a convolution in bands, then in
  // thinner bands): a node stays a candidate while its swaps lower the arena. Under Balanced each
  // variant is timed against the node's first, fastest kernel, kept alive for it (`retired`):
  // what is held to kLeanerSlowdown is that one ratio, not a product of ratios each with its own
  // noise along a chain of variants.
  std::unordered_map<const Node*, rt::Kernel*> fastest;
  std::vector<std::unique_ptr<rt::Kernel>> retired;
  struct Trial {
    const Node* node;
    std::unique_ptr<rt::Kernel> replaced;
    int depth;
    double added;  // seconds of the model's time budget it spent
  };
  std::vector<Trial> trial;
  MemoryPlan before_trial;
  const bool timing = prefer == KernelPreference::Balanced;
  KernelTuning tuning = c.plan.tuning;
  // What choose_faster_variants spent of the budget is spent.
  Timer timer(c, *graphs[0], std::max(planning.tuning_seconds - tuning.seconds, 0.0));
  TimeBudget& budget = timer.share();
  if (timing) tuning.budget_seconds = planning.tuning_seconds;
  std::vector<const Node*> timed_nodes;
  bool out_of_time = false;
  for (int round = 0; round < 64 && !out_of_time; ++round) {
    std::vector<const Node*> candidates;
    scratchpads_at_peak(c, graphs, 0, candidates);
    const auto untried = [&] {
      std::erase_if(candidates, [&](const Node* n) { return std::count(tried.begin(), tried.end(), n) > 0; });
    };
    untried();
    if (candidates.empty() && c.plan.arena_bytes > plan::peak_of(c.plan.graphs[0]).bytes) {
      largest_scratchpads(c, *graphs[0], candidates);
      untried();
    }
    if (candidates.empty()) break;
    const Node* n = candidates.front();
    tried.push_back(n);
    auto it = c.kernels.kernels.find(n);
    if (it == c.kernels.kernels.end() || !it->second) continue;
    // A variant that does not lower the arena, or (under Balanced) is too slow, is passed over
    // for its own leaner one, which may be leaner (bands of fewer rows) or faster (a convolution
    // in bands against oneDNN's leanest whole kernel): `depth` counts the variants taken from the
    // current kernel to reach the one tried (VariantPick decides). Only a variant that lowers the
    // arena is timed.
    rt::Kernel* first = fastest.emplace(n, it->second.get()).first->second;
    // A kernel chosen for speed at a cost in memory gives way to its first variant untimed, which
    // is then the fastest kernel its own variants are timed against.
    const bool give_way = it->second->gives_way_for_memory();
    struct Pick {
      std::unique_ptr<rt::Kernel> kernel;
      int depth;
      MemoryPlan plan;
    };
    std::optional<Pick> pick;
    VariantPick walk;
    std::vector<std::unique_ptr<rt::Kernel>> after_pick;  // the variants walked past it, in order
    std::unique_ptr<rt::Kernel> current = std::move(it->second);
    std::unique_ptr<rt::Kernel> variant = current->take_leaner();
    for (int depth = 1; variant; ++depth) {
      if (timing && timer.clock().left() <= 0) {
        spdlog::debug("the tuning budget of {:.2f} s is spent: no more leaner kernels are tried", timer.clock().budget());
        ++tuning.candidates_skipped;
        out_of_time = true;
        break;
      }
      rt::Kernel& v = *variant;
      it->second = std::move(variant);  // planned with the variant
      MemoryPlan replanned = plan_memory(c.model, planning);
      variant = std::move(it->second);
      const bool lower = replanned.arena_bytes <= c.plan.arena_bytes;
      Slowdown s{1.0, 0.0};
      std::optional<double> added = 0.0;
      const char* untimed = nullptr;  // why the candidate was not run
      if (lower && timing && !(give_way && depth == 1)) {
        // A candidate that cannot win at its expected slowdown, or whose timing would pass the
        // budget, is never run: it is passed over (for its leaner variant) untimed.
        const Timing t = slowdown(*first, v, *n, c.dnnl->threads, timer);
        s = t.slowdown;
        if (t.verdict == TimingVerdict::Time) {
          added = budget.cost(s);
          ++tuning.candidates_timed;
          if (std::count(timed_nodes.begin(), timed_nodes.end(), n) == 0) timed_nodes.push_back(n);
        } else {
          added = std::nullopt;
          untimed = t.verdict == TimingVerdict::CannotWin ? "it cannot win" : "its timing would pass the tuning budget";
          ++tuning.candidates_skipped;
        }
      }
      const VariantPick::Verdict verdict = walk.offer(lower, s, added);
      if (!lower)
        spdlog::debug("{}: a leaner kernel ({} scratchpad bytes) does not lower the arena ({} bytes, was {})",
                      n->describe(), v.scratchpad_bytes(), replanned.arena_bytes, c.plan.arena_bytes);
      else if (untimed)
        spdlog::debug("{}: a leaner kernel ({} scratchpad bytes, expected {:.1f}x as slow) is not run: {}", n->describe(),
                      v.scratchpad_bytes(), v.expected_slowdown(), untimed);
      else if (!added)
        spdlog::debug("{}: a leaner kernel ({} scratchpad bytes, not {}) is {:.2f}x as slow, and adds more than the model's "
                      "time can spare: passed over",
                      n->describe(), v.scratchpad_bytes(), first->scratchpad_bytes(), s.ratio);
      else if (!verdict.picked)
        spdlog::debug("{}: a leaner kernel ({} scratchpad bytes) is {:.2f}x as slow, and adds more than the one picked: "
                      "passed over",
                      n->describe(), v.scratchpad_bytes(), s.ratio);
      else if (s.ratio > kLeanerSlowdown)
        spdlog::debug("{}: a leaner kernel ({} scratchpad bytes) is {:.2f}x as slow, but adds {:.3f} ms of the {:.3f} the "
                      "model's time can spare: picked, unless a leaner one adds less",
                      n->describe(), v.scratchpad_bytes(), s.ratio, *added * 1e3, budget.left() * 1e3);
      std::unique_ptr<rt::Kernel> next = verdict.walk_on ? variant->take_leaner() : nullptr;
      if (verdict.picked) {
        pick = Pick{std::move(variant), depth, std::move(replanned)};
        after_pick.clear();
      } else if (pick) {
        after_pick.push_back(std::move(variant));
      }
      if (!verdict.walk_on) break;
      variant = std::move(next);
    }
    it->second = std::move(current);
    if (!pick) continue;
    // The variants walked past the pick become its chain again, so that a later round can still
    // take a leaner one (loading takes them in the same order).
    rt::LeanerChain rest(*pick->kernel);
    for (std::unique_ptr<rt::Kernel>& k : after_pick) rest.append(std::move(k));
    rest.append(std::move(variant));
    // The pick replaces the node's kernel; `lean` holds the kernel it replaced.
    std::unique_ptr<rt::Kernel> lean = std::exchange(it->second, std::move(pick->kernel));
    const int depth = pick->depth;
    const double added = *walk.added();
    std::optional<MemoryPlan> replanned = std::move(pick->plan);
    // Two kernels' scratchpads can set the same peak at two steps: a swap that only ties is kept
    // on trial, until a later one lowers the arena, and undone if none does. Under Balanced a
    // swap (with those on trial) must save kMinSaving of the arena, or it counts as a tie: a
    // slower kernel for an alignment's worth of bytes is no trade.
    const uint64_t base = trial.empty() ? c.plan.arena_bytes : before_trial.arena_bytes;
    const uint64_t least =
        prefer == KernelPreference::Balanced ? std::max<uint64_t>(static_cast<uint64_t>(base * kMinSaving), 1) : 1;
    if (replanned->arena_bytes + least > base) {
      if (trial.empty()) before_trial = c.plan;
      trial.push_back({n, std::move(lean), depth, added});
      spdlog::debug("{}: a leaner kernel ({} scratchpad bytes) ties the arena at {} bytes (or saves too little): kept on trial",
                    n->describe(), it->second->scratchpad_bytes(), replanned->arena_bytes);
    } else {
      for (Trial& t : trial) retired.push_back(std::move(t.replaced));
      trial.clear();
      spdlog::debug("{}: a leaner kernel ({} scratchpad bytes) lowers the arena from {} to {} bytes", n->describe(),
                    it->second->scratchpad_bytes(), c.plan.arena_bytes, replanned->arena_bytes);
    }
    budget.spend(added);
    c.fastest_scratchpad.emplace(n, first->scratchpad_bytes());  // (kept from an earlier call)
    if (give_way && depth == 1) fastest[n] = it->second.get();
    if (lean) retired.push_back(std::move(lean));  // (on trial, the trial holds it)
    c.plan = std::move(*replanned);
    swapped_nodes.insert(swapped_nodes.end(), static_cast<size_t>(depth), n);
    tried.pop_back();  // its variant may have a leaner one still
    ++swapped;
  }
  // Undo the swaps on trial, newest first.
  for (auto t = trial.rbegin(); t != trial.rend(); ++t) {
    c.kernels.kernels[t->node] = std::move(t->replaced);
    swapped_nodes.resize(swapped_nodes.size() - static_cast<size_t>(t->depth));
    budget.refund(t->added);
    --swapped;
  }
  if (!trial.empty()) c.plan = std::move(before_trial);
  std::erase_if(c.fastest_scratchpad, [&](const auto& entry) {
    return std::count(swapped_nodes.begin(), swapped_nodes.end(), entry.first) == 0;
  });
  if (timing) {
    tuning.seconds += timer.clock().spent();
    tuning.nodes_timed += static_cast<int32_t>(timed_nodes.size());
    spdlog::debug("kernel choice: {} leaner kernels timed for {} nodes in {:.2f} s of a {:.2f} s budget; {} not run",
                  tuning.candidates_timed, tuning.nodes_timed, tuning.seconds, tuning.budget_seconds,
                  tuning.candidates_skipped);
  }
  c.plan.tuning = tuning;
  // A node is listed once per variant taken (or passed over): loading takes its leaner variant
  // that many times.
  for (size_t gi = 0; gi < graphs.size(); ++gi)
    for (size_t t = 0; t < graphs[gi]->nodes.size(); ++t)
      for (auto k = std::count(swapped_nodes.begin(), swapped_nodes.end(), graphs[gi]->nodes[t].get()); k > 0; --k)
        c.plan.graphs[gi].leaner_kernels.push_back(static_cast<int32_t>(t));
  return swapped;
}

void take_planned_lean_kernels(Compilation& c, const std::string& plan_path) {
  const ThreadScope model_threads(c.dnnl->threads);  // as choose_lean_kernels made them
  size_t gi = 0;
  // A Winograd convolution's first swap is its Winograd kernel giving way to the direct one: where
  // this machine has no Winograd kernel (an AVX-512 plan loaded below AVX-512), the node runs the
  // direct kernel already, and the swap is passed over.
  std::vector<const Node*> direct_already;
  for_each_graph(*c.model.main, [&](Graph& g) {
    for (int32_t step : c.plan.graphs[gi].leaner_kernels) {
      const Node* n = g.nodes[static_cast<size_t>(step)].get();
      auto it = c.kernels.kernels.find(n);
      if (winograd_tile(*n) != 0 && it != c.kernels.kernels.end() && it->second &&
          !it->second->gives_way_for_memory() &&
          std::find(direct_already.begin(), direct_already.end(), n) == direct_already.end()) {
        direct_already.push_back(n);
        continue;
      }
      if (it != c.kernels.kernels.end() && it->second) c.fastest_scratchpad.emplace(n, it->second->scratchpad_bytes());
      std::unique_ptr<rt::Kernel> lean = it == c.kernels.kernels.end() || !it->second ? nullptr : it->second->take_leaner();
      if (!lean)
        fail(plan_path + ": the plan runs a leaner kernel for " + n->describe() +
             ", which this machine does not have; compile it again");
      it->second = std::move(lean);
    }
    ++gi;
  });
}

}  // namespace memplan
