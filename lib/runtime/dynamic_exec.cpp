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

DynamicNode::DynamicNode(const Node& original) : original_(original) {}

void DynamicNode::prepare(std::span<const TensorView> inputs, DnnlContext& dnnl, const std::string& file) {
  append_signature(probe_, inputs);  // reuses probe_'s capacity: no allocation once warmed up
  if (current_ && probe_ == current_->signature) return;  // the same shapes as last time
  for (const auto& m : kept_)
    if (m->kernel && m->signature == probe_) {
      current_ = m.get();
      return;
    }
  if (kept_.size() < kKept) kept_.push_back(std::make_unique<Made>());
  Made& m = *kept_.back();  // a new place, or the spare once all are taken
  current_ = nullptr;
  m.kernel.reset();  // a half-made entry is never found: make() sets the kernel last
  make(m, inputs, dnnl, file);
  m.signature = probe_;
  current_ = &m;
  ++made_;
}

void DynamicNode::make(Made& m, std::span<const TensorView> inputs, DnnlContext& dnnl, const std::string& file) {
  const std::string where = file + ": " + original_.describe();

  // Fresh typed values: each input as it is now, each output as far as the compile knew it.
  m.scope = std::make_unique<Graph>();
  m.scope->name = original_.graph ? original_.graph->name : "main";
  m.node = std::make_unique<Node>();
  Node& node = *m.node;
  node.name = original_.name;
  node.op_type = original_.op_type;
  node.domain = original_.domain;
  node.opset = original_.opset;
  node.attributes = original_.attributes;
  node.graph = m.scope.get();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* orig = original_.inputs[i];
    if (!orig) {
      node.inputs.push_back(nullptr);
      continue;
    }
    Value* v = m.scope->add_value("input" + std::to_string(i));
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
    node.inputs.push_back(v);
  }
  for (size_t k = 0; k < original_.outputs.size(); ++k) {
    const Value* orig = original_.outputs[k];
    if (!orig) {
      node.outputs.push_back(nullptr);
      continue;
    }
    Value* v = m.scope->add_value("output" + std::to_string(k));
    v->type.dtype = orig->type.dtype;
    v->producer = &node;
    node.outputs.push_back(v);
  }
  infer_with_onnx(node, file);
  bound_by_inputs(node, {});

  m.out_bytes.assign(node.outputs.size(), 0);
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    Value* v = node.outputs[k];
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
    m.out_bytes[k] = v->capacity_bytes;
  }

  const KernelFactory factory = KernelRegistry::instance().find(node.op_type, node.domain);
  if (!factory) fail_unsupported(where + ": no kernel");
  const KernelEnv env{&dnnl, file};
  std::unique_ptr<Kernel> kernel = factory(node, env);
  if (!kernel) fail_unsupported(where + ": no kernel for its types or attributes at these shapes");
  m.state = kernel->make_state();
  m.scratchpad.assign(kernel->scratchpad_bytes() + 64, std::byte{0});
  m.kernel = std::move(kernel);
}

}  // namespace memplan::rt
