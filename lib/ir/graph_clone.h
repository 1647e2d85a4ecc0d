// A deep copy of a subgraph, for passes that must try something and throw it away: shape
// inference infers a Loop body on a copy to find which carried values change shape across
// iterations, before the real body is inferred (and folded) once with the right types.
#pragma once

#include <memory>

#include "ir/graph.h"

namespace memplan {

// Copies `g`: its values, nodes (attributes included) and every graph nested in it. Reads of
// values from scopes outside `g` still name those values. The copy has g's parent, owner and
// depth, so lookups of outer names resolve as in `g`; the outer values' consumer lists are not
// touched (nothing outside knows of the copy).
std::unique_ptr<Graph> clone_graph(const Graph& g);

}  // namespace memplan
