// Builds small onnx::ModelProto graphs in C++ with the protobuf classes, so importer and shape
// tests can make exactly the graph they need (shadowing, deep nesting, untyped inputs, odd opsets)
// and import it through memplan::import_model_bytes, the same path a file takes.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnx/importer.h"
#include "onnx/onnx_pb.h"

namespace memplan::test {

// One dimension of a declared shape: a size (D(4)) or a symbol (D("N")).
struct D {
  int64_t value = -1;
  std::string symbol;
  D(int64_t v) : value(v) {}           // NOLINT: implicit on purpose, {1, "N", 3}
  D(int v) : value(v) {}               // NOLINT
  D(const char* s) : symbol(s) {}      // NOLINT
};
using Shape = std::vector<D>;

namespace elem {
constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;
constexpr int32_t kInt32 = onnx::TensorProto::INT32;
constexpr int32_t kInt8 = onnx::TensorProto::INT8;
constexpr int32_t kBool = onnx::TensorProto::BOOL;
}  // namespace elem

// A tensor ValueInfo with a shape ({} is a scalar), or with no shape field (rank unknown).
inline onnx::ValueInfoProto value_info_unranked(const std::string& name, int32_t elem_type) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  vi.mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  return vi;
}

inline onnx::ValueInfoProto value_info(const std::string& name, int32_t elem_type, const Shape& shape) {
  onnx::ValueInfoProto vi = value_info_unranked(name, elem_type);
  auto* sp = vi.mutable_type()->mutable_tensor_type()->mutable_shape();
  for (const D& d : shape) {
    auto* dim = sp->add_dim();
    if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
    else dim->set_dim_value(d.value);
  }
  return vi;
}

inline void add_input(onnx::GraphProto& g, const std::string& name, int32_t elem_type, const Shape& shape) {
  *g.add_input() = value_info(name, elem_type, shape);
}
inline void add_input_unranked(onnx::GraphProto& g, const std::string& name, int32_t elem_type) {
  *g.add_input() = value_info_unranked(name, elem_type);
}

// An input with no type at all (allowed for subgraph inputs: the parent's type is used).
inline void add_untyped_input(onnx::GraphProto& g, const std::string& name) { g.add_input()->set_name(name); }

inline void add_output(onnx::GraphProto& g, const std::string& name, int32_t elem_type, const Shape& shape) {
  *g.add_output() = value_info(name, elem_type, shape);
}
inline void add_output_unranked(onnx::GraphProto& g, const std::string& name, int32_t elem_type) {
  *g.add_output() = value_info_unranked(name, elem_type);
}

inline void add_untyped_output(onnx::GraphProto& g, const std::string& name) { g.add_output()->set_name(name); }

inline onnx::NodeProto* add_node(onnx::GraphProto& g, const std::string& op_type, std::vector<std::string> inputs,
                                 std::vector<std::string> outputs, const std::string& name = "") {
  auto* n = g.add_node();
  n->set_op_type(op_type);
  n->set_name(name);
  for (auto& in : inputs) n->add_input(in);
  for (auto& out : outputs) n->add_output(out);
  return n;
}

inline onnx::AttributeProto* add_attr(onnx::NodeProto* n, const std::string& name,
                                      onnx::AttributeProto::AttributeType type) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}

inline void attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  add_attr(n, name, onnx::AttributeProto::INT)->set_i(v);
}
inline void attr_float(onnx::NodeProto* n, const std::string& name, float v) {
  add_attr(n, name, onnx::AttributeProto::FLOAT)->set_f(v);
}
inline void attr_ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = add_attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void attr_floats(onnx::NodeProto* n, const std::string& name, std::vector<float> v) {
  auto* a = add_attr(n, name, onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
inline void attr_graph(onnx::NodeProto* n, const std::string& name, const onnx::GraphProto& g) {
  *add_attr(n, name, onnx::AttributeProto::GRAPH)->mutable_g() = g;
}
inline void attr_tensor(onnx::NodeProto* n, const std::string& name, const onnx::TensorProto& t) {
  *add_attr(n, name, onnx::AttributeProto::TENSOR)->mutable_t() = t;
}

// Tensors with their bytes in raw_data (little-endian, as every supported host is).
template <typename T>
onnx::TensorProto raw_tensor(const std::string& name, int32_t elem_type, std::vector<int64_t> dims,
                             const std::vector<T>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(elem_type);
  for (int64_t d : dims) t.add_dims(d);
  std::string raw(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  t.set_raw_data(raw);
  return t;
}
inline onnx::TensorProto tensor_f32(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& v) {
  return raw_tensor(name, elem::kFloat, std::move(dims), v);
}
inline onnx::TensorProto tensor_i64(const std::string& name, std::vector<int64_t> dims, const std::vector<int64_t>& v) {
  return raw_tensor(name, elem::kInt64, std::move(dims), v);
}
inline onnx::TensorProto tensor_bool(const std::string& name, std::vector<int64_t> dims, const std::vector<uint8_t>& v) {
  return raw_tensor(name, elem::kBool, std::move(dims), v);
}

inline void add_initializer(onnx::GraphProto& g, const onnx::TensorProto& t) { *g.add_initializer() = t; }

// A Constant node (attribute `value`) producing `t.name()`.
inline onnx::NodeProto* add_constant(onnx::GraphProto& g, const onnx::TensorProto& t) {
  auto* n = add_node(g, "Constant", {}, {t.name()}, "const_" + t.name());
  attr_tensor(n, "value", t);
  return n;
}

// A Loop body's three leading pieces: inputs (iter, cond_in) and the pass-through condition
// output (Identity cond_in -> cond_out, so it is always true). The caller adds carried values.
inline onnx::GraphProto loop_body_skeleton(const std::string& name, const std::string& prefix = "") {
  onnx::GraphProto body;
  body.set_name(name);
  add_input(body, prefix + "iter", elem::kInt64, Shape{});
  add_input(body, prefix + "cond_in", elem::kBool, Shape{});
  add_node(body, "Identity", {prefix + "cond_in"}, {prefix + "cond_out"}, prefix + "pass_cond");
  add_output(body, prefix + "cond_out", elem::kBool, Shape{});
  return body;
}

// A model with one graph; opset of the default domain and IR version are parameters.
class ModelBuilder {
 public:
  explicit ModelBuilder(const std::string& graph_name = "hand_built", int64_t opset = 17, int64_t ir_version = 8) {
    model_.set_ir_version(ir_version);
    model_.set_producer_name("memplan-tests");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name(graph_name);
  }

  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  onnx::ModelProto& proto() { return model_; }

  void add_opset(const std::string& domain, int64_t version) {
    auto* op = model_.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }

  std::string bytes() const { return model_.SerializeAsString(); }

  // Imports through the same entry point as a file; `path` is used for messages and external data.
  Model import(const std::string& path = "hand_built.onnx") const { return import_model_bytes(bytes(), path); }

 private:
  onnx::ModelProto model_;
};

// ---- If --------------------------------------------------------------------------------------------

// A branch graph named `name`, for the caller's nodes and outputs.
inline onnx::GraphProto branch_graph(const std::string& name) {
  onnx::GraphProto b;
  b.set_name(name);
  return b;
}

// Adds op(inputs) -> out.name(), the node named `node`, and declares `out` an output of g.
inline void add_node_to_output(onnx::GraphProto& g, const std::string& op, std::vector<std::string> inputs,
                               const onnx::ValueInfoProto& out, const std::string& node) {
  add_node(g, op, std::move(inputs), {out.name()}, node);
  *g.add_output() = out;
}

// A branch of one node: op(inputs) -> out.name(), the node named `node`, `out` the branch's output.
inline onnx::GraphProto one_node_branch(const std::string& name, const std::string& op, std::vector<std::string> inputs,
                                        const onnx::ValueInfoProto& out, const std::string& node) {
  onnx::GraphProto b = branch_graph(name);
  add_node_to_output(b, op, std::move(inputs), out, node);
  return b;
}

// If(cond) -> outputs in g, with then_branch and else_branch as its two graph attributes.
inline onnx::NodeProto* add_if(onnx::GraphProto& g, const std::string& cond, std::vector<std::string> outputs,
                               const onnx::GraphProto& then_branch, const onnx::GraphProto& else_branch,
                               const std::string& name = "if") {
  onnx::NodeProto* n = add_node(g, "If", {cond}, std::move(outputs), name);
  attr_graph(n, "then_branch", then_branch);
  attr_graph(n, "else_branch", else_branch);
  return n;
}

// The If model the shape and import tests keep writing: the outer values its branches read (main
// graph inputs, in order), a condition (a bool scalar input, a constant initializer, or a value
// the caller computes), a then- and an else-branch (graphs "then" and "else") for the caller to
// fill, and If(condition) -> y named "if", added to the main graph when add_if() is called, after
// whatever nodes the caller has put there so far.
//   IfModel b;
//   b.input("x", elem::kFloat, {4}).input("z", elem::kFloat, {4}).condition_input("p");
//   b.then_node("Identity", {"x"}, value_info_unranked("t_out", elem::kFloat), "t_id");
//   b.else_node("Neg", {"z"}, value_info("e_out", elem::kFloat, {4}), "e_neg");
//   b.add_if();
//   add_output_unranked(b.graph(), "y", elem::kFloat);
class IfModel : public ModelBuilder {
 public:
  explicit IfModel(const std::string& graph_name = "hand_built", int64_t opset = 17)
      : ModelBuilder(graph_name, opset), then_(branch_graph("then")), else_(branch_graph("else")) {}

  // A main-graph input (a value the branches may read).
  IfModel& input(const std::string& name, int32_t elem_type, const Shape& shape) {
    add_input(graph(), name, elem_type, shape);
    return *this;
  }
  // The condition: a bool scalar input, a bool scalar initializer, or a value the caller makes.
  IfModel& condition_input(const std::string& name = "p") {
    add_input(graph(), name, elem::kBool, {});
    return condition(name);
  }
  IfModel& condition_constant(bool value, const std::string& name = "cond") {
    add_initializer(graph(), tensor_bool(name, {}, {static_cast<uint8_t>(value ? 1 : 0)}));
    return condition(name);
  }
  IfModel& condition(const std::string& name) {
    cond_ = name;
    return *this;
  }

  onnx::GraphProto& then_branch() { return then_; }
  onnx::GraphProto& else_branch() { return else_; }
  // Adds op(inputs) -> out.name() to the branch and declares `out` as one of its outputs.
  IfModel& then_node(const std::string& op, std::vector<std::string> inputs, const onnx::ValueInfoProto& out,
                     const std::string& node) {
    add_node_to_output(then_, op, std::move(inputs), out, node);
    return *this;
  }
  IfModel& else_node(const std::string& op, std::vector<std::string> inputs, const onnx::ValueInfoProto& out,
                     const std::string& node) {
    add_node_to_output(else_, op, std::move(inputs), out, node);
    return *this;
  }

  // Adds If(condition) -> outputs, holding the two branches as they are now, to the main graph.
  onnx::NodeProto* add_if(std::vector<std::string> outputs = {"y"}, const std::string& name = "if") {
    return memplan::test::add_if(graph(), cond_, std::move(outputs), then_, else_, name);
  }

 private:
  onnx::GraphProto then_, else_;
  std::string cond_;
};

// Helpers for looking at an imported IR.
inline Node* find_node(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes)
    if (n->name == name) return n.get();
  return nullptr;
}

inline size_t count_graphs(Graph& g) {
  size_t n = 0;
  for_each_graph(g, [&](Graph&) { ++n; });
  return n;
}

inline size_t count_nodes_recursive(Graph& g) {
  size_t n = 0;
  for_each_graph(g, [&](Graph& s) { n += s.nodes.size(); });
  return n;
}

inline std::vector<int64_t> dims_of(const Value* v) {
  std::vector<int64_t> out;
  for (const Dim& d : v->type.dims) out.push_back(d.value);
  return out;
}

}  // namespace memplan::test
