// What a compiled model holds: the IR, the verified plan, one kernel per node, and for every value
// where its memory is (an arena offset, the weights, or bound at run time by a control-flow node).
#pragma once

#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/control_flow_ports.h"
#include "ir/graph.h"
#include "memplan/memplan.h"
#include "plan/plan.h"
#include "runtime/dnnl_context.h"
#include "runtime/kernel.h"

namespace memplan {

struct LoopSlots {
  uint64_t slot[2] = {0, 0};  // absolute arena offsets
  uint64_t size = 0;
  int32_t in_output = -1;     // the node output whose bytes are the slot (loop state in place), else -1
};

struct NodeExec {
  const Node* node = nullptr;
  std::unique_ptr<rt::Kernel> kernel;      // null for If/Loop/Scan
  std::vector<int32_t> inputs;             // value ids, -1 for omitted
  std::vector<int32_t> outputs;            // value ids, -1 for omitted
  uint64_t scratchpad_offset = 0;          // absolute arena offset
  std::vector<LoopSlots> slots;            // by ControlFlowPorts slot: Loop counter, condition, carried...; Scan states
  std::optional<ControlFlowPorts> ports;   // If/Loop/Scan
  bool dynamic = false;                    // touches a dynamic tensor: its kernel is made at run time
  bool container_op = false;               // a sequence or optional op: the session runs it (ir/container_ops.h)
};

struct GraphExec {
  const Graph* graph = nullptr;
  std::vector<int32_t> nodes;  // indices into CompiledModel::Impl::nodes, in execution order
  std::vector<int32_t> outputs_bound;  // per graph output: 1 if its producer writes the parent's memory
  // An If branch's values planned in the bytes of an If output (PlannedBuffer::bound_output).
  struct InIfOutput {
    int32_t value = -1;
    size_t output = 0;    // the branch output written into that If output
    uint64_t offset = 0;  // from the start of its bytes
  };
  std::vector<InIfOutput> in_if_outputs;
};

struct CompiledModel::Impl {
  std::unique_ptr<rt::DnnlContext> dnnl;  // the kernels point at it: destroyed last
  Model model;
  MemoryPlan plan;

  // Dense ids for every value of every graph.
  std::unordered_map<const Value*, int32_t> ids;
  std::vector<const Value*> values;
  // Dynamic: a buffer the session allocates when the value's producer runs (outside the arena).
  // External: a main-graph input (or a view of one) in the caller's bytes (external inputs).
  // Container: a sequence or optional, the session's rt::ContainerValue.
  enum class Home : uint8_t { None, Arena, Weight, Dynamic, External, Container };
  std::vector<Home> homes;
  std::vector<uint64_t> offsets;     // Arena: absolute offset; External: from the input's start
  std::vector<uint64_t> capacities;  // bytes the memory holds
  // Dynamic tensors whose lifetimes in their graph do not overlap share a buffer the session grows
  // to the largest of them (their sizes are the run's, their lifetimes known now): the slot of each
  // value id, -1 for one with a buffer of its own (a graph output, a Loop's carried value).
  std::vector<int32_t> dynamic_slot;
  int32_t dynamic_slots = 0;
  std::vector<uint8_t> in_if_output;  // 1: an If branch's value planned in an If output's bytes
  // Storage groups (guard mode): the values that share each value's bytes, itself included;
  // empty for a value with bytes of its own.
  std::vector<std::vector<int32_t>> sharing;
  // External inputs: per main-graph input, the values in its bytes (itself first, then its views);
  // empty for an input in the arena.
  std::vector<std::vector<int32_t>> external_members;
  std::vector<const std::byte*> weights;  // Weight: the constant's bytes
  std::vector<std::vector<std::byte>> materialized;  // splat constants expanded once

  std::vector<NodeExec> nodes;
  std::unordered_map<const Graph*, GraphExec> graphs;
  std::unordered_map<const Node*, int32_t> node_index;
  size_t max_inputs = 0, max_outputs = 0;

  std::vector<TensorInfo> inputs, outputs;
  // OpenMP threads the oneDNN kernels were made for (their work split and scratchpads assume
  // it); a session's runs use at most this many.
  int threads = 1;

  int32_t id(const Value* v) const { return v ? ids.at(v) : -1; }
};

struct Compilation;  // pipeline/compile_pipeline.h

// The compiled model of a pipeline's result: what compile() and load() end with, for callers that
// run the pipeline themselves (tests that ask it for what no option names, such as a patch region).
std::shared_ptr<const CompiledModel> finish_compilation(Compilation c);


}  // namespace memplan
