// The memory plan in memory: what the planner makes, the verifier checks, the report draws and the
// runtime binds. A buffer says what it holds by id (a value's index in its graph's `values`, a
// node's step), never by name: ONNX does not make node names unique. Names are kept for reports.
// lib/plan/plan_file turns a plan into the .mplan protobuf and back.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/patch_region.h"
#include "ir/winograd_conv.h"
#include "shapes/shape_inference.h"

namespace memplan {

enum class BufferKind : uint8_t {
  Tensor,      // an intermediate value, or a main-graph input or output
  Region,      // the memory a control-flow node's subgraphs run in
  Scratchpad,  // a kernel's temporary memory
};

// How a tensor buffer shares the bytes of its storage group (design notes, "storage groups").
enum class AliasKind : uint8_t {
  None,     // its own bytes, or the root of a group
  View,     // its producer reads the source and writes nothing: the same bytes, unchanged
  InPlace,  // its producer writes it over an input that dies at that node
  ConcatSlice,  // its producer writes it into its slice of a Concat's output
  Concat,       // a Concat whose inputs already lie end to end there: its producer writes nothing
};

// An alias the planner considered and refused, with why (the report lists them, as ggml's
// allocator logs every refused reuse).
struct RefusedAlias {
  std::string value;   // the output that would have shared
  std::string source;  // the input whose bytes it would have shared
  std::string node;    // the producing node
  std::string reason;
};

struct PlannedBuffer {
  BufferKind kind = BufferKind::Tensor;
  int32_t value = -1;    // Tensor: index into its graph's values; -1 otherwise
  int32_t node = -1;     // the step of the producer (Tensor; -1 for inputs), or of the region's or scratchpad's node
  std::string name;      // the tensor's name, or the node's
  std::string producer;  // the producing node's name ("" for inputs)
  uint64_t size = 0;     // capacity in bytes (aligned)
  uint64_t offset = 0;   // relative to the graph's frame
  int32_t first = 0;     // first step it is live
  int32_t last = 0;      // last step, inclusive
  bool upper_bound = false;  // the size is a bound; the run-time shape may be smaller
  // Storage groups: a member shares the bytes of buffer `group` (index into its graph's buffers,
  // the group's root; its offset lies inside the root's bytes); -1 for a root or an ungrouped buffer.
  int32_t group = -1;
  AliasKind alias = AliasKind::None;
  // An If branch's storage group that dies where branch output k is written over it in place
  // lives in the bytes of the If output that k is written into, not in the frame: k for every
  // member (its offset is then from the start of that If output), -1 otherwise.
  int32_t bound_output = -1;
  // With external inputs (MemoryPlan::external_inputs): a main-graph input, or a view of one, in
  // the caller's bytes, not the arena's (its offset is from the start of that input's bytes).
  bool external = false;

  // "x", "region:loop1", "scratchpad:conv1": how reports name it.
  std::string label() const;
  // False for a buffer in an If output's bytes or the caller's: it takes none of its frame's.
  bool in_frame() const { return bound_output < 0 && !external; }
};

// A subgraph value that is not planned but bound, at run time, to parent memory.
struct Binding {
  enum class Kind : uint8_t {
    Input,    // a subgraph input: a view of a parent value (or a loop slot)
    Capture,  // an outer-scope value read directly
    Output,   // a subgraph output written into a parent buffer (or slot, or slice)
  };
  Kind kind = Kind::Input;
  std::string name;
  std::string parent_value;  // the value it binds to in the enclosing scope ("" for a loop slot)
  int32_t slot = -1;         // the loop slot (ControlFlowPorts numbering), else -1
};

// Where a Loop/Scan carried value lives between iterations (design notes, "loop-carried slots").
enum class SlotHome : uint8_t {
  TwoSlots,    // ping-pong: iteration k writes slot k%2 while it reads slot (k-1)%2
  OneSlot,     // the body's update is written over what it reads (in place): slot0 == slot1
  NodeOutput,  // in place, and in the Loop's own output buffer: no bytes of the region
  Dynamic,     // a Loop carried value whose shape the run decides (it grows): the session's memory,
               // handed from iteration to iteration; no bytes of the region
};

// Whether a carried value of this home has bytes of its Loop's region.
inline bool in_region(SlotHome h) { return h == SlotHome::TwoSlots || h == SlotHome::OneSlot; }

// Two slots per Loop/Scan carried value (one for a Loop's iteration counter, or for a value the
// body updates in place; none when it lives in the Loop's output) after the body frame.
struct CarriedSlots {
  int32_t slot = -1;   // ControlFlowPorts numbering: Loop 0 counter, 1 condition, 2 + j carried
  std::string name;    // the body input it feeds
  uint64_t size = 0;
  uint64_t slot0 = 0;  // offsets relative to the region's base (unused for NodeOutput)
  uint64_t slot1 = 0;
  SlotHome home = SlotHome::TwoSlots;  // the counter: OneSlot
  int32_t writer = -1;  // OneSlot/NodeOutput of a carried value: the body step that writes it in place
  bool grows = false;   // its shape changes across iterations (a slot then holds its bound)
};

// A control-flow node's region: one buffer of the parent where its subgraph frames start.
struct Region {
  int32_t step = 0;                // the node's step in the parent
  std::string node;                // its name, for reports
  std::string op_type;
  int32_t buffer = -1;             // index into the parent's buffers
  std::vector<int32_t> subgraphs;  // indices into MemoryPlan::graphs
  std::vector<CarriedSlots> carried;
};

struct GraphPlan {
  int32_t parent = -1;          // index into MemoryPlan::graphs; -1 for the main graph
  std::string owner_node;       // the If/Loop/Scan node that owns it ("" for main)
  std::string owner_attribute;  // then_branch, else_branch or body
  std::string path;             // for reports
  uint64_t frame_bytes = 0;
  uint64_t lower_bound_bytes = 0;  // recursive, as the design notes define it (every tensor its own bytes)
  uint64_t aliased_bound_bytes = 0;  // the same bound over storage groups
  uint64_t naive_bytes = 0;
  uint64_t base_offset = 0;     // absolute offset of the frame in the arena
  int32_t num_steps = 0;
  std::vector<PlannedBuffer> buffers;
  std::vector<Binding> bindings;
  std::vector<Region> regions;
  std::map<std::string, uint64_t> strategy_bytes;
  std::vector<RefusedAlias> refused_aliases;
  std::vector<int32_t> leaner_kernels;  // steps whose nodes run their kernel's leaner variant
};

// A tensor whose size only the run decides: no arena memory; the session allocates it.
struct DynamicTensor {
  int32_t graph = 0;     // index into MemoryPlan::graphs
  int32_t value = -1;    // index into that graph's values
  std::string name;
  std::string producer;
  std::string shape;     // what is known at compile time, "[?, 4]"
  int32_t dtype = 0;     // ONNX element type
  std::string container;  // a sequence's or optional's kind ("sequence", ...): "" for a tensor
};

// What runs a node on the machine that made (or loaded) the plan: Kernel::implementation().
struct KernelImplementation {
  std::string node;  // Node::describe(): op type and name
  std::string graph;  // the graph's path, as GraphPlan::path
  std::string implementation;
  uint64_t scratchpad_bytes = 0;
  // The fastest kernel's, where the node runs a leaner variant (else scratchpad_bytes).
  uint64_t fastest_scratchpad_bytes = 0;
};

// What choosing kernels by timing them cost the compile that made the plan
// (pipeline/lean_kernels): a leaner kernel is timed against the fastest only within a budget of
// wall-clock seconds, and a candidate whose estimate cannot win or would pass the budget is never
// run.
struct KernelTuning {
  double budget_seconds = 0;
  double seconds = 0;  // spent choosing: timing, and planning again with each variant
  int32_t nodes_timed = 0;
  int32_t candidates_timed = 0;
  int32_t candidates_skipped = 0;  // not run: estimated unable to win, or past the budget
};

struct MemoryPlan {
  std::string model_sha256;  // of the .onnx file the plan was made for
  std::string model_path;    // for messages only
  ShapeOptions shapes;       // the shape options it was made with
  // Runs of the main graph's first layers that one kernel runs in tiles (passes/patch_regions):
  // made again, the same, when the plan is loaded.
  std::vector<PatchRegion> patch_regions;
  // Convolutions marked for Winograd's kernels (passes/winograd_convs): marked again, the same,
  // when the plan is loaded. One whose kernel gave way for memory runs the direct kernel (`kernels`
  // says which runs).
  std::vector<WinogradConv> winograd_convs;
  // Every float tensor row-major: under --prefer memory the model was planned with oneDNN's
  // blocked and channels-last layouts and with none, and none made the smaller arena (the layouts'
  // kernels copy what they read or write in another layout). Assigned again when the plan is
  // loaded. `other_layouts_arena_bytes`: the arena the choice not taken had (0: one was planned).
  bool plain_layouts = false;
  uint64_t other_layouts_arena_bytes = 0;
  uint64_t alignment = 64;
  // Main-graph inputs are not planned: each run reads them from the caller's bytes (zero copy).
  bool external_inputs = false;
  std::string strategy;          // asked for ("auto" or one name)
  std::string chosen_strategy;   // whose result was kept
  uint64_t arena_bytes = 0;
  uint64_t lower_bound_bytes = 0;    // no-alias: every tensor its own bytes
  uint64_t aliased_bound_bytes = 0;  // over storage groups
  uint64_t naive_bytes = 0;
  uint64_t per_subgraph_bytes = 0;  // every subgraph its own memory
  uint64_t weights_bytes = 0;
  std::map<std::string, uint64_t> strategy_bytes;  // strategy name -> arena bytes
  std::vector<GraphPlan> graphs;  // graphs[0] is the main graph; for_each_graph's order
  std::vector<DynamicTensor> dynamic_tensors;
  // Every node's kernel (nodes without one, If/Loop/Scan and those made at run time, are left
  // out), in graph and step order.
  std::vector<KernelImplementation> kernels;
  // The instruction set oneDNN used on that machine ("avx512_core_vnni"; DNNL_MAX_CPU_ISA caps
  // it): its kernels, layouts and scratchpads differ by it.
  std::string isa;
  KernelTuning tuning;
};

// True when `implementation` (Kernel::implementation()) names one of oneDNN's reference kernels
// ("ref:any", "ref_int8:any", a reorder's "ref:any": `ref...:` as ONEDNN_VERBOSE prints them),
// which are correct but unvectorized: tens to hundreds of times slower than its jit kernels.
bool is_reference_implementation(const std::string& implementation);

// The kernels among plan.kernels that run on one of oneDNN's reference (ref:) implementations.
std::vector<const KernelImplementation*> reference_kernels(const MemoryPlan& plan);

}  // namespace memplan
