#include "shapes/onnx_inference.h"

#include <memory>

#include "memplan/error.h"
#include "onnx/attributes.h"
#include "onnx/defs/schema.h"
#include "onnx/defs/shape_inference.h"
#include "onnx/tensor_proto.h"

namespace memplan {
namespace {

// Constant inputs larger than this are not shown to ONNX: shape functions only read small ones.
constexpr uint64_t kMaxConstantElementsForInference = 1 << 16;

void type_to_proto(const TensorType& t, onnx::TypeProto& p) {
  auto* tt = p.mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(t.dtype));
  if (!t.has_rank) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : t.dims) {
    auto* dim = shape->add_dim();
    if (d.known()) dim->set_dim_value(d.value);
    else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
  }
}

TensorType type_from_proto(const onnx::TypeProto& p) {
  TensorType t;
  if (!p.has_tensor_type()) return t;
  const auto& tt = p.tensor_type();
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

class NodeInferenceContext final : public onnx::InferenceContext {
 public:
  explicit NodeInferenceContext(const Node& node) : node_(node) {
    for (const Attribute& a : node.attributes) {
      if (a.kind == Attribute::Kind::Graph || a.kind == Attribute::Kind::Graphs) continue;
      attribute_to_proto(a, attributes_[a.name]);
    }
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

}  // namespace

bool has_onnx_schema(const Node& node) { return schema_of(node) != nullptr; }

void infer_with_onnx(Node& node, const std::string& file) {
  const onnx::OpSchema* schema = schema_of(node);
  if (!schema) fail_internal("no schema for " + node.describe());
  NodeInferenceContext ctx(node);
  try {
    schema->GetTypeAndShapeInferenceFunction()(ctx);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    fail(file + ": " + node.graph->path() + ": " + node.describe() + ": " + msg);
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    Value* out = node.outputs[i];
    if (!out) continue;
    TensorType inferred = type_from_proto(ctx.output(i));
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

}  // namespace memplan
