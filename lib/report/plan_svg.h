// `memplan compile --svg`: a picture of a memory plan. Steps run left to right, byte offsets top to
// bottom (0 at the top); one rectangle per buffer. A control-flow region is a framed box holding its
// subgraph frames, drawn recursively into it (If branches side by side, a loop body followed by its
// hatched carried slots).
#pragma once

#include <string>

#include "plan/plan.h"

namespace memplan {

// A self-contained SVG 1.1 document: no scripts, no external references, deterministic output.
std::string plan_svg(const MemoryPlan& plan);

}  // namespace memplan
