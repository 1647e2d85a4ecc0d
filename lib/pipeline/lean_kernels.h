// Kernels chosen for memory: after the first plan, a kernel whose scratchpad sets the arena's
// peak is swapped for a leaner variant of itself (Kernel::take_leaner) where that makes the
// arena smaller, and unless memory is preferred, where the variant is at most 1.25x as slow.
#pragma once

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

// One round of timing a leaner kernel against the fastest: the seconds of a run of each, in turn.
struct TimedRound {
  double fast = 0, lean = 0;
};
// How many times as long the leaner kernel takes: the lower quartile of its runs over the lower
// quartile of the fastest kernel's (infinite for no rounds). A busy machine (another process, a
// thread descheduled) only ever adds time: the quartile is a run it left alone, where a median
// would take its noise. And it is not the single fastest run of each, which can come from a quiet
// moment that only one kernel's run met.
double round_slowdown(const std::vector<TimedRound>& rounds);

// Swaps kernels as above, planning again after each swap (`planning` must plan with c's kernels);
// c.plan is the last plan kept, and lists the swapped nodes (GraphPlan::leaner_kernels, a node once
// per variant taken: a leaner kernel may have a leaner variant of its own) so that loading it takes
// the same kernels. Returns the number of kernels swapped.
int choose_lean_kernels(Compilation& c, const PlanOptions& planning, KernelPreference prefer);

// Loading a plan: takes the leaner kernels it lists; fails naming the node if this machine's
// kernel has none.
void take_planned_lean_kernels(Compilation& c, const std::string& plan_path);

}  // namespace memplan
