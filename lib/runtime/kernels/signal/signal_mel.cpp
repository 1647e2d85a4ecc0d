// MelWeightMatrix (opset 17): triangular filters, num_mel_bins of them, over the
// floor(dft_length / 2) + 1 bins of a onesided spectrum, as ONNX's reference computes them: the
// band edges equally spaced on the mel scale mel(f) = 2595 log10(1 + f / 700) between
// lower_edge_hertz and upper_edge_hertz (the mel step being their distance over num_mel_bins + 2,
// so the last of the num_mel_bins + 2 edges falls short of upper_edge_hertz), each edge's
// frequency mapped to the bin floor((dft_length + 1) f / sample_rate). The mels are computed in
// the edges' own precision (float, or double), the bins in double, as numpy does.
#include <cmath>
#include <cstdint>

#include "runtime/kernels/signal/factories.h"
#include "runtime/kernels/signal/signal_common.h"

namespace memplan::rt::signal {

using shape::fail_at;
using shape::unsupported_at;

namespace {

// numpy's floor division of doubles (npymath's npy_divmod), which the reference's `//` is.
double floor_divide(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1.0;
  if (div == 0) return std::copysign(0.0, a / b);
  double floordiv = std::floor(div);
  if (div - floordiv > 0.5) floordiv += 1.0;
  return floordiv;
}

double edge_at(const TensorView& t, const char* what, const std::string& where) {
  if (t.element_count() != 1)
    fail_at(where, std::string(what) + " must hold one value, it holds " + std::to_string(t.element_count()));
  double v = 0;
  dispatch(t.dtype, AllFloatTypes{}, [&](auto tag) {
    using T = decltype(tag);
    v = static_cast<double>(static_cast<compute_t<T>>(*t.as<const T>()));
  });
  if (!std::isfinite(v)) fail_at(where, std::string(what) + " must be finite, it is " + std::to_string(v));
  return v;
}

// The mel scale's low end and step between band edges, in the edges' precision F.
template <typename F>
void mel_edges(double lower, double upper, int64_t mel_bins, double& low_mel, double& step) {
  const F lo = static_cast<F>(2595) * std::log10(static_cast<F>(1) + static_cast<F>(lower) / static_cast<F>(700));
  const F hi = static_cast<F>(2595) * std::log10(static_cast<F>(1) + static_cast<F>(upper) / static_cast<F>(700));
  low_mel = static_cast<double>(lo);
  step = static_cast<double>((hi - lo) / static_cast<F>(mel_bins + 2));
}

template <typename T>
class MelKernel final : public Kernel {
 public:
  MelKernel(std::string where, bool double_edges, bool fixed)
      : where_(std::move(where)), double_edges_(double_edges), fixed_(fixed) {}

  void run(const KernelArgs& a) override {
    const int64_t mel_bins = scalar_int(a.inputs[0], "num_mel_bins", where_);
    const int64_t dft_length = scalar_int(a.inputs[1], "dft_length", where_);
    const int64_t sample_rate = scalar_int(a.inputs[2], "sample_rate", where_);
    const double lower = edge_at(a.inputs[3], "lower_edge_hertz", where_);
    const double upper = edge_at(a.inputs[4], "upper_edge_hertz", where_);
    if (mel_bins < 1) fail_at(where_, "num_mel_bins " + std::to_string(mel_bins) + " must be at least 1");
    if (dft_length < 1) fail_at(where_, "dft_length " + std::to_string(dft_length) + " must be at least 1");
    if (sample_rate < 1) fail_at(where_, "sample_rate " + std::to_string(sample_rate) + " must be at least 1");
    if (lower < 0) fail_at(where_, "lower_edge_hertz " + std::to_string(lower) + " is negative");
    if (lower > upper)
      fail_at(where_,
              "lower_edge_hertz " + std::to_string(lower) + " is above upper_edge_hertz " + std::to_string(upper));
    if (mel_bins > INT64_MAX - 2) fail_at(where_, "num_mel_bins " + std::to_string(mel_bins) + " is too large");
    const int64_t spectrum_bins = dft_length / 2 + 1;
    const int64_t dims[2] = {spectrum_bins, mel_bins};
    place_output(a.outputs[0], 2, dims, fixed_, where_);  // checks the size fits the buffer

    double low_mel = 0, step = 0;
    if (double_edges_) mel_edges<double>(lower, upper, mel_bins, low_mel, step);
    else mel_edges<float>(lower, upper, mel_bins, low_mel, step);
    const double scale = static_cast<double>(dft_length + 1);
    const double rate = static_cast<double>(sample_rate);
    // The spectrum bin of band edge i (0 .. mel_bins + 1): nondecreasing in i.
    auto bin_of = [&](int64_t i) {
      const double mel = static_cast<double>(i) * step + low_mel;
      const double hertz = 700 * (std::pow(10.0, mel / 2595) - 1);
      const double bin = floor_divide(scale * hertz, rate);
      if (!(bin >= 0 && bin < static_cast<double>(spectrum_bins)))
        fail_at(where_,
                "band edge " + std::to_string(i) + " (" + std::to_string(hertz) + " Hz) falls on spectrum bin " +
                    (std::fabs(bin) < 0x1p62 ? std::to_string(static_cast<int64_t>(bin)) : std::to_string(bin)) +
                    ", outside the " + std::to_string(spectrum_bins) + " bins of dft_length " +
                    std::to_string(dft_length) + " (is upper_edge_hertz above half the sample rate?)");
      return static_cast<int64_t>(bin);
    };
    bin_of(0);  // the edges grow with i: the first and the last in range put all of them in range
    bin_of(mel_bins + 1);

    T* y = a.outputs[0].as<T>();
    const uint64_t count = static_cast<uint64_t>(spectrum_bins) * static_cast<uint64_t>(mel_bins);
    for (uint64_t k = 0; k < count; ++k) y[k] = T(0);
    auto set = [&](int64_t bin, int64_t band, double v) {
      y[static_cast<uint64_t>(bin) * static_cast<uint64_t>(mel_bins) + static_cast<uint64_t>(band)] =
          static_cast<T>(static_cast<compute_t<T>>(v));
    };
    int64_t left = bin_of(0), center = bin_of(1);
    for (int64_t band = 0; band < mel_bins; ++band) {
      const int64_t right = bin_of(band + 2);
      const int64_t rise = center - left;
      if (rise == 0) set(center, band, 1);
      else
        for (int64_t j = left; j <= center; ++j)
          set(j, band, static_cast<double>(j - left) / static_cast<double>(rise));
      const int64_t fall = right - center;
      if (fall > 0)
        for (int64_t j = center; j < right; ++j)
          set(j, band, static_cast<double>(right - j) / static_cast<double>(fall));
      left = center;
      center = right;
    }
  }

 private:
  std::string where_;
  bool double_edges_, fixed_;
};

}  // namespace

std::unique_ptr<Kernel> make_mel_weight_matrix(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 5, 5);
  const char* names[] = {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"};
  for (size_t i = 0; i < 3; ++i) {
    const DType t = n.inputs[i]->type.dtype;
    if (t != DType::Int64 && t != DType::Int32)
      fail_at(where, std::string(names[i]) + " must be int64 or int32, not " + dtype_name(t));
  }
  const DType edges = n.inputs[3]->type.dtype;
  if (n.inputs[4]->type.dtype != edges) fail_at(where, "lower_edge_hertz and upper_edge_hertz differ in type");
  if (!one_of(edges, AllFloatTypes{}))
    unsupported_at(where, "lower_edge_hertz of type " + dtype_name(edges) + " is not supported");
  const DType out = static_cast<DType>(n.attr_int("output_datatype", static_cast<int64_t>(DType::Float32)));
  if (n.outputs[0]->type.dtype != out) fail_at(where, "the output type differs from output_datatype");
  std::unique_ptr<Kernel> k;
  dispatch(out, AllNumericTypes{}, [&](auto tag) {
    k = std::make_unique<MelKernel<decltype(tag)>>(where, edges == DType::Float64, output_fixed(n.outputs[0]));
  });
  if (!k) unsupported_at(where, "output_datatype " + dtype_name(out) + " is not supported");
  return k;
}

}  // namespace memplan::rt::signal
