// DFT and STFT (opset 17): each line of the signal, real or complex, zero-padded or truncated to
// the transform's length, goes through signal/fft.h in double and is stored in the input's type.
// Lengths may be known only at run time (dft_length, frame_step, frame_length read as data): the
// scratchpad is then sized for the longest the buffers allow, and the output's shape set per run.
#include <algorithm>
#include <cmath>

#include "runtime/kernels/signal/factories.h"
#include "runtime/kernels/signal/fft.h"
#include "runtime/kernels/signal/signal_common.h"

namespace memplan::rt::signal {

using shape::check_rank;
using shape::fail_at;
using shape::unsupported_at;

int64_t scalar_int(const TensorView& t, const char* what, const std::string& where) {
  if (t.element_count() != 1)
    fail_at(where, std::string(what) + " must hold one value, it holds " + std::to_string(t.element_count()));
  return shape::int_at(t, 0);
}

uint64_t dim_bound(const Value* v, int axis, const std::string& where) {
  const std::vector<Dim>& dims = v->type.dims;
  if (!shape::shape_is_dynamic(v)) return static_cast<uint64_t>(dims[static_cast<size_t>(axis)].value);
  uint64_t others = 1;  // the other dims inference knows (a product past 64 bits is left out: a larger bound)
  for (size_t d = 0; d < dims.size(); ++d) {
    uint64_t next = 0;
    if (static_cast<int>(d) != axis && dims[d].known() && dims[d].value > 0 &&
        !__builtin_mul_overflow(others, static_cast<uint64_t>(dims[d].value), &next))
      others = next;
  }
  return element_bound(v, where) / others;
}

void place_output(TensorView& out, int rank, const int64_t* dims, bool fixed, const std::string& where) {
  if (!fixed) return shape::set_shape(out, rank, dims, where);
  bool same = out.rank == rank;
  for (int d = 0; same && d < rank; ++d) same = out.dims[static_cast<size_t>(d)] == dims[d];
  if (same) return;
  auto text = [](int r, const int64_t* ds) {
    std::string s = "[";
    for (int d = 0; d < r; ++d) s += (d ? ", " : "") + std::to_string(ds[d]);
    return s + "]";
  };
  fail_at(where, "its output is typed " + text(out.rank, out.dims.data()) + " but these inputs give " +
                     text(rank, dims));
}

namespace {

template <typename T>
double load(const T* p, uint64_t i) {
  return static_cast<double>(static_cast<compute_t<T>>(p[i]));
}

template <typename T>
void store(T* p, uint64_t i, double v) {
  p[i] = static_cast<T>(static_cast<compute_t<T>>(v));
}

void check_length_type(const Value* v, const char* what, const std::string& where) {
  const DType t = v->type.dtype;
  if (t != DType::Int64 && t != DType::Int32)
    fail_at(where, std::string(what) + " must be int64 or int32, not " + dtype_name(t));
}

// A length given by a constant input: its one value, at least 1 and at most kMaxFftLength.
uint64_t constant_length(const Value* v, const char* what, const std::string& where) {
  if (v->constant->element_count() != 1)
    fail_at(where,
            std::string(what) + " must hold one value, it holds " + std::to_string(v->constant->element_count()));
  const int64_t n = v->constant->int_at(0);
  if (n < 1) fail_at(where, std::string(what) + " " + std::to_string(n) + " must be at least 1");
  if (static_cast<uint64_t>(n) > kMaxFftLength)
    unsupported_at(where, std::string(what) + " " + std::to_string(n) + " is longer than memplan's FFT takes");
  return static_cast<uint64_t>(n);
}

// The transform lengths a kernel runs: at most `max` (known when compiled, `exact`, or a bound),
// in scratch_ bytes of scratchpad.
struct Lengths {
  uint64_t max = 0;
  bool exact = false;
  uint64_t scratch = 0;

  Lengths(uint64_t bound, bool is_exact)
      : max(std::min(bound, kMaxFftLength)), exact(is_exact && bound <= kMaxFftLength) {
    scratch = max ? fft_scratch_bytes(max, !exact) : 0;
  }
  // Fails naming the node when a run's length n needs more than the plan gave.
  void check(uint64_t n, const char* what, const std::string& where) const {
    if (n > max || fft_scratch_bytes(n) > scratch)
      fail_at(where, std::string(what) + " " + std::to_string(n) + " is longer than the " + std::to_string(max) +
                         " its buffers were planned for");
  }
};

void check_components(int64_t c, bool onesided, const char* input, const std::string& where) {
  if (c != 1 && c != 2)
    fail_at(where, std::string("the ") + input + "'s last dimension is " + std::to_string(c) +
                       "; it must be 1 (real) or 2 (real and imaginary parts)");
  if (onesided && c == 2)
    fail_at(where, std::string("onesided output is not possible for a complex ") + input + " (set onesided to 0)");
}

template <typename T>
class DftKernel final : public Kernel {
 public:
  DftKernel(std::string where, int rank, int axis, bool inverse, bool onesided, bool has_length, bool fixed,
            Lengths lengths)
      : where_(std::move(where)),
        rank_(rank),
        axis_(axis),
        inverse_(inverse),
        onesided_(onesided),
        has_length_(has_length),
        fixed_(fixed),
        lengths_(lengths) {}

  void run(const KernelArgs& a) override {
    const TensorView& x = a.inputs[0];
    TensorView& y = a.outputs[0];
    if (x.rank != rank_)
      fail_at(where_, "the input has rank " + std::to_string(x.rank) + ", " + std::to_string(rank_) + " when compiled");
    const int64_t comps = x.dims[static_cast<size_t>(rank_ - 1)];
    check_components(comps, onesided_, "input", where_);
    const int64_t len = x.dims[static_cast<size_t>(axis_)];
    int64_t n = len;
    if (has_length_) {
      n = scalar_int(a.inputs[1], "dft_length", where_);
      if (n < 1) fail_at(where_, "dft_length " + std::to_string(n) + " must be at least 1");
    } else if (n < 1) {
      fail_at(where_, "axis " + std::to_string(axis_) + " of the input is empty: there is no signal to transform");
    }
    const int64_t bins = onesided_ ? n / 2 + 1 : n;
    std::array<int64_t, kMaxRank> dims = x.dims;
    dims[static_cast<size_t>(axis_)] = bins;
    dims[static_cast<size_t>(rank_ - 1)] = 2;
    place_output(y, rank_, dims.data(), fixed_, where_);
    const uint64_t outer = shape::product(x.dims.data(), 0, axis_);
    const uint64_t inner = shape::product(x.dims.data(), axis_ + 1, rank_ - 1);
    if (outer == 0 || inner == 0) return;
    lengths_.check(static_cast<uint64_t>(n), "the transform length", where_);

    const Fft fft(static_cast<uint64_t>(n), inverse_, a.scratchpad);
    Complex* line = fft.line();
    const T* xs = x.as<const T>();
    T* ys = y.as<T>();
    const uint64_t c = static_cast<uint64_t>(comps), un = static_cast<uint64_t>(n);
    const uint64_t take = std::min(static_cast<uint64_t>(len), un);
    const uint64_t in_step = inner * c, out_step = inner * 2;
    const uint64_t ubins = static_cast<uint64_t>(bins);
    const double scale = inverse_ ? 1.0 / static_cast<double>(n) : 1.0;
    for (uint64_t o = 0; o < outer; ++o)
      for (uint64_t i = 0; i < inner; ++i) {
        const uint64_t src = (o * static_cast<uint64_t>(len) * inner + i) * c;
        for (uint64_t k = 0; k < take; ++k) {
          const uint64_t at = src + k * in_step;
          line[k] = {load(xs, at), c == 2 ? load(xs, at + 1) : 0.0};
        }
        for (uint64_t k = take; k < un; ++k) line[k] = {};
        fft.run();
        const uint64_t dst = (o * ubins * inner + i) * 2;
        for (uint64_t j = 0; j < ubins; ++j) {
          store(ys, dst + j * out_step, line[j].re * scale);
          store(ys, dst + j * out_step + 1, line[j].im * scale);
        }
      }
  }

  uint64_t scratchpad_bytes() const override { return lengths_.scratch; }

 private:
  std::string where_;
  int rank_, axis_;
  bool inverse_, onesided_, has_length_, fixed_;
  Lengths lengths_;
};

template <typename T>
class StftKernel final : public Kernel {
 public:
  StftKernel(std::string where, bool onesided, bool has_window, bool has_length, bool fixed, Lengths lengths)
      : where_(std::move(where)), onesided_(onesided), has_window_(has_window), has_length_(has_length), fixed_(fixed),
        lengths_(lengths) {}

  void run(const KernelArgs& a) override {
    const TensorView& sig = a.inputs[0];
    TensorView& y = a.outputs[0];
    if (sig.rank != 3)
      fail_at(where_, "the signal must have rank 3 ([batch, length, 1 or 2]), it has rank " + std::to_string(sig.rank));
    const int64_t comps = sig.dims[2];
    check_components(comps, onesided_, "signal", where_);
    const int64_t batch = sig.dims[0], len = sig.dims[1];
    const int64_t step = scalar_int(a.inputs[1], "frame_step", where_);
    if (step < 1) fail_at(where_, "frame_step " + std::to_string(step) + " must be at least 1");
    int64_t n = 0;
    const T* window = nullptr;
    if (has_window_) {
      const TensorView& w = a.inputs[2];
      if (w.rank != 1) fail_at(where_, "the window must have rank 1, it has rank " + std::to_string(w.rank));
      window = w.as<const T>();
      n = w.dims[0];
    }
    if (has_length_) {
      const int64_t frame = scalar_int(a.inputs[3], "frame_length", where_);
      if (has_window_ && frame != n)
        fail_at(where_, "the window has " + std::to_string(n) + " values but frame_length is " + std::to_string(frame) +
                            "; they must be equal");
      n = frame;
    }
    if (n < 1) fail_at(where_, "the frame length " + std::to_string(n) + " must be at least 1");
    if (n > len)
      fail_at(where_,
              "a frame of " + std::to_string(n) + " samples is longer than the signal's " + std::to_string(len));
    const int64_t frames = 1 + (len - n) / step;
    const int64_t bins = onesided_ ? n / 2 + 1 : n;
    const int64_t dims[4] = {batch, frames, bins, 2};
    place_output(y, 4, dims, fixed_, where_);
    if (batch == 0) return;
    lengths_.check(static_cast<uint64_t>(n), "the frame length", where_);

    const Fft fft(static_cast<uint64_t>(n), false, a.scratchpad);
    Complex* line = fft.line();
    const T* xs = sig.as<const T>();
    T* ys = y.as<T>();
    const uint64_t c = static_cast<uint64_t>(comps), un = static_cast<uint64_t>(n), ubins = static_cast<uint64_t>(bins);
    uint64_t dst = 0;
    for (uint64_t b = 0; b < static_cast<uint64_t>(batch); ++b)
      for (uint64_t f = 0; f < static_cast<uint64_t>(frames); ++f) {
        const uint64_t src = (b * static_cast<uint64_t>(len) + f * static_cast<uint64_t>(step)) * c;
        for (uint64_t k = 0; k < un; ++k) {
          const double w = window ? load(window, k) : 1.0;
          const uint64_t at = src + k * c;
          line[k] = {load(xs, at) * w, c == 2 ? load(xs, at + 1) * w : 0.0};
        }
        fft.run();
        for (uint64_t j = 0; j < ubins; ++j, dst += 2) {
          store(ys, dst, line[j].re);
          store(ys, dst + 1, line[j].im);
        }
      }
  }

  uint64_t scratchpad_bytes() const override { return lengths_.scratch; }

 private:
  std::string where_;
  bool onesided_, has_window_, has_length_, fixed_;
  Lengths lengths_;
};

// The signal's element type, which the output (and STFT's window) share.
DType signal_type(const Node& n, const std::string& where) {
  const DType t = n.inputs[0]->type.dtype;
  if (!one_of(t, AllFloatTypes{})) unsupported_at(where, "input type " + dtype_name(t) + " is not supported");
  if (shape::required_output(n, 0, where)->type.dtype != t) fail_at(where, "the output type differs from the input's");
  return t;
}

template <template <typename> class K, typename... Args>
std::unique_ptr<Kernel> make_typed(DType t, Args&&... args) {
  std::unique_ptr<Kernel> k;
  dispatch(t, AllFloatTypes{}, [&](auto tag) { k = std::make_unique<K<decltype(tag)>>(std::forward<Args>(args)...); });
  return k;
}

}  // namespace

std::unique_ptr<Kernel> make_dft(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 2);
  const DType t = signal_type(n, where);
  const Value* x = n.inputs[0];
  const Value* y = n.outputs[0];
  if (!x->type.has_rank) unsupported_at(where, "the input's rank is not known");
  const int rank = static_cast<int>(x->type.dims.size());
  check_rank(rank, where);
  const int64_t axis_attr = n.attr_int("axis", 1);
  if (axis_attr < -rank || axis_attr >= rank)
    fail_at(where,
            "axis " + std::to_string(axis_attr) + " is out of range for an input of rank " + std::to_string(rank));
  const int axis = static_cast<int>(axis_attr < 0 ? axis_attr + rank : axis_attr);
  if (axis == rank - 1)
    fail_at(where, "axis " + std::to_string(axis_attr) +
                       " is the input's last dimension, which holds the real and imaginary parts, not a signal");
  const bool inverse = n.attr_int("inverse", 0) != 0;
  const bool onesided = n.attr_int("onesided", 0) != 0;
  if (inverse && onesided) fail_at(where, "inverse and onesided cannot both be set");
  if (const Dim& last = x->type.dims.back(); last.known()) check_components(last.value, onesided, "input", where);

  const Value* length = input_at(n, 1);
  uint64_t bound = 0;
  bool exact = false;
  if (length) {
    check_length_type(length, "dft_length", where);
    if (length->constant) {
      bound = constant_length(length, "dft_length", where);
      exact = true;
    } else {
      // Read at run time: the output's buffer bounds the bins, and so the length.
      const bool ranked = y->type.has_rank && y->type.dims.size() == static_cast<size_t>(rank);
      const uint64_t bins = ranked ? dim_bound(y, axis, where) : element_bound(y, where) / 2;
      bound = !bins ? 0 : onesided ? 2 * std::min(bins, kMaxFftLength) - 1 : bins;
    }
  } else {
    bound = dim_bound(x, axis, where);
    exact = !shape::shape_is_dynamic(x);
  }
  return make_typed<DftKernel>(t, where, rank, axis, inverse, onesided, length != nullptr, output_fixed(y),
                               Lengths(bound, exact));
}

std::unique_ptr<Kernel> make_stft(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 2, 4);
  const DType t = signal_type(n, where);
  const Value* sig = n.inputs[0];
  if (sig->type.has_rank && sig->type.dims.size() != 3)
    fail_at(where, "the signal must have rank 3 ([batch, length, 1 or 2]), it has rank " +
                       std::to_string(sig->type.dims.size()));
  const bool onesided = n.attr_int("onesided", 1) != 0;
  if (sig->type.has_rank && sig->type.dims[2].known())
    check_components(sig->type.dims[2].value, onesided, "signal", where);
  check_length_type(n.inputs[1], "frame_step", where);
  const Value* window = input_at(n, 2);
  const Value* length = input_at(n, 3);
  if (!window && !length) fail_at(where, "needs a window or a frame_length: it has neither");
  uint64_t bound = 0;
  bool exact = false;
  if (window) {
    if (window->type.dtype != t) fail_at(where, "the window's type differs from the signal's");
    if (window->type.has_rank && window->type.dims.size() != 1)
      fail_at(where, "the window must have rank 1, it has rank " + std::to_string(window->type.dims.size()));
    if (!window->type.has_rank) unsupported_at(where, "the window's rank is not known");
    bound = dim_bound(window, 0, where);
    exact = !shape::shape_is_dynamic(window);
  }
  if (length) {
    check_length_type(length, "frame_length", where);
    if (length->constant) {
      const uint64_t frame = constant_length(length, "frame_length", where);
      if (window && exact && frame != bound)
        fail_at(where, "the window has " + std::to_string(bound) + " values but frame_length is " +
                           std::to_string(frame) + "; they must be equal");
      bound = frame;
      exact = true;
    } else if (!window) {
      // Read at run time: a frame is never longer than the signal.
      if (!sig->type.has_rank) unsupported_at(where, "the signal's rank is not known");
      bound = dim_bound(sig, 1, where);
    }
  }
  return make_typed<StftKernel>(t, where, onesided, window != nullptr, length != nullptr, output_fixed(n.outputs[0]),
                                Lengths(bound, exact));
}

}  // namespace memplan::rt::signal
