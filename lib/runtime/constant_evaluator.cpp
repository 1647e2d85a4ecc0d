#include "runtime/constant_evaluator.h"

#include <algorithm>
#include <cstring>

#include "memplan/error.h"
#include "runtime/dnnl_context.h"
#include "runtime/kernel_registry.h"

namespace memplan {
namespace {

// Bytes an output's buffer needs: exact for a static type, else its bound; none when unknown or
// more than kMaxKernelFoldedElements elements.
std::optional<uint64_t> output_capacity(const Value* v) {
  if (dtype_size(v->type.dtype) == 0) return std::nullopt;
  if (v->capacity_known) {
    if (v->capacity_bytes / dtype_size(v->type.dtype) > kMaxKernelFoldedElements) return std::nullopt;
    return v->capacity_bytes;
  }
  if (!v->type.is_static()) return std::nullopt;
  const auto dims = v->type.static_dims();
  uint64_t count = 1;
  for (int64_t d : dims) {
    count *= static_cast<uint64_t>(d);
    if (count > kMaxKernelFoldedElements) return std::nullopt;
  }
  return count * dtype_size(v->type.dtype);
}

rt::TensorView view_of(const TensorType& t, std::byte* data, uint64_t capacity) {
  rt::TensorView v;
  v.data = data;
  v.dtype = t.dtype;
  v.rank = static_cast<int>(t.dims.size());
  for (int i = 0; i < v.rank; ++i) v.dims[static_cast<size_t>(i)] = t.dims[static_cast<size_t>(i)].value;
  v.capacity = capacity;
  return v;
}

// Kernels may keep 64-byte aligned loads; every buffer here starts on such a boundary.
struct AlignedBuffer {
  explicit AlignedBuffer(uint64_t bytes) : storage(bytes + 64) {}
  std::byte* data() {
    auto p = reinterpret_cast<uintptr_t>(storage.data());
    return storage.data() + ((64 - p % 64) % 64);
  }
  std::vector<std::byte> storage;
};

// Ops whose every run differs: folding them would freeze one draw into the model.
bool is_random(const std::string& op) {
  return op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" || op == "RandomUniformLike" ||
         op == "Bernoulli" || op == "Multinomial";
}

}  // namespace

namespace {

// A DequantizeLinear of a Conv's or a Gemm's weights stays a node: passes/fuse_quantized needs the
// int8 weights to run the op as an int8 convolution (static QDQ models), and folds them itself when
// it cannot.
bool keeps_quantized_weights(const Node& n) {
  if (n.op_type != "DequantizeLinear" || !n.domain.empty() || n.outputs.size() != 1 || !n.outputs[0] ||
      n.outputs[0]->is_graph_output || n.outputs[0]->consumers.empty())
    return false;
  for (const Node* c : n.outputs[0]->consumers)
    if ((c->op_type != "Conv" && c->op_type != "Gemm") || !c->domain.empty() || c->inputs.size() < 2 ||
        c->inputs[1] != n.outputs[0])
      return false;
  return true;
}

}  // namespace

std::optional<std::vector<Tensor>> evaluate_with_kernel(const Node& n, const std::string& file) {
  if (n.is_control_flow() || n.outputs.empty() || (n.domain.empty() && is_random(n.op_type))) return std::nullopt;
  if (keeps_quantized_weights(n)) return std::nullopt;
  for (const Value* in : n.inputs)
    if (in && !in->constant) return std::nullopt;
  std::vector<uint64_t> capacities;
  for (const Value* out : n.outputs) {
    if (!out) return std::nullopt;  // an omitted output would need the kernel's consent
    auto cap = output_capacity(out);
    if (!cap || !out->type.has_rank || out->type.dims.size() > static_cast<size_t>(rt::kMaxRank)) return std::nullopt;
    capacities.push_back(*cap);
  }
  const rt::KernelFactory factory = rt::KernelRegistry::instance().find(n.op_type, n.domain);
  if (!factory) return std::nullopt;

  // One engine and stream per compiling thread: primitives made here live only for this call.
  thread_local rt::DnnlContext dnnl;
  const rt::KernelEnv env{&dnnl, file};
  try {
    std::unique_ptr<rt::Kernel> kernel = factory(n, env);
    if (!kernel) return std::nullopt;
    std::vector<std::vector<std::byte>> input_bytes;
    std::vector<rt::TensorView> inputs(n.inputs.size());
    input_bytes.reserve(n.inputs.size());
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value* in = n.inputs[i];
      if (!in) continue;
      input_bytes.push_back(in->constant->materialize());
      TensorType t = in->type;
      t.has_rank = true;
      t.dims.clear();
      for (int64_t d : in->constant->dims) t.dims.push_back(Dim{d, {}});
      inputs[i] = view_of(t, input_bytes.back().data(), input_bytes.back().size());
    }
    std::vector<AlignedBuffer> output_bytes;
    std::vector<rt::TensorView> outputs(n.outputs.size());
    output_bytes.reserve(n.outputs.size());
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      output_bytes.emplace_back(capacities[k]);
      outputs[k] = view_of(n.outputs[k]->type, output_bytes.back().data(), capacities[k]);
    }
    AlignedBuffer scratchpad(kernel->scratchpad_bytes());
    const std::unique_ptr<rt::KernelState> state = kernel->make_state();
    kernel->run(rt::KernelArgs{inputs, outputs, scratchpad.data(), state.get()});

    std::vector<Tensor> results;
    for (size_t k = 0; k < outputs.size(); ++k) {
      const rt::TensorView& v = outputs[k];
      if (v.byte_size() > capacities[k]) fail_internal(n.describe() + ": a kernel wrote past its output");
      Tensor t;
      t.dtype = v.dtype;
      t.dims.assign(v.dims.begin(), v.dims.begin() + v.rank);
      t.bytes.assign(v.data, v.data + v.byte_size());
      results.push_back(std::move(t));
    }
    return results;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Internal) throw;
    return std::nullopt;  // invalid data, or types the kernel does not take: leave it to the run
  } catch (const dnnl::error&) {
    return std::nullopt;  // oneDNN has no primitive for these shapes: the run-time kernel says why
  }
}

}  // namespace memplan
