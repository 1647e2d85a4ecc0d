// The IR: graphs of nodes and values. If, Loop and Scan nodes own their subgraphs; a subgraph
// reads outer-scope values directly (its `captures` list names them) and its inputs, outputs and
// captures are bound to parent buffers at run time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/dtype.h"
#include "ir/tensor.h"

namespace memplan {

struct Graph;
struct Node;

// A dimension: a known size (value >= 0), or a named symbol, or unknown (value < 0, no symbol).
struct Dim {
  int64_t value = -1;
  std::string symbol;
  bool known() const { return value >= 0; }
};

// What a value holds: a tensor, or one of ONNX's containers of tensors. A sequence is a list of
// tensors of one element type (their shapes may differ); an optional holds one tensor, or one
// sequence, or nothing. A container's dtype and dims describe its elements (dims: what they share).
enum class Container : uint8_t { None, Sequence, Optional, OptionalSequence };

struct TensorType {
  DType dtype = DType::Undefined;
  bool has_rank = false;   // false: nothing is known of the shape
  std::vector<Dim> dims;
  Container container = Container::None;
  bool is_container() const { return container != Container::None; }
  // Holds a sequence: a sequence, or an optional sequence.
  bool holds_sequence() const { return container == Container::Sequence || container == Container::OptionalSequence; }

  static TensorType of(const Tensor& t);    // a constant's type: its dtype and static dims
  bool is_static() const;                   // a tensor, its rank and every dim known
  std::vector<int64_t> static_dims() const; // requires is_static()
  std::string shape_string() const;         // "[1, 3, N, ?]", "[?]" ... or "unranked"; "sequence of [2, ?]"
};

std::string container_name(Container c);  // "sequence", "optional", ...
std::string a_container(Container c);     // "a sequence", "an optional", ... (for messages)

struct Value {
  std::string name;
  TensorType type;
  Graph* graph = nullptr;          // the scope that defines it
  Node* producer = nullptr;        // null for graph inputs and constants
  std::vector<Node*> consumers;    // nodes of `graph` that read it, directly or through subgraphs
  std::shared_ptr<const Tensor> constant;  // set for initializers, Constant nodes and folded values
  bool is_graph_input = false;
  bool is_graph_output = false;
  // Bytes the value's buffer must hold: exact when the shape is static, else an upper bound
  // (If branches of different shapes, loops with data-dependent trip counts). 0 = not yet known.
  uint64_t capacity_bytes = 0;
  bool capacity_known = false;  // capacity_bytes is final (it may legitimately be 0)
  bool shape_varies = false;  // the run-time shape may be smaller than the capacity suggests
  // Its size is known only at run time (no inference, folding or bound fixes it): it gets no arena
  // memory but a buffer the session allocates, and grows, outside the arena (TensorFlow Lite's
  // dynamic tensors). Every node that reads or writes it makes its kernel at run time.
  bool dynamic = false;
  // 0: plain row-major. 8 or 16: an NCHW activation stored channel-blocked, as oneDNN's nChw8c /
  // nChw16c ([N][C/b][H][W][b]); only when b divides C, so the bytes are as many as plain.
  // kChannelsLast: stored NHWC. assign_layouts (float32) and assign_int8_layouts (8-bit values
  // between QLinearConvs) decide; the oneDNN kernels read it.
  int channel_block = 0;
  static constexpr int kChannelsLast = -1;

  bool is_constant() const { return constant != nullptr; }
  // Frees a constant's bytes once nothing reads them through the model (a kernel holds its own
  // reordered copy, a pass has folded them into another constant): the value stays a constant of
  // its dtype and dims, so the plan still counts its weight bytes.
  void release_constant_bytes();
};

// The prefix of the attributes memplan's own passes record on nodes (ir/fused_dequantize.h,
// ir/unreachable_branch.h). The importer drops a model file's attributes of that prefix, so only
// memplan writes them.
inline constexpr const char* kReservedAttributePrefix = "memplan_";

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Graphs, Other };
  std::string name;
  Kind kind = Kind::Other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<const Tensor> tensor;
  std::vector<Graph*> graphs;  // owned by the node's `subgraphs`
};

struct Node {
  std::string name;  // never empty: the importer names anonymous nodes "<op>_<index>"
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  int64_t opset = 0;   // the opset version imported for `domain`
  std::vector<Value*> inputs;    // nullptr for an omitted optional input
  std::vector<Value*> outputs;   // nullptr for an omitted optional output
  std::vector<Attribute> attributes;
  std::vector<std::unique_ptr<Graph>> subgraphs;  // If: then, else; Loop/Scan: body
  std::vector<Value*> implicit_inputs;  // values of this node's own scope that its subgraphs read
  // A patch chain's own nodes (passes/patch_regions): its kernel runs them tile by tile. Not a
  // subgraph: nothing plans, shapes or walks it; its values exist only in the kernel's tiles.
  std::unique_ptr<Graph> fused_chain;
  Graph* graph = nullptr;

  const Attribute* attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;  // empty when absent
  Graph* subgraph(const std::string& attr_name) const;            // null when absent
  // Rewriting passes: set (replacing any of the name) or remove an attribute.
  void set_attr_int(const std::string& name, int64_t v);
  void set_attr_ints(const std::string& name, std::vector<int64_t> v);
  void set_attr_string(const std::string& name, std::string v);
  void erase_attr(const std::string& name);
  bool is_control_flow() const { return !subgraphs.empty(); }
  bool touches_dynamic() const;  // reads or writes a dynamic value (its kernel is made at run time)
  std::string describe() const;  // "Conv node 'conv1'"
};

struct Graph {
  std::string name;
  Graph* parent = nullptr;
  Node* owner = nullptr;  // the control-flow node that owns this subgraph
  std::string owner_attribute;  // "then_branch", "else_branch" or "body"
  int depth = 0;          // 0 for the main graph
  std::vector<std::unique_ptr<Value>> values;  // every value this scope defines
  std::vector<std::unique_ptr<Node>> nodes;    // in execution order
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;  // may name inputs, constants or outer values
  std::vector<Value*> initializers;
  // Outer-scope values that this graph or any graph nested in it reads, in first-use order.
  std::vector<Value*> captures;

  Value* find_local(const std::string& name) const;  // this scope only
  Value* lookup(const std::string& name) const;      // this scope, then enclosing ones
  Value* add_value(const std::string& name);         // throws if the scope already defines it
  // A value the passes make: `base`, or "<base>_<k>" when the model already uses that name.
  Value* add_fresh_value(const std::string& base);
  // A constant value a pass makes (named as add_fresh_value names it).
  Value* add_constant(const std::string& base, Tensor t);
  // Moves a value out of this scope (the caller keeps it alive or lets it go).
  std::unique_ptr<Value> release_value(Value* v);
  // A fusion folds `next`, the reader of n's output 0, into n: n writes what `next` wrote, and
  // its old output 0 is released (the caller drops `next`).
  void absorb_output(Node& n, Node& next);
  // Takes a value from another scope; renames it "<name>_<k>" if this scope has the name.
  Value* adopt_value(std::unique_ptr<Value> v);
  std::string path() const;  // "main/If 'if0'.then_branch/..." for messages

 private:
  std::string fresh_name(const std::string& base) const;  // base, or "<base>_<k>" not yet defined
  std::unordered_map<std::string, Value*> by_name_;
};

// A model file's names and descriptions (ModelProto's and its graph's), kept for the API.
struct FileMetadata {
  std::string producer_name, producer_version, domain, description, graph_name, graph_description;
  int64_t version = 0;
  std::map<std::string, std::string> custom;  // metadata_props
};

struct Model {
  std::string path;  // the file it came from
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opsets;  // domain -> version
  std::string producer;
  FileMetadata metadata;
  std::string sha256;  // of the file's bytes
  std::unique_ptr<Graph> main;
};

// Visits g and every graph nested in it, parents before children.
template <typename F>
void for_each_graph(Graph& g, F&& f) {
  std::vector<Graph*> stack{&g};
  while (!stack.empty()) {
    Graph* cur = stack.back();
    stack.pop_back();
    f(*cur);
    for (auto it = cur->nodes.rbegin(); it != cur->nodes.rend(); ++it)
      for (auto sub = (*it)->subgraphs.rbegin(); sub != (*it)->subgraphs.rend(); ++sub) stack.push_back(sub->get());
  }
}

// Rebuilds every value's producer/consumers, every node's implicit inputs and every graph's
// captures from the node lists. Call after a pass that rewires nodes.
void rebuild_uses(Graph& main);

// The only reader of `v`, when v is an intermediate of its graph (not a graph output) read by
// exactly one node of that graph, once; else null. What a fusion may fold away.
Node* sole_consumer(const Value* v);

// Drops the constants (and initializers) of `main` and its subgraphs that nothing reads and no
// graph returns: what a rewriting pass left behind. Call after rebuild_uses.
void drop_unread_constants(Graph& main);

// The frame of a pass that folds nodes away: rewrite(g, dead) runs on `main` and on every graph
// nested in it, rewires g's nodes and puts those it made redundant in `dead` (it may skip nodes
// already there); they are then erased. When any were, uses are rebuilt and the constants nothing
// reads any more dropped. Returns how many nodes went.
int fold_nodes_away(Graph& main, const std::function<void(Graph& g, std::unordered_set<const Node*>& dead)>& rewrite);

// Replaces every read of `from` by `to` in `scope` and every graph nested in it.
void replace_uses(Graph& scope, Value* from, Value* to);

// Orders g's nodes topologically, keeping the file's order where it is already valid (so the
// order is deterministic). Fails naming a node on a cycle. Does not recurse into subgraphs.
void sort_topologically(Graph& g);

}  // namespace memplan
