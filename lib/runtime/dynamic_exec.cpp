#include "runtime/dynamic_exec.h"

#include <cstring>

#include "memplan/error.h"
#include "runtime/kernel_registry.h"
#include "runtime/kernels/common/shape_common.h"
#include "shapes/onnx_inference.h"
#include "shapes/runtime_bounds.h"
#include "util/checked.h"

namespace memplan::rt {
namespace {

// Integer inputs this small may be shapes, axes or limits: inference is shown their values.
constexpr uint64_t kMaxShownElements = 64;

bool shows_values(const TensorView& v) {
  return (v.dtype == DType::Int64 || v.dtype == DType::Int32) && v.element_count() <= kMaxShownElements;
}

void append_signature(std::vector<int64_t>& sig, std::span<const TensorView> inputs) {
  sig.clear();
  for (const TensorView& v : inputs) {
    sig.push_back(v.data ? v.rank : -1);
    for (int d = 0; d < v.rank; ++d) sig.push_back(v.dims[static_cast<size_t>(d)]);
    if (v.data && shows_values(v))
      for (uint64_t i = 0; i < v.element_count(); ++i) sig.push_back(shape::int_at(v, i));
  }
}

}  // namespace

DynamicNode::DynamicNode(const Node& original) : original_(original) {
  node_.name = original.name;
  node_.op_type = original.op_type;
  node_.domain = original.domain;
  node_.opset = original.opset;
  node_.attributes = original.attributes;
}

void DynamicNode::prepare(std::span<const TensorView> inputs, DnnlContext& dnnl, const std::string& file) {
  append_signature(probe_, inputs);  // reuses probe_'s capacity: no allocation once warmed up
  if (kernel_ && probe_ == signature_) return;  // the kernel made last time still fits
  const std::string where = file + ": " + original_.describe();

  // Fresh typed values: each input as it is now, each output as far as the compile knew it.
  scope_ = std::make_unique<Graph>();
  scope_->name = original_.graph ? original_.graph->name : "main";
  node_.graph = scope_.get();
  node_.inputs.clear();
  node_.outputs.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* orig = original_.inputs[i];
    if (!orig) {
      node_.inputs.push_back(nullptr);
      continue;
    }
    Value* v = scope_->add_value("input" + std::to_string(i));
    const TensorView& t = inputs[i];
    v->type.dtype = t.dtype;
    v->type.has_rank = true;
    for (int d = 0; d < t.rank; ++d) v->type.dims.push_back(Dim{t.dims[static_cast<size_t>(d)], {}});
    v->capacity_bytes = t.byte_size();
    v->capacity_known = true;
    if (orig->constant) {
      v->constant = orig->constant;
    } else if (shows_values(t)) {
      auto c = std::make_shared<Tensor>();
      c->dtype = t.dtype;
      c->dims.assign(t.dims.begin(), t.dims.begin() + t.rank);
      c->bytes.assign(t.data, t.data + t.byte_size());
      v->constant = std::move(c);
    }
    node_.inputs.push_back(v);
  }
  for (size_t k = 0; k < original_.outputs.size(); ++k) {
    const Value* orig = original_.outputs[k];
    if (!orig) {
      node_.outputs.push_back(nullptr);
      continue;
    }
    Value* v = scope_->add_value("output" + std::to_string(k));
    v->type.dtype = orig->type.dtype;
    v->producer = &node_;
    node_.outputs.push_back(v);
  }
  infer_with_onnx(node_, file);
  bound_by_inputs(node_, {});

  out_bytes_.assign(node_.outputs.size(), 0);
  for (size_t k = 0; k < node_.outputs.size(); ++k) {
    Value* v = node_.outputs[k];
    if (!v) continue;
    const std::string what = where + ": output '" + (original_.outputs[k]->name) + "'";
    if (v->type.is_static()) {
      v->capacity_bytes = checked_mul(checked_element_count(v->type.static_dims(), what), dtype_size(v->type.dtype), what);
      v->capacity_known = true;
    } else if (!v->capacity_known) {
      fail(what + ": its size cannot be told from the inputs' shapes " + v->type.shape_string() +
           " at run time");
    }
    if (v->type.dims.size() > static_cast<size_t>(kMaxRank))
      fail_unsupported(what + ": rank " + std::to_string(v->type.dims.size()) + " is more than memplan supports");
    out_bytes_[k] = v->capacity_bytes;
  }

  const KernelFactory factory = KernelRegistry::instance().find(node_.op_type, node_.domain);
  if (!factory) fail_unsupported(where + ": no kernel");
  const KernelEnv env{&dnnl, file};
  kernel_ = factory(node_, env);
  if (!kernel_) fail_unsupported(where + ": no kernel for its types or attributes at these shapes");
  state_ = kernel_->make_state();
  scratchpad_.assign(kernel_->scratchpad_bytes() + 64, std::byte{0});
  signature_ = probe_;
}

}  // namespace memplan::rt
