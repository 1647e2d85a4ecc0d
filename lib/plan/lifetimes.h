// What each graph plans, and for how long: derived from the IR alone. The planner and the
// verifier both call this, but the verifier recomputes it itself from the model it is given, so a
// plan file cannot lie about lifetimes.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "plan/plan.h"

namespace memplan::plan {

// Loop and Scan carried values (and a Loop's condition) live in two slots each, iteration k
// writing slot k%2; a Loop's iteration counter has one slot. place_loop_state (plan/loop_state.h)
// gives a value the body updates in place one slot, or none.
struct CarriedValue {
  const Value* body_input;   // what iteration k reads (null for the iteration counter)
  const Value* body_output;  // what iteration k writes (null for the iteration counter)
  uint64_t size;             // capacity in bytes
  SlotHome home = SlotHome::TwoSlots;  // the iteration counter: written by the executor, one slot
  const Node* writer = nullptr;        // the body node that updates it in place (OneSlot, NodeOutput)

  // How many slots of the region it takes.
  uint64_t slots() const { return home == SlotHome::TwoSlots ? 2 : home == SlotHome::OneSlot ? 1 : 0; }
};

struct LocalBuffer {
  const Value* value = nullptr;  // null for regions and scratchpads
  const Node* node = nullptr;    // the producer, the region's node, or the scratchpad's node
  enum class Kind { Tensor, Region, Scratchpad } kind = Kind::Tensor;
  uint64_t size = 0;  // unaligned capacity
  int32_t first = 0;
  int32_t last = 0;
};

// True when `v`, an output of subgraph `g`, is written by g's own node straight into the memory
// the parent provides (so it gets no buffer of its own): a loop slot, or the node output it
// becomes. Otherwise the executor copies it there, or drops it: a value returned twice, a
// constant, an input, a dynamic tensor, an output into a dynamic If output, or one whose node
// output is omitted.
bool is_bound_output(const Graph& g, const Value* v);

// The values of `g` that need memory of g's frame, with lifetimes in g's steps (node indices).
// Constants and dynamic tensors are not listed (they live outside the arena).
// Main graph: inputs live from step 0, outputs to the last step. Subgraphs: inputs, captures and
// bound outputs are not listed (they live in parent memory). Region and scratchpad buffers are
// not listed either; the planner adds them.
std::vector<LocalBuffer> tensor_buffers(const Graph& g);

// The carried values of a Loop or Scan node, in slot order (ControlFlowPorts numbers the slots).
std::vector<CarriedValue> carried_values(const Node& n);

}  // namespace memplan::plan
