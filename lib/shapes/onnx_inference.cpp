#include "shapes/onnx_inference.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "ir/resize_sizes.h"
#include "memplan/error.h"
#include "onnx/attributes.h"
#include "onnx/defs/schema.h"
#include "onnx/defs/shape_inference.h"
#include "onnx/container_type.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/tensor_proto.h"
#include "shapes/inference_preconditions.h"
#include "shapes/own_op_inference.h"

namespace memplan {
namespace {

// Constant inputs larger than this are not shown to ONNX: shape functions only read small ones.
constexpr uint64_t kMaxConstantElementsForInference = 1 << 16;

void type_to_proto(const TensorType& t, onnx::TypeProto& p) {
  onnx::TypeProto* element = &p;
  if (t.container == Container::Optional || t.container == Container::OptionalSequence)
    element = element->mutable_optional_type()->mutable_elem_type();
  if (t.holds_sequence()) element = element->mutable_sequence_type()->mutable_elem_type();
  auto* tt = element->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(t.dtype));
  if (!t.has_rank) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : t.dims) {
    auto* dim = shape->add_dim();
    if (d.known()) dim->set_dim_value(d.value);
    else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
  }
}

TensorType type_from_proto(const onnx::TypeProto& proto) {
  TensorType t;
  const onnx::TypeProto* p = &container_element(proto, t.container);
  if (!p->has_tensor_type()) return t;
  const auto& tt = p->tensor_type();
  t.dtype = static_cast<DType>(tt.elem_type());
  if (!tt.has_shape()) return t;
  t.has_rank = true;
  for (const auto& d : tt.shape().dim()) {
    Dim dim;
    if (d.has_dim_value() && d.dim_value() >= 0) dim.value = d.dim_value();
    else if (d.has_dim_param()) dim.symbol = d.dim_param();
    t.dims.push_back(dim);
  }
  return t;
}

// Attributes whose default ONNX 1.12's inference function reads otherwise than its schema states:
// the schema's default is shown to it explicitly. STFT's onesided defaults to 1, but its
// inference reads 0 and would type the output with frame_length bins instead of the
// frame_length / 2 + 1 unique ones that the op (and ONNX's own test_stft) gives.
void show_misread_defaults(const Node& node, std::map<std::string, onnx::AttributeProto>& attributes) {
  if (!node.domain.empty() || node.op_type != "STFT" || attributes.count("onesided")) return;
  onnx::AttributeProto& a = attributes["onesided"];
  a.set_name("onesided");
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(1);
}

class NodeInferenceContext final : public onnx::InferenceContext {
 public:
  explicit NodeInferenceContext(const Node& node) : node_(node) {
    for (const Attribute& a : node.attributes) {
      if (a.kind == Attribute::Kind::Graph || a.kind == Attribute::Kind::Graphs) continue;
      attribute_to_proto(a, attributes_[a.name]);
    }
    show_misread_defaults(node, attributes_);
    input_types_.resize(node.inputs.size());
    input_data_.resize(node.inputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Value* v = node.inputs[i];
      if (!v || v->type.dtype == DType::Undefined) continue;
      input_types_[i] = std::make_unique<onnx::TypeProto>();
      type_to_proto(v->type, *input_types_[i]);
      if (v->constant && v->constant->element_count() <= kMaxConstantElementsForInference) {
        input_data_[i] = std::make_unique<onnx::TensorProto>();
        tensor_to_proto(*v->constant, *input_data_[i]);
      }
    }
    outputs_.resize(node.outputs.size());
  }

  const onnx::AttributeProto* getAttribute(const std::string& name) const override {
    auto it = attributes_.find(name);
    return it == attributes_.end() ? nullptr : &it->second;
  }
  size_t getNumInputs() const override { return node_.inputs.size(); }
  const onnx::TypeProto* getInputType(size_t i) const override {
    return i < input_types_.size() ? input_types_[i].get() : nullptr;
  }
  const onnx::TensorProto* getInputData(size_t i) const override {
    return i < input_data_.size() ? input_data_[i].get() : nullptr;
  }
  size_t getNumOutputs() const override { return outputs_.size(); }
  onnx::TypeProto* getOutputType(size_t i) override { return &outputs_.at(i); }
  onnx::GraphInferencer* getGraphAttributeInferencer(const std::string&) override { return nullptr; }
  const onnx::SparseTensorProto* getInputSparseData(size_t) const override { return nullptr; }
  const onnx::TensorShapeProto* getSymbolicInput(size_t) const override { return nullptr; }

  const onnx::TypeProto& output(size_t i) const { return outputs_[i]; }

 private:
  const Node& node_;
  std::map<std::string, onnx::AttributeProto> attributes_;
  std::vector<std::unique_ptr<onnx::TypeProto>> input_types_;
  std::vector<std::unique_ptr<onnx::TensorProto>> input_data_;
  std::vector<onnx::TypeProto> outputs_;
};

const onnx::OpSchema* schema_of(const Node& node) {
  return onnx::OpSchemaRegistry::Schema(node.op_type, static_cast<int>(node.opset), node.domain);
}

[[noreturn]] void fail_at_node(const Node& node, const std::string& file, std::string msg) {
  if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
  fail(file + ": " + node.graph->path() + ": " + node.describe() + ": " + msg);
}

// Runs a libonnx call: whatever it throws becomes one line naming the file, graph and node.
template <typename F>
void guarded(const Node& node, const std::string& file, const std::string& what, F&& call) {
  try {
    call();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail_at_node(node, file, what + e.what());
  } catch (...) {
    fail_at_node(node, file, what + "ONNX failed with an unknown exception");
  }
}

// The node's attributes as ONNX protos, with the schema's default for each one it omits.
std::map<std::string, onnx::AttributeProto> attributes_with_defaults(const Node& node, const onnx::OpSchema& schema) {
  std::map<std::string, onnx::AttributeProto> out;
  for (const Attribute& a : node.attributes) {
    if (a.kind == Attribute::Kind::Graph || a.kind == Attribute::Kind::Graphs) continue;
    attribute_to_proto(a, out[a.name]);
  }
  for (const auto& [name, a] : schema.attributes())
    if (!out.count(name) && a.default_value.type() != onnx::AttributeProto::UNDEFINED) {
      out[name] = a.default_value;
      out[name].set_name(name);
    }
  return out;
}

// A body is built and read by input and output position: a node with too many or too few of
// them, or missing a required input, would bind the wrong values (or none).
void check_arity(const Node& node, const onnx::OpSchema& schema, const std::string& file) {
  const size_t ins = node.inputs.size(), outs = node.outputs.size();
  if (ins < static_cast<size_t>(schema.min_input()) || ins > static_cast<size_t>(schema.max_input()))
    fail_at_node(node, file, "has " + std::to_string(ins) + " inputs; ONNX's schema takes " +
                                 std::to_string(schema.min_input()) + " to " + std::to_string(schema.max_input()));
  if (outs < static_cast<size_t>(schema.min_output()) || outs > static_cast<size_t>(schema.max_output()))
    fail_at_node(node, file, "has " + std::to_string(outs) + " outputs; ONNX's schema gives " +
                                 std::to_string(schema.min_output()) + " to " + std::to_string(schema.max_output()));
  const auto& formal = schema.inputs();
  for (size_t i = 0; i < ins && i < formal.size(); ++i)
    if (!node.inputs[i] && formal[i].GetOption() == onnx::OpSchema::Single)
      fail_at_node(node, file, "input " + std::to_string(i) + " ('" + formal[i].GetName() + "') is required");
}

// What a context-dependent body builder sees: the node (its inputs and outputs present or
// omitted, its attributes with defaults) and its input types.
void build_context_dependent(const Node& node, const onnx::OpSchema& schema, const std::string& file,
                             FunctionBody& body) {
  onnx::NodeProto np;
  np.set_op_type(node.op_type);
  np.set_domain(node.domain);
  np.set_name(node.name);
  std::vector<onnx::TypeProto> types(node.inputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value* v = node.inputs[i];
    np.add_input(v ? "input_" + std::to_string(i) : "");
    if (v && v->type.dtype != DType::Undefined) type_to_proto(v->type, types[i]);
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) np.add_output(node.outputs[i] ? "output_" + std::to_string(i) : "");
  for (const auto& [name, a] : body.attributes) *np.add_attribute() = a;
  bool built = false;
  guarded(node, file, "building its function body: ", [&] {
    built = schema.BuildContextDependentFunction(onnx::FunctionBodyBuildContextImpl(np, types), body.proto);
  });
  if (!built) fail_at_node(node, file, "ONNX could not build its function body for these inputs and attributes");
}

// Fills the node's output types from a context's outputs: inferred dims win over unknown ones.
void merge_outputs(Node& node, const NodeInferenceContext& ctx) {
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    Value* out = node.outputs[i];
    if (!out) continue;
    TensorType inferred = type_from_proto(ctx.output(i));
    if (inferred.is_container()) out->type.container = inferred.container;
    if (inferred.dtype != DType::Undefined) out->type.dtype = inferred.dtype;
    if (!inferred.has_rank) continue;
    if (!out->type.has_rank || out->type.dims.size() != inferred.dims.size()) {
      out->type.has_rank = true;
      out->type.dims = inferred.dims;
      continue;
    }
    for (size_t d = 0; d < inferred.dims.size(); ++d)
      if (inferred.dims[d].known() || !out->type.dims[d].known()) out->type.dims[d] = inferred.dims[d];
  }
}

// ONNX's inference computes sizes from attributes without asking whether they fit (a Conv
// kernel larger than its padded input gives a negative size): such a node is invalid.
void refuse_negative_dims(const Node& node, const NodeInferenceContext& ctx, const std::string& file) {
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (!node.outputs[i] || !ctx.output(i).has_tensor_type()) continue;
    const auto& shape = ctx.output(i).tensor_type().shape();
    for (int d = 0; d < shape.dim_size(); ++d)
      if (shape.dim(d).has_dim_value() && shape.dim(d).dim_value() < 0)
        fail_at_node(node, file,
                     "its output '" + node.outputs[i]->name + "' would have size " +
                         std::to_string(shape.dim(d).dim_value()) + " in dimension " + std::to_string(d) +
                         ": its attributes do not fit its inputs' shapes (a window larger than its padded input?)");
  }
}

// ONNX 1.12's STFT inference counts ceil((length - frame) / frame_step) + 1 frames, but a frame
// runs past the signal's end there: the op gives floor((length - frame) / frame_step) + 1 (ONNX's
// reference and test_stft, as ONNX Runtime). The frame count it inferred is recomputed.
void correct_stft_frames(const Node& node, NodeInferenceContext& ctx) {
  if (!node.domain.empty() || node.op_type != "STFT" || node.outputs.empty() || !node.outputs[0]) return;
  onnx::TypeProto* out = ctx.getOutputType(0);
  if (!out->has_tensor_type() || !out->tensor_type().has_shape() || out->tensor_type().shape().dim_size() != 4 ||
      !out->tensor_type().shape().dim(1).has_dim_value())
    return;
  auto at = [&](size_t i) { return i < node.inputs.size() ? node.inputs[i] : nullptr; };
  const Value* signal = at(0);
  const Value* step = at(1);
  const Value* window = at(2);
  const Value* frame = at(3);
  if (!signal || !signal->type.has_rank || signal->type.dims.size() != 3 || !signal->type.dims[1].known()) return;
  if (!step || !step->constant || step->constant->element_count() != 1) return;
  int64_t n = -1;
  if (window && window->type.has_rank && window->type.dims.size() == 1 && window->type.dims[0].known())
    n = window->type.dims[0].value;
  if (frame && frame->constant && frame->constant->element_count() == 1) n = frame->constant->int_at(0);
  const int64_t length = signal->type.dims[1].value, s = step->constant->int_at(0);
  if (n < 1 || s < 1 || length < n) return;  // the kernel refuses these, naming the node
  out->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value((length - n) / s + 1);
}

// A Resize-18 keep_aspect_ratio_policy's rounded output shape (ir/resize_sizes.h), where version
// 13's inference floors in * scale.
void correct_resize_shape(const Node& node, NodeInferenceContext& ctx) {
  const Attribute* shape = node.domain.empty() && node.op_type == "Resize" ? node.attr(kResizeOutputShapeAttr) : nullptr;
  if (!shape || node.outputs.empty() || !node.outputs[0]) return;
  onnx::TypeProto* out = ctx.getOutputType(0);
  if (!out->has_tensor_type()) return;
  auto* dims = out->mutable_tensor_type()->mutable_shape();
  dims->clear_dim();
  for (int64_t d : shape->ints) dims->add_dim()->set_dim_value(d);
}

// Typed and ranked: a node made again at run time has its outputs' element types already (from
// the compile), so an op ONNX infers only through its function body (GreaterOrEqual-16) would
// otherwise keep a rankless output there, and its size could not be told.
bool every_output_ranked(const Node& node) {
  return std::all_of(node.outputs.begin(), node.outputs.end(),
                     [](const Value* v) { return !v || (v->type.dtype != DType::Undefined && v->type.has_rank); });
}

// Infers a function body node by node with ONNX's own inference functions, for the ops ONNX 1.12
// gives no inference function of their own (GreaterOrEqual, LessOrEqual, MeanVarianceNormalization).
// ONNX's InferShapeForFunctionNode does the same but drops every body node's error, leaving the
// output typed and shapeless: incompatible inputs would then read as a missing --bound.
void infer_through_body(Node& node, const std::string& file) {
  std::optional<FunctionBody> body = function_body_of(node, file);
  if (!body || body_has_subgraphs(body->proto)) return;
  const onnx::FunctionProto& f = body->proto;
  NodeInferenceContext ctx(node);
  std::unordered_map<std::string, onnx::TypeProto*> types;
  std::unordered_map<std::string, const onnx::TensorProto*> data;
  std::deque<onnx::TypeProto> type_store;  // deques keep the addresses the maps hold
  std::deque<onnx::NodeProto> node_store;
  for (int i = 0; i < f.input_size(); ++i) {
    const onnx::TypeProto* t = ctx.getInputType(static_cast<size_t>(i));
    if (!t) continue;  // omitted: the body nodes reading it see no type
    types[f.input(i)] = &type_store.emplace_back(*t);
    if (const onnx::TensorProto* d = ctx.getInputData(static_cast<size_t>(i))) data[f.input(i)] = d;
  }
  for (const onnx::NodeProto& n : f.node()) {
    onnx::NodeProto& r = node_store.emplace_back(resolve_body_node(*body, n));
    const std::string what = "its function body's " + r.op_type() + " node: ";
    const std::string domain = r.domain() == "ai.onnx" ? "" : r.domain();
    const std::optional<int64_t> version = body_opset(*body, node, domain);
    const onnx::OpSchema* schema =
        version ? onnx::OpSchemaRegistry::Schema(r.op_type(), static_cast<int>(*version), domain) : nullptr;
    if (!schema) fail_at_node(node, file, what + "ONNX has no schema for it");
    onnx::shape_inference::InferenceContextImpl node_ctx(r, types, data, {});
    guarded(node, file, what, [&] { schema->GetTypeAndShapeInferenceFunction()(node_ctx); });
    for (int k = 0; k < r.output_size(); ++k)
      if (!r.output(k).empty()) types[r.output(k)] = &type_store.emplace_back(*node_ctx.getOutputType(static_cast<size_t>(k)));
    // A Constant's value is data for the nodes after it (the Softmax body's axes, say).
    if (r.op_type() == "Constant" && r.output_size() == 1 && r.attribute_size() == 1 && r.attribute(0).has_t())
      data[r.output(0)] = &r.attribute(0).t();
  }
  for (int k = 0; k < f.output_size() && static_cast<size_t>(k) < node.outputs.size(); ++k)
    if (auto it = types.find(f.output(k)); it != types.end()) *ctx.getOutputType(static_cast<size_t>(k)) = *it->second;
  merge_outputs(node, ctx);
}

}  // namespace

bool has_onnx_schema(const Node& node) { return schema_of(node) != nullptr; }

void check_schema_arity(const Node& node, const std::string& file) {
  if (const onnx::OpSchema* schema = schema_of(node)) check_arity(node, *schema, file);
}

bool has_function_body(const Node& node) {
  const onnx::OpSchema* schema = schema_of(node);
  return schema && (schema->HasFunction() || schema->HasContextDependentFunction());
}

std::optional<FunctionBody> function_body_of(const Node& node, const std::string& file) {
  // A node with subgraphs (SequenceMap's body) is never expanded: its function holds a Loop.
  const onnx::OpSchema* schema = node.is_control_flow() ? nullptr : schema_of(node);
  if (!schema || (!schema->HasFunction() && !schema->HasContextDependentFunction())) return std::nullopt;
  check_arity(node, *schema, file);
  FunctionBody body;
  body.attributes = attributes_with_defaults(node, *schema);
  if (schema->HasFunction()) {
    body.proto = *schema->GetFunction();
  } else {
    build_context_dependent(node, *schema, file, body);
  }
  return body;
}

bool body_has_subgraphs(const onnx::FunctionProto& f) {
  return std::any_of(f.node().begin(), f.node().end(), [](const onnx::NodeProto& n) {
    return std::any_of(n.attribute().begin(), n.attribute().end(), [](const onnx::AttributeProto& a) {
      return a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS || a.has_g() ||
             a.graphs_size() > 0;
    });
  });
}

onnx::NodeProto resolve_body_node(const FunctionBody& body, const onnx::NodeProto& n) {
  onnx::NodeProto r = n;
  r.clear_attribute();
  for (const auto& a : n.attribute()) {
    if (a.ref_attr_name().empty()) {
      *r.add_attribute() = a;
      continue;
    }
    auto it = body.attributes.find(a.ref_attr_name());
    if (it == body.attributes.end()) continue;
    onnx::AttributeProto* copy = r.add_attribute();
    *copy = it->second;
    copy->set_name(a.name());
  }
  return r;
}

std::optional<int64_t> body_opset(const FunctionBody& body, const Node& node, const std::string& domain) {
  auto canonical = [](const std::string& d) { return d == "ai.onnx" ? std::string() : d; };
  for (const auto& op : body.proto.opset_import())
    if (canonical(op.domain()) == canonical(domain)) return op.version();
  if (canonical(domain).empty() && node.domain.empty()) return node.opset;
  return std::nullopt;
}

// The schema whose inference types `node`. AveragePool-19's dilations and LpPool-18's dilations
// and ceil_mode reach ONNX 1.12's AveragePool-11 and LpPool-11 (onnx/opset_adapter.h), whose
// inference ignores them; MaxPool-12's gives the output size with both.
const onnx::OpSchema* inference_schema_of(const Node& node) {
  if (node.domain.empty() && (node.op_type == "AveragePool" || node.op_type == "LpPool") &&
      (node.attr("dilations") || node.attr("ceil_mode")))
    return onnx::OpSchemaRegistry::Schema("MaxPool", 12, "");
  return schema_of(node);
}

void infer_with_onnx(Node& node, const std::string& file) {
  if (is_own_op(node)) return infer_own_op(node, file);
  const onnx::OpSchema* schema = inference_schema_of(node);
  if (!schema) fail_internal("no schema for " + node.describe());
  check_inference_preconditions(node, file);
  NodeInferenceContext ctx(node);
  guarded(node, file, "", [&] { schema->GetTypeAndShapeInferenceFunction()(ctx); });
  correct_stft_frames(node, ctx);
  correct_resize_shape(node, ctx);
  refuse_negative_dims(node, ctx, file);
  merge_outputs(node, ctx);
  if (!every_output_ranked(node)) infer_through_body(node, file);
}

}  // namespace memplan
