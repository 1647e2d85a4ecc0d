// Einsum as a plain loop over the whole index space: every label (output labels outermost, then
// the summed ones) is a loop dimension, each operand advances by the sum of its strides on the
// dimensions carrying that label (so a repeated label walks a diagonal), and each product is
// added to the output element of the output labels. Handles explicit and implicit outputs,
// repeated labels and "..." (broadcast like numpy). Refused: an explicit output that drops the
// "..." of its inputs, and more than 8 operands.
#include <algorithm>
#include <type_traits>

#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/linalg/factories.h"

namespace memplan::rt::norm {
using namespace shape;
namespace {

constexpr int kLetters = 52;                     // A-Z then a-z: label ids keep ASCII order
constexpr int kMaxLabels = kLetters + kMaxRank;  // letters, then the dims "..." stands for
constexpr int kMaxOperands = 8;

struct Term {
  int rank = 0;
  std::array<int, kMaxRank> label{};  // per dim
};

struct Equation {
  int operands = 0;
  std::array<Term, kMaxOperands> in;
  Term out;
  int loops = 0;
  std::array<int, kMaxLabels> loop_label{};  // output labels first, in output order
};

int letter_id(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? 26 + (c - 'a') : -1; }

// The letters of one term and where its "..." is (-1: none); fails on anything else.
struct RawTerm {
  std::string letters;
  int ellipsis_at = -1;
};

RawTerm parse_term(const std::string& s, const std::string& where) {
  RawTerm t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 3, "...") == 0 && t.ellipsis_at < 0) {
      t.ellipsis_at = static_cast<int>(t.letters.size());
      i += 2;
    } else if (letter_id(s[i]) >= 0) {
      t.letters += s[i];
    } else {
      fail_at(where, "equation term '" + s + "' is not letters with at most one '...'");
    }
  }
  return t;
}

// Labels of a term of rank `rank` whose "..." stands for its last `rank - letters` of the
// `ell` broadcast dims (numpy aligns them to the right).
Term label_term(const RawTerm& raw, int rank, int ell, const std::string& where) {
  const int letters = static_cast<int>(raw.letters.size());
  const int own = raw.ellipsis_at < 0 ? 0 : rank - letters;
  if (own < 0 || (raw.ellipsis_at < 0 && rank != letters))
    fail_at(where, "an operand of rank " + std::to_string(rank) + " does not match its term '" + raw.letters + "'");
  check_rank(rank, where);
  Term t;
  t.rank = rank;
  int d = 0;
  for (int i = 0; i <= letters; ++i) {
    if (i == raw.ellipsis_at)
      for (int e = 0; e < own; ++e) t.label[d++] = kLetters + (ell - own) + e;
    if (i < letters) t.label[d++] = letter_id(raw.letters[static_cast<size_t>(i)]);
  }
  return t;
}

Equation parse(const Node& n, const std::string& where) {
  std::string eq;
  for (char c : n.attr_string("equation", "")) if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<RawTerm> raw;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    raw.push_back(parse_term(lhs.substr(start, comma - start), where));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (raw.size() != n.inputs.size())
    fail_at(where, "the equation has " + std::to_string(raw.size()) + " terms for " + std::to_string(n.inputs.size()) + " inputs");
  if (raw.size() > static_cast<size_t>(kMaxOperands)) unsupported_at(where, "more than 8 operands are not supported");
  Equation e;
  e.operands = static_cast<int>(raw.size());
  std::vector<int> ranks;
  int ell = 0;
  for (size_t k = 0; k < raw.size(); ++k) {
    const Value* v = required_input(n, k, where);
    if (!v->type.has_rank) unsupported_at(where, "input '" + v->name + "' has no known rank");
    ranks.push_back(static_cast<int>(v->type.dims.size()));
    if (raw[k].ellipsis_at >= 0) ell = std::max(ell, ranks.back() - static_cast<int>(raw[k].letters.size()));
  }
  std::array<int, kMaxLabels> uses{};
  for (size_t k = 0; k < raw.size(); ++k) {
    e.in[k] = label_term(raw[k], ranks[k], ell, where);
    for (int d = 0; d < e.in[k].rank; ++d) ++uses[e.in[k].label[d]];
  }
  if (arrow != std::string::npos) {
    const RawTerm out = parse_term(eq.substr(arrow + 2), where);
    if (ell > 0 && out.ellipsis_at < 0) unsupported_at(where, "an output without the inputs' '...' is not supported");
    e.out = label_term(out, static_cast<int>(out.letters.size()) + (out.ellipsis_at < 0 ? 0 : ell), ell, where);
  } else {  // implicit: the "..." dims, then the letters used once, in ASCII order
    for (int l = 0; l < ell; ++l) e.out.label[e.out.rank++] = kLetters + l;
    for (int l = 0; l < kLetters; ++l)
      if (uses[l] == 1) {
        if (e.out.rank == kMaxRank) unsupported_at(where, "the output's rank exceeds " + std::to_string(kMaxRank));
        e.out.label[e.out.rank++] = l;
      }
  }
  std::array<bool, kMaxLabels> looped{};
  for (int d = 0; d < e.out.rank; ++d) {
    const int l = e.out.label[d];
    if (looped[l]) fail_at(where, "an output label repeats");
    if (!uses[l]) fail_at(where, "an output label appears in no input");
    looped[l] = true;
    e.loop_label[e.loops++] = l;
  }
  for (int l = 0; l < kMaxLabels; ++l)
    if (uses[l] && !looped[l]) e.loop_label[e.loops++] = l;
  return e;
}

template <typename T>
class EinsumKernel final : public Kernel {
 public:
  EinsumKernel(std::string where, Equation eq) : where_(std::move(where)), eq_(eq) {}

  void run(const KernelArgs& a) override {
    // Each label's size; "..." dims of size 1 broadcast.
    std::array<int64_t, kMaxLabels> size;
    size.fill(-1);
    for (int k = 0; k < eq_.operands; ++k) {
      const TensorView& x = a.inputs[static_cast<size_t>(k)];
      if (x.rank != eq_.in[k].rank) fail_at(where_, "input " + std::to_string(k) + " changed rank");
      for (int d = 0; d < x.rank; ++d) {
        int64_t& s = size[eq_.in[k].label[d]];
        const bool broadcasts = eq_.in[k].label[d] >= kLetters;
        if (s < 0 || (broadcasts && s == 1)) s = x.dims[d];
        else if (x.dims[d] != s && !(broadcasts && x.dims[d] == 1))
          fail_at(where_, "a label has sizes " + std::to_string(s) + " and " + std::to_string(x.dims[d]));
      }
    }
    // Per loop: the element step of each operand and of the output.
    std::array<std::array<int64_t, kMaxLabels>, kMaxOperands> step{};
    std::array<int64_t, kMaxLabels> out_step{}, dims{};
    std::array<int, kMaxLabels> loop_of{};
    for (int i = 0; i < eq_.loops; ++i) {
      loop_of[eq_.loop_label[i]] = i;
      dims[i] = size[eq_.loop_label[i]];
    }
    for (int k = 0; k < eq_.operands; ++k) {
      const TensorView& x = a.inputs[static_cast<size_t>(k)];
      const auto st = strides_of(x.rank, x.dims.data());
      for (int d = 0; d < x.rank; ++d)
        if (x.dims[d] != 1) step[k][loop_of[eq_.in[k].label[d]]] += st[d];
    }
    std::array<int64_t, kMaxRank> out_dims{};
    for (int d = 0; d < eq_.out.rank; ++d) out_dims[d] = size[eq_.out.label[d]];
    TensorView& y = a.outputs[0];
    set_shape(y, eq_.out.rank, out_dims.data(), where_);
    const auto out_st = strides_of(eq_.out.rank, out_dims.data());
    for (int d = 0; d < eq_.out.rank; ++d) out_step[loop_of[eq_.out.label[d]]] = out_st[d];
    T* out = y.as<T>();
    std::fill(out, out + y.element_count(), T(0));
    uint64_t total = 1;
    for (int i = 0; i < eq_.loops; ++i)
      if (__builtin_mul_overflow(total, static_cast<uint64_t>(dims[i]), &total)) fail_at(where_, "the index space overflows 64 bits");
    if (total == 0) return;
    // Integers wrap around (two's complement) instead of overflowing.
    using U = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>, std::type_identity<T>>::type;
    std::array<const T*, kMaxOperands> in{};
    for (int k = 0; k < eq_.operands; ++k) in[k] = a.inputs[static_cast<size_t>(k)].as<const T>();
    std::array<int64_t, kMaxOperands> off{};
    std::array<int64_t, kMaxLabels> idx{};
    int64_t o = 0;
    for (uint64_t it = 0; it < total; ++it) {
      U p = 1;
      for (int k = 0; k < eq_.operands; ++k) p = static_cast<U>(p * static_cast<U>(in[k][off[k]]));
      out[o] = static_cast<T>(static_cast<U>(out[o]) + p);
      next_index(idx, dims, eq_.loops, [&](int i, int64_t by) {
        for (int k = 0; k < eq_.operands; ++k) off[k] += step[k][i] * by;
        o += out_step[i] * by;
      });
    }
  }

 private:
  std::string where_;
  Equation eq_;
};

}  // namespace

Factory make_einsum(const Node& n, const KernelEnv& env) {
  const std::string where = check_arity(n, env, 1, n.inputs.size());  // parse() bounds the count
  const Equation eq = parse(n, where);
  const DType t = n.outputs[0]->type.dtype;
  for (const Value* v : n.inputs)
    if (v->type.dtype != t) fail_at(where, "input '" + v->name + "' is not " + dtype_name(t) + " like the output");
  Factory k;
  dispatch(t, Types<float, double, int64_t, int32_t, uint64_t, uint32_t>{},
           [&](auto tag) { k = std::make_unique<EinsumKernel<decltype(tag)>>(where, eq); });
  if (!k) unsupported_at(where, "inputs of type " + dtype_name(t) + " are not supported");
  return k;
}

}  // namespace memplan::rt::norm
