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
#include <map>
#include <set>
#include <vector>

#include "ir/graph.h"
#include "plan/lifetimes.h"
#include "plan/plan.h"

namespace memplan::plan {

// What a node's kernel allows for its output 0.
struct NodeAliasing {
  int view_of = -1;               // output 0 is this input's bytes, unchanged (no write)
  std::vector<size_t> in_place;   // inputs output 0 may be written over, in order of preference
  bool concat = false;            // output 0 is the inputs end to end (a Concat whose outer dims are 1)

  // True when `n` (whose aliasing this is) may write output 0 over its input `x`.
  bool may_write_over(const Node& n, const Value* x) const {
    for (size_t i : in_place)
      if (i < n.inputs.size() && n.inputs[i] == x) return true;
    return false;
  }
};

// An If branch's output that its producer writes straight into the If's output (a bound output,
// plan/lifetimes.h): `index` in the branch's outputs, and the bytes of that If output.
struct BoundOutput {
  int32_t index = -1;
  uint64_t bytes = 0;
};

struct GroupOptions {
  uint64_t alignment = 64;       // a concatenation's slices start at multiples of it
  bool concat_in_place = true;   // producers write straight into their slices of a Concat's output
  std::set<const Node*> copied_concats;  // Concats left out of that: they copy their inputs
  // The branch's bound outputs: a group that dies where one of them is written over it in place
  // moves into that If output's bytes (it takes none of the frame's).
  std::map<const Value*, BoundOutput> bound_outputs;
  // Main-graph inputs are the caller's bytes, outside the arena: each roots a group of its views.
  bool external_inputs = false;
};

using AliasRules = std::function<NodeAliasing(const Node&)>;

struct StorageGroups {
  // Per entry of the local buffers: the index of its group's root (itself for a root, and for
  // every region and scratchpad), and how it came to share.
  std::vector<size_t> root;
  std::vector<AliasKind> kind;
  std::vector<uint64_t> offset;  // bytes from the start of the root's
  std::vector<int32_t> bound_output;  // per root: the bound output whose If output holds the group, or -1
  std::vector<uint8_t> external;      // per root: 1 for an external input's group (the caller's bytes)
  std::vector<RefusedAlias> refused;
};

// Groups g's tensor buffers (`locals`, from tensor_buffers, plus regions and scratchpads, which
// never share). In step order, a node's output 0 joins the group of:
//  - the input its kernel says it is a view of, when that input has memory of this frame;
//  - else the first input its kernel may overwrite whose group no one reads after this node, that
//    holds no main-graph input or output, and is at least as large.
// A view of a main-graph input is never written in place (the caller's bytes). Before that, with
// concat_in_place, each Concat (the last of a chain first) takes its inputs as slices of its
// output, all or none; a Concat whose inputs already lie end to end in one group becomes that
// stretch of it. A node writing a bound output (options.bound_outputs) over an input's group, by
// the same rules, moves that whole group into the If output's bytes. With external_inputs, a
// main-graph input's group (the input and its views) is in the caller's bytes.
StorageGroups find_storage_groups(const Graph& g, const std::vector<LocalBuffer>& locals, const AliasRules& rules,
                                  const GroupOptions& options = {});

}  // namespace memplan::plan
