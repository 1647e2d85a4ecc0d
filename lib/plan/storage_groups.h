// Storage groups: tensors that share bytes on purpose, below the no-alias bound (design notes,
// "Below the no-alias bound"). A view's output is its input's bytes, unchanged; an in-place
// output is written over an input that dies at its node. The planner then places one buffer per
// group, live for the union of its members' lifetimes.
//
// What a kernel can do is the kernel's to say (AliasRules); whether the plan may do it here is
// decided below from the lifetimes, and every refusal is kept with its reason.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/graph.h"
#include "plan/lifetimes.h"
#include "plan/plan.h"

namespace memplan::plan {

// What a node's kernel allows for its output 0.
struct NodeAliasing {
  int view_of = -1;               // output 0 is this input's bytes, unchanged (no write)
  std::vector<size_t> in_place;   // inputs output 0 may be written over, in order of preference
};

using AliasRules = std::function<NodeAliasing(const Node&)>;

struct StorageGroups {
  // Per entry of the local buffers: the index of its group's root (itself for a root, and for
  // every region and scratchpad), and how it came to share.
  std::vector<size_t> root;
  std::vector<AliasKind> kind;
  std::vector<RefusedAlias> refused;
};

// Groups g's tensor buffers (`locals`, from tensor_buffers, plus regions and scratchpads, which
// never share). In step order, a node's output 0 joins the group of:
//  - the input its kernel says it is a view of, when that input has memory of this frame;
//  - else the first input its kernel may overwrite whose group no one reads after this node, that
//    holds no main-graph input or output, and is at least as large.
// A view of a main-graph input is never written in place (the caller's bytes).
StorageGroups find_storage_groups(const Graph& g, const std::vector<LocalBuffer>& locals, const AliasRules& rules);

}  // namespace memplan::plan
