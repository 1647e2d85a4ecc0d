// Checks a plan against the model without trusting the planner: lifetimes are derived again from
// the IR, every buffer and loop slot becomes an absolute byte range, and any two that can be live
// at once must not share a byte. If branches never run together, so they may share bytes; loop
// bodies are walked over three iterations so the ping-pong slots are checked.
#pragma once

#include "ir/graph.h"
#include "plan/plan.h"

namespace memplan {

// Throws memplan::Error (ErrorKind::Verification) naming the buffers and the graph at fault.
void verify_plan(const Model& model, const MemoryPlan& plan);

}  // namespace memplan
