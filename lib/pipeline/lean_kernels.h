// Kernels chosen for memory: after the first plan, a kernel whose scratchpad sets the arena's
// peak is swapped for a leaner variant of itself (Kernel::take_leaner) where that makes the
// arena smaller, and unless memory is preferred, where the variant is at most 1.25x as slow or
// (TimeBudget) adds little to the model's time.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/compile_pipeline.h"

namespace memplan {

std::optional<KernelPreference> parse_preference(const std::string& name);  // balanced, memory, speed
const char* preference_name(KernelPreference p);

// How much slower than the fastest kernel a leaner one may be under Balanced.
constexpr double kLeanerSlowdown = 1.25;
// The least share of the arena a swap under Balanced must save (with the swaps kept on trial).
constexpr double kMinSaving = 0.01;
// A verdict within this share of kLeanerSlowdown is timed again in other placements of the buffers.
constexpr double kNearLine = 0.2;
// The share of the model's time that the leaner kernels together may add under Balanced before
// one slower than kLeanerSlowdown is passed over.
constexpr double kModelShare = 0.02;

// One round of timing a leaner kernel against the fastest: the seconds of a run of each, in turn.
struct TimedRound {
  double fast = 0, lean = 0;
};
// How many times as long the leaner kernel takes (`ratio`): the lower quartile of its runs over
// the lower quartile of the fastest kernel's (`fast_seconds`; infinite for no rounds). A busy
// machine (another process, a thread descheduled) only ever adds time: the quartile is a run it
// left alone, where a median would take its noise. And it is not the single fastest run of each,
// which can come from a quiet moment that only one kernel's run met.
struct Slowdown {
  double ratio = 0, fast_seconds = 0;
};
Slowdown round_slowdown(const std::vector<TimedRound>& rounds);

// What the leaner kernels add to an inference under Balanced. One within kLeanerSlowdown of the
// fastest is always taken, and what it adds is counted; a slower one is taken where what it adds
// fits in what is left of kModelShare of the model's time: a small node's kernel at 1.4x can cost
// an inference less than a large one's at 1.1x, for the same bytes saved.
class TimeBudget {
 public:
  // `model_seconds`: an inference's time, estimated from below; asked once, when a kernel past
  // kLeanerSlowdown first needs it.
  explicit TimeBudget(std::function<double()> model_seconds) : model_seconds_(std::move(model_seconds)) {}
  // The seconds kernel `s` would add to an inference; none where it is past kLeanerSlowdown and
  // the budget does not have them, or it could not be timed.
  std::optional<double> cost(const Slowdown& s) {
    if (!std::isfinite(s.ratio)) return std::nullopt;
    const double added = std::max(s.ratio - 1, 0.0) * s.fast_seconds;
    if (s.ratio <= kLeanerSlowdown) return added;
    if (added > left()) return std::nullopt;
    return added;
  }
  void spend(double seconds) { spent_ += seconds; }
  void refund(double seconds) { spent_ -= seconds; }
  double left() {
    if (!limit_) limit_ = kModelShare * model_seconds_();
    return *limit_ - spent_;
  }

 private:
  std::function<double()> model_seconds_;
  std::optional<double> limit_;
  double spent_ = 0;
};

// Runs a timing takes at least: a first run and one round of each kernel (more rounds follow
// while the clock has room: at least two, eight for kernels under a few milliseconds).
constexpr int kMinTimedRuns = 2;
// A first run is slower than the rounds after it (caches cold, lazy set-up): a candidate's run
// against the fastest kernel's rules it out only when even this many times faster it could not
// win, in its first run and again in the first round.
constexpr double kFirstRunSlack = 2;

// The wall clock of choosing kernels by timing them (PlanOptions::tuning_seconds): the timing,
// and the planning again with each variant, stop where the budget is spent, and no run of a
// candidate starts whose estimated cost is past what is left. (A node's fastest kernel is run
// once to learn its time: that run may pass the budget by its own length, one node's share of
// an inference.)
class TuningClock {
 public:
  using Now = std::function<double()>;  // seconds, monotonic
  TuningClock(double budget_seconds, Now now) : budget_(budget_seconds), now_(std::move(now)), start_(now_()) {}
  double budget() const { return budget_; }
  double spent() const { return now_() - start_; }
  double left() const { return budget_ - spent(); }

 private:
  double budget_;
  Now now_;
  double start_;
};

// Whether a candidate kernel is timed.
enum class TimingVerdict {
  Time,
  CannotWin,   // at its expected slowdown it is past kLeanerSlowdown and the model's share
  PastBudget,  // kMinTimedRuns of it and of the fastest kernel do not fit the time left
};
// Before a candidate runs at all: `fast_seconds` is a run of the node's fastest kernel,
// `expected` the candidate's Kernel::expected_slowdown(), `share` the model's time budget (asked
// only for an expected slowdown past kLeanerSlowdown), `left` the tuning clock's seconds.
inline TimingVerdict before_timing(double fast_seconds, double expected, TimeBudget& share, double left) {
  if (expected > kLeanerSlowdown && !share.cost({expected, fast_seconds})) return TimingVerdict::CannotWin;
  if (kMinTimedRuns * fast_seconds * (1 + expected) > left) return TimingVerdict::PastBudget;
  return TimingVerdict::Time;
}
// After a run of each kernel: whether the candidate is out already (kFirstRunSlack).
inline bool cannot_win(const Slowdown& first_runs, TimeBudget& share) {
  const double ratio = first_runs.ratio / kFirstRunSlack;
  return ratio > kLeanerSlowdown && !share.cost({ratio, first_runs.fast_seconds});
}

// The walk down a node's chain of leaner variants: which one is taken. The first within
// kLeanerSlowdown ends the walk; one past it that the budget admits is picked while the walk goes
// on, and a later one that adds less replaces it (bands of rows at 1.3x can cost less than the
// leanest whole kernel at 1.5x).
class VariantPick {
 public:
  struct Verdict {
    bool picked;  // the variant is the pick now
    bool walk_on;  // the walk goes on to its leaner variant
  };
  // A variant: whether it lowers the arena, its slowdown, and what it adds to the model's time
  // (none: the budget refuses it).
  Verdict offer(bool lower, const Slowdown& s, std::optional<double> added) {
    if (!lower || !added) return {false, true};
    const bool within = s.ratio <= kLeanerSlowdown;
    if (added_ && *added >= *added_) return {false, !within};
    added_ = added;
    return {true, !within};
  }
  // What the pick adds; none without one.
  std::optional<double> added() const { return added_; }

 private:
  std::optional<double> added_;
};

// A kernel that reorders its input and its output (Kernel::reorders_both_ways) gives way to its
// leaner variant, on the plain tensors, where that runs in at most this share of its time: oneDNN
// picks its blocked kernel for a convolution whatever its neighbours' layouts, and between plain
// ones the two reorders can cost more than the blocked kernel saves (wav2vec2's 1-D convolutions,
// [512, 3199] -> [512, 1599]: 14.9 ms against 12.2 on oneDNN's plain GEMM). Below 1 by a margin
// over the timing's noise, so that a variant as fast is not taken on a lucky round.
constexpr double kFasterVariant = 0.9;
inline bool faster_variant_wins(const Slowdown& s) { return s.ratio <= kFasterVariant; }

// The share of the tuning budget (PlanOptions::tuning_seconds) that choose_faster_variants may
// spend; choose_lean_kernels has what it leaves.
constexpr double kFasterVariantsShare = 0.5;

// Under Balanced: times each main-graph kernel that reorders both ways against its first leaner
// variant, in kFasterVariantsShare of the tuning budget, and takes the variant where
// faster_variant_wins; then plans again. c.plan lists the swaps (GraphPlan::leaner_kernels) as
// choose_lean_kernels does, which keeps them. (Speed times nothing, so that its kernels do not
// depend on the machine's load while it compiles; memory takes the leanest.) Returns the number of
// kernels swapped.
int choose_faster_variants(Compilation& c, const PlanOptions& planning, KernelPreference prefer);

// Swaps kernels as above, planning again after each swap (`planning` must plan with c's kernels;
// under Balanced its tuning_seconds bound the timing, and c.plan.tuning says what was spent);
// c.plan is the last plan kept, and lists the swapped nodes (GraphPlan::leaner_kernels, a node once
// per variant taken: a leaner kernel may have a leaner variant of its own) so that loading it takes
// the same kernels. Returns the number of kernels swapped.
int choose_lean_kernels(Compilation& c, const PlanOptions& planning, KernelPreference prefer);

// Loading a plan: takes the leaner kernels it lists; fails naming the node if this machine's
// kernel has none.
void take_planned_lean_kernels(Compilation& c, const std::string& plan_path);

}  // namespace memplan
