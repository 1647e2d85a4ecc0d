// The memory report, from a plan alone (so `memplan inspect` needs no model): text or JSON.
#pragma once

#include <string>

#include "plan/plan.h"

namespace memplan {

std::string plan_report_text(const MemoryPlan& plan);
// How a buffer shares its group's bytes, as the reports name it: "view", "in place", ...
const char* alias_name(AliasKind kind);
// What holds the main graph's peak, for one-line messages: "step 3: 'x' (4096 bytes), ...".
std::string plan_peak_summary(const MemoryPlan& plan, size_t most_buffers = 3);
// One JSON object: arena_bytes, lower_bound_bytes, naive_bytes, per_subgraph_bytes, weights_bytes,
// scratchpad_bytes, strategies, chosen_strategy, peak, graphs. `extra` (already JSON members,
// e.g. "\"run_ms\": {...}") is appended inside the object when not empty.
std::string plan_report_json(const MemoryPlan& plan, const std::string& extra = "");

}  // namespace memplan
