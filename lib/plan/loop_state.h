// Loop state in place (design notes, "Below the no-alias bound"): a carried value that the body
// updates over what it reads takes one slot, not two; a Loop's carried value whose node output
// is in memory of its own takes that output for its slot, so the final value needs no copy and
// the region no bytes for it.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "plan/lifetimes.h"
#include "plan/plan.h"
#include "plan/storage_groups.h"

namespace memplan::plan {

// Sets `home` and `writer` of each of n's carried values (carried_values(n)) that may live in
// place, and records why each other one may not. A value qualifies when the node that makes the
// body output is one its kernel lets write over the body input (AliasRules' in_place), it reads
// that input once, no other body node reads the input at or after it, the body does not return
// the input itself, and the output is written straight into the slot. It then lives in the
// Loop's output when the Loop has that output, in the arena (not dynamic), at least as large.
void place_loop_state(const Node& n, const AliasRules& rules, std::vector<CarriedValue>& carried,
                      std::vector<RefusedAlias>& refused);

}  // namespace memplan::plan
