// HannWindow, HammingWindow, BlackmanWindow: generalized cosine windows
//   w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N),  N = size (periodic) or size - 1,
// of a run-time size, computed in double and stored as output_datatype.
#include <cmath>
#include <numbers>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/signal/factories.h"

namespace memplan::rt::shape {
namespace {

struct Coefficients {
  double a0, a1, a2;
};

template <typename T>
class WindowKernel final : public Kernel {
 public:
  WindowKernel(std::string where, Coefficients c, bool periodic) : where_(std::move(where)), c_(c), periodic_(periodic) {}
  void run(const KernelArgs& a) override {
    const TensorView& size_in = a.inputs[0];
    if (size_in.element_count() != 1) fail_at(where_, "size must be a scalar");
    const int64_t size = int_at(size_in, 0);
    if (size < 0) fail_at(where_, "size " + std::to_string(size) + " is negative");
    set_shape(a.outputs[0], 1, &size, where_);
    const double n_total = static_cast<double>(periodic_ ? size : size - 1);
    T* y = a.outputs[0].as<T>();
    for (int64_t i = 0; i < size; ++i) {
      const double angle = n_total > 0 ? 2 * std::numbers::pi * static_cast<double>(i) / n_total : 0.0;
      y[i] = static_cast<T>(c_.a0 - c_.a1 * std::cos(angle) + c_.a2 * std::cos(2 * angle));
    }
  }

 private:
  std::string where_;
  Coefficients c_;
  bool periodic_;
};

}  // namespace

bool window_accepts(const Node& n) {
  return one_of(static_cast<DType>(n.attr_int("output_datatype", static_cast<int64_t>(DType::Float32))), NumericTypes{});
}

Factory make_window(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 1);
  const DType st = n.inputs[0]->type.dtype;
  if (st != DType::Int64 && st != DType::Int32) fail_at(where, "size must be int64 or int32, not " + dtype_name(st));
  Coefficients c{0.5, 0.5, 0.0};                                        // Hann
  if (n.op_type == "HammingWindow") c = {25.0 / 46.0, 21.0 / 46.0, 0.0};  // ONNX's alpha and beta
  if (n.op_type == "BlackmanWindow") c = {0.42, 0.5, 0.08};
  const DType out = static_cast<DType>(n.attr_int("output_datatype", static_cast<int64_t>(DType::Float32)));
  if (n.outputs[0]->type.dtype != out) fail_at(where, "the output type differs from output_datatype");
  const bool periodic = n.attr_int("periodic", 1) != 0;
  Factory k;
  dispatch(out, NumericTypes{}, [&](auto tag) { k = std::make_unique<WindowKernel<decltype(tag)>>(where, c, periodic); });
  if (!k) unsupported_at(where, "output_datatype " + dtype_name(out) + " is not supported");
  return k;
}

}  // namespace memplan::rt::shape
