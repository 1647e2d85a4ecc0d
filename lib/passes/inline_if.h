// Replaces an If whose condition is known at compile time by the branch it takes.
#pragma once

#include <cstddef>

#include "ir/graph.h"

namespace memplan {

// Splices `branch` (one of the If's subgraphs) into `g` in place of the If node at `index`: the
// branch's nodes take the If's place in execution order and produce the If's outputs directly.
// Returns the number of nodes now standing where the If stood. Uses must be rebuilt afterwards.
// Checks the If and its branch before anything moves: on failure `g` is as it was.
size_t inline_if_branch(Graph& g, size_t index, bool take_then);

// When g.nodes[index] is an If whose condition is a constant, inlines the branch it takes and
// returns true (shapes' NodeRewriter); otherwise returns false.
bool inline_constant_if(Graph& g, size_t index);

}  // namespace memplan
