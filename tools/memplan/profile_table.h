// `memplan run --profile`: the per-node times a session collected, summed by op type.
#pragma once

#include <string>
#include <vector>

#include "memplan/memplan.h"

namespace memplan::cli {

// A text table: per op type, its nodes, calls per run, ms per run and share of the total; then the
// slowest nodes. `runs` divides the session's totals into per-run figures.
std::string profile_text(const std::vector<NodeProfile>& nodes, int runs, size_t top_nodes = 10);
// The same as a JSON object member list: "profile": {"by_op": [...], "nodes": [...]}.
std::string profile_json(const std::vector<NodeProfile>& nodes, int runs);

}  // namespace memplan::cli
