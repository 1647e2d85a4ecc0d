// Builds one node by hand, makes its kernel through the registry and runs it on buffers of its
// own: kernel tests need neither a model file nor the planner.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ir/graph.h"
#include "memplan/error.h"
#include "runtime/dnnl_context.h"
#include "runtime/kernel_registry.h"
#include "support/numeric.h"

namespace memplan::test {

class KernelCase {
 public:
  explicit KernelCase(const std::string& op_type, int64_t opset = 17) {
    auto n = std::make_unique<Node>();
    n->name = op_type + "_under_test";
    n->op_type = op_type;
    n->opset = opset;
    n->graph = &graph_;
    node_ = n.get();
    graph_.nodes.push_back(std::move(n));
  }

  Node& node() { return *node_; }

  // A run-time input (constant = false) or a weight (constant = true). Values are converted to dtype.
  template <typename T>
  Value* input(const std::string& name, DType dtype, std::vector<int64_t> dims, const std::vector<T>& values,
               bool constant = false) {
    Value* v = graph_.add_value(name);
    v->type = type_of(dtype, dims);
    Tensor t;
    t.dtype = dtype;
    t.dims = dims;
    t.bytes.resize(values.size() * dtype_size(dtype));
    for (size_t i = 0; i < values.size(); ++i) store_number(t.bytes.data() + i * dtype_size(dtype), dtype, static_cast<double>(values[i]));
    auto shared = std::make_shared<Tensor>(std::move(t));
    if (constant) v->constant = shared;
    data_.push_back(shared);
    inputs_.push_back(v);
    node_->inputs.push_back(v);
    v->consumers.push_back(node_);
    return v;
  }
  void omitted_input() {
    node_->inputs.push_back(nullptr);
    inputs_.push_back(nullptr);
    data_.push_back(nullptr);
  }
  Value* output(const std::string& name, DType dtype, std::vector<int64_t> dims) {
    Value* v = graph_.add_value(name);
    v->type = type_of(dtype, dims);
    v->producer = node_;
    v->capacity_bytes = v->type.is_static() ? bytes_of(dtype, dims) : 0;
    node_->outputs.push_back(v);
    return v;
  }
  void attr(const std::string& name, int64_t i) { add(name, Attribute::Kind::Int).i = i; }
  void attr(const std::string& name, float f) { add(name, Attribute::Kind::Float).f = f; }
  void attr(const std::string& name, const std::string& s) { add(name, Attribute::Kind::String).s = s; }
  void attr(const std::string& name, std::vector<int64_t> ints) { add(name, Attribute::Kind::Ints).ints = std::move(ints); }
  void attr(const std::string& name, std::vector<float> fs) { add(name, Attribute::Kind::Floats).floats = std::move(fs); }

  // Makes the kernel (null if the registry has none or the factory declines) and runs it once.
  bool run() {
    rt::KernelFactory f = rt::KernelRegistry::instance().find(node_->op_type, node_->domain);
    if (!f) return false;
    env_.dnnl = &dnnl_;
    env_.file = "test.onnx";
    kernel_ = f(*node_, env_);
    if (!kernel_) return false;
    execute();
    return true;
  }

  // Runs the next leaner variant of the kernel (Kernel::take_leaner) in its place, on the same
  // inputs; false when there is none.
  bool run_leaner() {
    std::unique_ptr<rt::Kernel> lean = kernel_ ? kernel_->take_leaner() : nullptr;
    if (!lean) return false;
    kernel_ = std::move(lean);
    execute();
    return true;
  }

 private:
  void execute() {
    in_copies_.clear();
    std::vector<rt::TensorView> in(inputs_.size()), out(node_->outputs.size());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!inputs_[i]) continue;
      in_copies_.push_back(data_[i]->bytes);
      in[i] = view_of(inputs_[i]->type, in_copies_.back().data(), in_copies_.back().size());
    }
    outputs_.assign(out.size(), {});
    for (size_t i = 0; i < out.size(); ++i) {
      outputs_[i].assign(node_->outputs[i]->capacity_bytes + 64, std::byte{0});
      out[i] = view_of(node_->outputs[i]->type, outputs_[i].data(), node_->outputs[i]->capacity_bytes);
    }
    scratch_.assign(kernel_->scratchpad_bytes() + 64, std::byte{0});
    state_ = kernel_->make_state();
    rt::KernelArgs args{in, out, scratch_.data(), state_.get()};
    kernel_->run(args);
    result_views_ = out;
  }

 public:
  const rt::TensorView& result(size_t i) const { return result_views_.at(i); }
  template <typename T>
  std::vector<T> result_as(size_t i) const {
    const rt::TensorView& v = result_views_.at(i);
    std::vector<T> out(v.element_count());
    if (!out.empty()) std::memcpy(out.data(), v.data, out.size() * sizeof(T));
    return out;
  }
  rt::Kernel* kernel() { return kernel_.get(); }
  rt::KernelState* state() { return state_.get(); }  // made by run(), for running the kernel again

 private:
  static TensorType type_of(DType dtype, const std::vector<int64_t>& dims) {
    TensorType t;
    t.dtype = dtype;
    t.has_rank = true;
    for (int64_t d : dims) t.dims.push_back(Dim{d, {}});
    return t;
  }
  static uint64_t bytes_of(DType dtype, const std::vector<int64_t>& dims) {
    uint64_t n = dtype_size(dtype);
    for (int64_t d : dims) n *= static_cast<uint64_t>(d);
    return n;
  }
  static rt::TensorView view_of(const TensorType& t, std::byte* data, uint64_t capacity) {
    rt::TensorView v;
    v.data = data;
    v.dtype = t.dtype;
    v.rank = static_cast<int>(t.dims.size());
    for (size_t i = 0; i < t.dims.size(); ++i) v.dims[i] = t.dims[i].value;
    v.capacity = capacity;
    return v;
  }
  Attribute& add(const std::string& name, Attribute::Kind kind) {
    node_->attributes.push_back(Attribute{});
    node_->attributes.back().name = name;
    node_->attributes.back().kind = kind;
    return node_->attributes.back();
  }

  Graph graph_;
  Node* node_ = nullptr;
  std::vector<Value*> inputs_;
  std::vector<std::shared_ptr<Tensor>> data_;
  std::vector<std::vector<std::byte>> in_copies_;
  std::vector<std::vector<std::byte>> outputs_;
  std::vector<std::byte> scratch_;
  std::vector<rt::TensorView> result_views_;
  rt::DnnlContext dnnl_;
  rt::KernelEnv env_;
  std::unique_ptr<rt::Kernel> kernel_;
  std::unique_ptr<rt::KernelState> state_;
};

// The dims of a result view.
inline std::vector<int64_t> dims_of(const rt::TensorView& v) { return {v.dims.begin(), v.dims.begin() + v.rank}; }

// An output whose shape the kernel sets at run time, in a buffer of `capacity` bytes.
inline Value* dynamic_output(KernelCase& c, const std::string& name, DType t, std::vector<int64_t> dims,
                             uint64_t capacity) {
  Value* v = c.output(name, t, std::move(dims));
  v->shape_varies = true;
  v->capacity_bytes = capacity;
  return v;
}

// Runs the case, expecting an Error of `kind` whose message contains every one of `parts`.
inline void require_error(KernelCase& c, ErrorKind kind, const std::vector<std::string>& parts) {
  try {
    c.run();
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.kind() == kind);
    for (const std::string& p : parts) CHECK(std::string(e.what()).find(p) != std::string::npos);
    return;
  }
  FAIL("no error was thrown");
}

}  // namespace memplan::test

// The short names kernel tests write their cases in: `using namespace memplan::test::kernel_names;`.
namespace memplan::test::kernel_names {
using memplan::DType;
using memplan::Error;
using memplan::ErrorKind;
using memplan::Value;
using memplan::test::dims_of;
using memplan::test::dynamic_output;
using memplan::test::KernelCase;
using memplan::test::require_error;
// numeric.h: the file binds its own require_close (RequireClose) with its tolerance.
using memplan::test::abs_rel;
using memplan::test::absolute;
using memplan::test::random_floats;
using memplan::test::RequireClose;
using memplan::test::scaled;
using memplan::test::Tolerance;
using Dims = std::vector<int64_t>;
using Floats = std::vector<float>;
using Doubles = std::vector<double>;
using I64 = std::vector<int64_t>;
using I32 = std::vector<int32_t>;
using Bytes = std::vector<uint8_t>;
constexpr DType F32 = DType::Float32;
constexpr DType F64 = DType::Float64;
constexpr DType INT64 = DType::Int64;
constexpr DType INT32 = DType::Int32;
constexpr DType INT8 = DType::Int8;
constexpr DType UINT8 = DType::Uint8;
constexpr DType BOOL = DType::Bool;
}  // namespace memplan::test::kernel_names
