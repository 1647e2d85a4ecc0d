// Attention (opset 23): Y = softmax(softcap(Q K^T * scale) + mask) V per head, with grouped
// key/value heads (each shared by q_num_heads / kv_num_heads query heads), a bool or float mask
// broadcast to [batch, q_heads, q_len, total_len], causal masking, and a key/value cache: the keys
// are past_key's rows then K's (total_len = past_len + kv_len), present_key and present_value
// return them ([batch, kv_heads, total_len, head_size]), and a causal query i sees keys up to
// past_len + i (the cache's rows precede the current block), as ONNX's reference and ONNX Runtime
// align it. Inputs are [batch, heads, len, head_size], or [batch, len, heads * head_size] with the
// head counts given; the cache is always 4-D. Each output row is accumulated in place with a
// running maximum (online softmax), so the kernel needs no scratch memory: no [q_len, total_len]
// scores ever exist, and the cache is read where it lies, not copied before the scores.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/norm/factories.h"

namespace memplan::rt::norm {
using namespace shape;
namespace {

// A tensor's [batch, heads, len, size] geometry, from either of Attention's layouts.
struct Heads {
  int64_t batch = 0, heads = 0, len = 0, size = 0;
  bool packed = false;  // [batch, len, heads * size]
  int64_t at(int64_t b, int64_t h, int64_t p) const {
    return packed ? ((b * len + p) * heads + h) * size : ((b * heads + h) * len + p) * size;
  }
};

class AttentionKernel final : public Kernel {
 public:
  AttentionKernel(std::string where, int64_t q_heads, int64_t kv_heads, float scale, float softcap, bool causal)
      : where_(std::move(where)), q_heads_(q_heads), kv_heads_(kv_heads), scale_(scale), softcap_(softcap),
        causal_(causal) {}

  Heads geometry(const TensorView& t, int64_t packed_heads, const char* what) const {
    if (t.rank == 4) return {t.dims[0], t.dims[1], t.dims[2], t.dims[3], false};
    if (t.rank != 3 || packed_heads <= 0 || t.dims[2] % packed_heads != 0)
      fail_at(where_, std::string(what) + " must be 4-D, or 3-D with a head count that divides its last dimension");
    return {t.dims[0], packed_heads, t.dims[1], t.dims[2] / packed_heads, true};
  }

  void run(const KernelArgs& a) override {
    const Heads q = geometry(a.inputs[0], q_heads_, "Q"), k = geometry(a.inputs[1], kv_heads_, "K"),
                v = geometry(a.inputs[2], kv_heads_, "V");
    if (k.batch != q.batch || v.batch != q.batch || k.heads != v.heads || k.len != v.len || k.size != q.size ||
        k.heads <= 0 || q.heads % k.heads != 0)
      fail_at(where_, "Q, K and V do not fit together (batch, heads, lengths or head sizes)");
    // The cache: past_key [batch, kv_heads, past_len, size] and past_value, both or neither.
    const TensorView* past_k = a.inputs.size() > 4 && a.inputs[4].data ? &a.inputs[4] : nullptr;
    const TensorView* past_v = a.inputs.size() > 5 && a.inputs[5].data ? &a.inputs[5] : nullptr;
    if (!past_k != !past_v) fail_at(where_, "past_key and past_value come together");
    Heads pk{k.batch, k.heads, 0, k.size, false}, pv{v.batch, v.heads, 0, v.size, false};
    if (past_k) {
      pk = geometry(*past_k, 0, "past_key");
      pv = geometry(*past_v, 0, "past_value");
      if (pk.batch != k.batch || pk.heads != k.heads || pk.size != k.size || pv.batch != v.batch ||
          pv.heads != v.heads || pv.size != v.size || pv.len != pk.len)
        fail_at(where_, "past_key and past_value do not fit K and V (batch, heads, lengths or head sizes)");
    }
    const int64_t past = pk.len, total = past + k.len;
    const float* pks = past_k ? past_k->as<const float>() : nullptr;
    const float* pvs = past_v ? past_v->as<const float>() : nullptr;
    const float* ks = a.inputs[1].as<const float>();
    const float* vs = a.inputs[2].as<const float>();
    // Key (value) row j of a kv head: the cache's rows first, then the current block's.
    const auto key = [&](int64_t b, int64_t h, int64_t j) { return j < past ? pks + pk.at(b, h, j) : ks + k.at(b, h, j - past); };
    const auto value = [&](int64_t b, int64_t h, int64_t j) { return j < past ? pvs + pv.at(b, h, j) : vs + v.at(b, h, j - past); };
    for (size_t o = 1; o <= 2; ++o) {
      if (a.outputs.size() <= o || !a.outputs[o].data) continue;
      const bool is_key = o == 1;
      const Heads& cur = is_key ? k : v;
      const int64_t dims[4] = {cur.batch, cur.heads, total, cur.size};
      set_shape(a.outputs[o], 4, dims, where_);
      float* present = a.outputs[o].as<float>();
      for (int64_t b = 0; b < cur.batch; ++b)
        for (int64_t h = 0; h < cur.heads; ++h)
          for (int64_t j = 0; j < total; ++j) {
            const float* row = is_key ? key(b, h, j) : value(b, h, j);
            std::copy(row, row + cur.size, present + ((b * cur.heads + h) * total + j) * cur.size);
          }
    }
    const TensorView* mask = a.inputs.size() > 3 && a.inputs[3].data ? &a.inputs[3] : nullptr;
    // The mask's strides over [batch, q_heads, q_len, kv_len], right-aligned, 0 where it broadcasts.
    std::array<int64_t, 4> ms{};
    if (mask) {
      if (mask->rank > 4) fail_at(where_, "the mask has more than 4 dimensions");
      const std::array<int64_t, 4> full{q.batch, q.heads, q.len, total};
      int64_t stride = 1;
      for (int d = 3, m = mask->rank - 1; m >= 0; --d, --m) {
        const int64_t n = mask->dims[m];
        if (n != 1 && n != full[static_cast<size_t>(d)]) fail_at(where_, "the mask does not broadcast to [batch, heads, q_len, kv_len]");
        ms[static_cast<size_t>(d)] = n == 1 ? 0 : stride;
        stride *= n;
      }
    }
    TensorView& y = a.outputs[0];
    const Heads out{q.batch, q.heads, q.len, v.size, q.packed};
    if (q.packed) {
      const int64_t dims[3] = {q.batch, q.len, q.heads * v.size};
      set_shape(y, 3, dims, where_);
    } else {
      const int64_t dims[4] = {q.batch, q.heads, q.len, v.size};
      set_shape(y, 4, dims, where_);
    }
    const float scale = scale_ != 0 ? scale_ : 1.f / std::sqrt(static_cast<float>(q.size));
    const float* qs = a.inputs[0].as<const float>();
    float* ys = y.as<float>();
    const int64_t group = q.heads / k.heads;
    const uint64_t rows = static_cast<uint64_t>(q.batch * q.heads * q.len);
    parallel_chunks(rows, std::max<uint64_t>(kParallelChunkBytes / 4 / static_cast<uint64_t>(std::max<int64_t>(total * k.size, 1)), 1),
                    [&](uint64_t begin, uint64_t end) {
      for (uint64_t r = begin; r < end; ++r) {
        const auto i = static_cast<int64_t>(r % static_cast<uint64_t>(q.len));
        const auto h = static_cast<int64_t>(r / static_cast<uint64_t>(q.len) % static_cast<uint64_t>(q.heads));
        const auto b = static_cast<int64_t>(r / static_cast<uint64_t>(q.len * q.heads));
        const float* qi = qs + q.at(b, h, i);
        float* yi = ys + out.at(b, h, i);
        std::fill(yi, yi + v.size, 0.f);
        float best = -std::numeric_limits<float>::infinity(), sum = 0;
        const int64_t last = causal_ ? std::min(past + i, total - 1) : total - 1;
        for (int64_t j = 0; j <= last; ++j) {
          const float* kj = key(b, h / group, j);
          float s = 0;
          for (int64_t d = 0; d < q.size; ++d) s += qi[d] * kj[d];
          s *= scale;
          if (softcap_ > 0) s = softcap_ * std::tanh(s / softcap_);  // before the mask: -inf stays -inf
          if (mask) {
            const int64_t m = b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3];
            if (mask->dtype == DType::Bool) {
              if (mask->as<const uint8_t>()[m] == 0) continue;
            } else {
              s += mask->as<const float>()[m];
            }
          }
          if (!(s > -std::numeric_limits<float>::infinity())) continue;  // -inf: masked out
          if (s > best) {  // rescale what is accumulated to the new maximum
            const float f = std::exp(best - s);
            for (int64_t d = 0; d < v.size; ++d) yi[d] *= f;
            sum *= f;
            best = s;
          }
          const float p = std::exp(s - best);
          sum += p;
          const float* vj = value(b, h / group, j);
          for (int64_t d = 0; d < v.size; ++d) yi[d] += p * vj[d];
        }
        if (sum > 0)
          for (int64_t d = 0; d < v.size; ++d) yi[d] /= sum;  // a row with every key masked stays 0
      }
    });
  }

 private:
  std::string where_;
  int64_t q_heads_, kv_heads_;
  float scale_, softcap_;
  bool causal_;
};

}  // namespace

Factory make_attention(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 3, 6);
  require_float32_inputs(n, 3, where);
  if (const Value* m = input_at(n, 3); m && m->type.dtype != DType::Bool && m->type.dtype != DType::Float32)
    unsupported_at(where, "a mask of " + dtype_name(m->type.dtype) + " is not supported (bool or float32)");
  for (size_t k : {4u, 5u})
    if (const Value* p = input_at(n, k); p && p->type.dtype != DType::Float32)
      unsupported_at(where, "'" + p->name + "' is " + dtype_name(p->type.dtype) + " (float32 only)");
  if (!input_at(n, 4) != !input_at(n, 5)) fail_at(where, "past_key and past_value come together");
  if (n.outputs.size() > 3 && n.outputs[3])
    unsupported_at(where, "the qk_matmul_output output is not supported (Y, present_key and present_value are)");
  const float softcap = n.attr_float("softcap", 0.f);
  if (softcap < 0 || !std::isfinite(softcap)) fail_at(where, "softcap must be a finite number, at least 0");
  if (n.attr_int("softmax_precision", 1) != 1) unsupported_at(where, "softmax_precision other than float32 is not supported");
  return std::make_unique<AttentionKernel>(std::move(where), n.attr_int("q_num_heads", 0), n.attr_int("kv_num_heads", 0),
                                           n.attr_float("scale", 0.f), softcap, n.attr_int("is_causal", 0) != 0);
}

}  // namespace memplan::rt::norm
