// Gemm and MatMul on oneDNN's matmul primitive.
#include <algorithm>

#include "ir/fused_activation.h"
#include "ir/operand_permutation.h"
#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/dnnl/factories.h"
#include "runtime/kernels/linalg/weights_gemv.h"

namespace memplan::rt::dnnl_kernels {

namespace {

// Row-major [rows, cols], or the transpose of a row-major [cols, rows] when `transposed`.
dnnl::memory::desc matrix_md(int64_t rows, int64_t cols, bool transposed) {
  return transposed ? strided_md({rows, cols}, {1, rows}) : plain_md({rows, cols});
}

// A constant B is read where it lies, in the model's own bytes (linalg/weights_gemv.h), instead of
// reordered into a copy for oneDNN's blocked kernels, where A has few rows and B is large: a fully
// connected layer at batch 1 streams B once whatever its layout, while making the copy held B
// twice (vgg19's first layer: 392 MiB; the process peaked 296 MB above its weights and arena).
// (A splat, the light_* models' ConstantOfShape weights, is expanded once, by the compiled model,
// as any constant a kernel reads.)
constexpr uint64_t kInPlaceBytes = uint64_t{1} << 20;
bool reads_in_place(const Value* b, int64_t rows) {
  return b->is_constant() && b->constant && rows <= kWeightsInPlaceRows && b->constant->byte_size() >= kInPlaceBytes;
}

// An operand as the kernel reads it: its dims and the strides of its elements in its input's bytes.
struct Operand {
  Dims dims, strides;
  bool permuted = false;  // the input's axes permuted (ir/operand_permutation.h)

  // Input `input` of `node`, of dims `d`, row-major, then permuted as the node says.
  static Operand of(const Node& node, size_t input, const Dims& d, const std::string& at) {
    Operand o{d, Dims(d.size(), 1)};
    for (size_t i = d.size(); i-- > 1;) o.strides[i - 1] = o.strides[i] * d[i];
    const std::optional<std::vector<int64_t>> perm = operand_permutation(node, input);
    if (!perm) return o;
    std::vector<bool> seen(d.size(), false);
    if (perm->size() != d.size() || d.size() < 2)
      fail(at + ": " + kPermuteAttrs[input] + " does not permute the " + std::to_string(d.size()) + " axes of its input");
    Operand p{Dims(d.size()), Dims(d.size()), true};
    for (size_t i = 0; i < d.size(); ++i) {
      const int64_t axis = (*perm)[i];
      if (axis < 0 || axis >= static_cast<int64_t>(d.size()) || seen[static_cast<size_t>(axis)])
        fail(at + ": " + kPermuteAttrs[input] + " is not a permutation of the input's axes");
      seen[static_cast<size_t>(axis)] = true;
      p.dims[i] = o.dims[static_cast<size_t>(axis)];
      p.strides[i] = o.strides[static_cast<size_t>(axis)];
    }
    return p;
  }
  // Leading axes of one element (numpy's broadcast of a lower rank).
  void pad_to(size_t rank) {
    const int64_t all = dims.empty() ? 1 : dims[0] * strides[0];
    dims.insert(dims.begin(), rank - dims.size(), 1);
    strides.insert(strides.begin(), rank - strides.size(), all);
  }
  dnnl::memory::desc md() const { return permuted ? strided_md(dims, strides) : plain_md(dims); }
};

}  // namespace

// Y = alpha * A' * B' + beta * C. alpha is the matmul's output scale; C is a binary-add post-op
// broadcast over [M, N] (a constant C is scaled by beta at load; a run-time C with beta != 1 uses
// output scale alpha/beta, the add, then a linear post-op times beta).
std::unique_ptr<Kernel> make_gemm(const Node& node, const KernelEnv& env) {
  const std::string at = where(node, env);
  check_arity(node, env, 2, 3, 1);
  require_float32_static(node, env);
  if (empty_output(node)) return std::make_unique<NoopKernel>();
  const Value* a = input_at(node, 0);
  const Value* b = input_at(node, 1);
  const Value* c = input_at(node, 2);
  Dims ad = dims_of(a), bd = dims_of(b), yd = dims_of(output_at(node, 0));
  if (ad.size() != 2 || bd.size() != 2)
    fail(at + ": A " + dims_string(ad) + " and B " + dims_string(bd) + " must be matrices");
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.f), beta = node.attr_float("beta", 1.f);
  const int64_t m = ta ? ad[1] : ad[0], k = ta ? ad[0] : ad[1];
  const int64_t kb = tb ? bd[1] : bd[0], n = tb ? bd[0] : bd[1];
  if (k != kb) fail(at + ": A " + dims_string(ad) + " and B " + dims_string(bd) + " have different K (transA " +
                    std::to_string(ta) + ", transB " + std::to_string(tb) + ")");
  if (yd != Dims{m, n}) fail(at + ": output shape " + dims_string(yd) + " differs from the computed [" +
                             std::to_string(m) + ", " + std::to_string(n) + "]");

  // C's broadcast shape as a matrix.
  const bool use_c = c && beta != 0.f;
  Dims cd2;
  if (use_c) {
    Dims cd = dims_of(c);
    if (cd.size() > 2) fail(at + ": C " + dims_string(cd) + " does not broadcast to [M, N]");
    cd2 = cd;
    while (cd2.size() < 2) cd2.insert(cd2.begin(), 1);
    if ((cd2[0] != 1 && cd2[0] != m) || (cd2[1] != 1 && cd2[1] != n))
      fail(at + ": C " + dims_string(cd) + " does not broadcast to [" + std::to_string(m) + ", " + std::to_string(n) + "]");
  }

  if (!ta && reads_in_place(b, m))
    return linalg::make_weights_gemv({m, k, n, tb, alpha, beta, use_c ? cd2[0] : 0, use_c ? cd2[1] : 0, {}}, at);

  float out_scale = alpha;
  dnnl::post_ops po;
  if (use_c) {
    po.append_binary(dnnl::algorithm::binary_add, plain_md(cd2));
    if (!c->is_constant() && beta != 1.f) {
      out_scale = alpha / beta;
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, beta, 0.f);
    }
  }
  dnnl::primitive_attr attr = user_scratchpad_attr();
  attr.set_post_ops(po);
  if (out_scale != 1.f) attr.set_output_scales(0, {out_scale});

  dnnl::memory::desc a_md = matrix_md(m, k, ta), user_b_md = matrix_md(k, n, tb), y_md = plain_md(yd);
  dnnl::memory::desc b_md = b->is_constant() ? any_md({k, n}) : user_b_md;
  auto pd = make_pd(at, [&] { return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, y_md), attr, env.dnnl->engine); });

  auto kernel = std::make_unique<PrimitiveKernel>(node, env);
  kernel->set_primitive(pd);
  kernel->bind_input(DNNL_ARG_SRC, 0, a_md);
  if (b->is_constant()) kernel->bind_memory(DNNL_ARG_WEIGHTS, constant_memory(b, user_b_md, pd.weights_desc(), kernel->ctx(), at));
  else kernel->bind_input(DNNL_ARG_WEIGHTS, 1, user_b_md);
  if (use_c) {
    const int c_arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1;
    dnnl::memory::desc c_md = plain_md(cd2);
    if (c->is_constant()) {
      dnnl::memory mem(c_md, env.dnnl->engine);
      std::vector<float> values = constant_floats(c, at);
      float* dst = static_cast<float*>(mem.get_data_handle());
      for (size_t i = 0; i < values.size(); ++i) dst[i] = beta * values[i];
      kernel->bind_memory(c_arg, std::move(mem));
    } else {
      kernel->bind_input(c_arg, 2, c_md);
    }
  }
  kernel->bind_output(DNNL_ARG_DST, 0, y_md);
  return kernel;
}

// numpy matmul: 1-D A is [1, K] (M dropped), 1-D B is [K, 1] (N dropped); batch dims broadcast.
// passes/fuse_conv may give it a bias (input 2, a constant of B's N values, with a 2-D B) and a
// fused activation (ir/fused_activation.h), both computed by oneDNN's matmul in its one pass.
std::unique_ptr<Kernel> make_matmul(const Node& node, const KernelEnv& env) {
  const std::string at = where(node, env);
  check_arity(node, env, 2, 3, 1);
  require_float32_static(node, env);
  if (empty_output(node)) return std::make_unique<NoopKernel>();
  const Value* a = input_at(node, 0);
  const Value* b = input_at(node, 1);
  if (dims_of(a).empty() || dims_of(b).empty()) fail(at + ": MatMul operands must have rank 1 or more");
  Operand ao = Operand::of(node, 0, dims_of(a), at), bo = Operand::of(node, 1, dims_of(b), at);
  const Dims yd = dims_of(output_at(node, 0));
  const bool a_vec = ao.dims.size() == 1, b_vec = bo.dims.size() == 1;
  if (a_vec) ao = {{1, ao.dims[0]}, {ao.dims[0], 1}};
  if (b_vec) bo = {{bo.dims[0], 1}, {1, 1}};
  const size_t rank = std::max(ao.dims.size(), bo.dims.size());
  if (rank > DNNL_MAX_NDIMS)
    fail_unsupported(at + ": rank " + std::to_string(rank) + " is above oneDNN's limit of " + std::to_string(DNNL_MAX_NDIMS));
  ao.pad_to(rank);
  bo.pad_to(rank);
  Dims &ad = ao.dims, &bd = bo.dims;
  if (ad[rank - 1] != bd[rank - 2])
    fail(at + ": A " + a->type.shape_string() + " and B " + b->type.shape_string() + " have different K");
  Dims out(rank);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (ad[i] != bd[i] && ad[i] != 1 && bd[i] != 1)
      fail(at + ": batch dims of A " + a->type.shape_string() + " and B " + b->type.shape_string() + " do not broadcast");
    out[i] = std::max(ad[i], bd[i]);
  }
  out[rank - 2] = ad[rank - 2];
  out[rank - 1] = bd[rank - 1];
  Dims expected(out.begin(), out.end() - 2);
  if (!a_vec) expected.push_back(out[rank - 2]);
  if (!b_vec) expected.push_back(out[rank - 1]);
  if (expected != yd) fail(at + ": output shape " + dims_string(yd) + " differs from the computed " + dims_string(expected));

  // A B without batch dims of its own (a Linear layer's weights) multiplies every row of A alike:
  // A's batch dims fold into M, one [rows, K] x [K, N] product instead of a batch of small ones
  // (a transformer's [seq, 1, d] x [d, 3d] would otherwise be seq products of one row each).
  // (Not where A is permuted: its rows are then not one run of memory.)
  if (rank > 2 && !ao.permuted && std::all_of(bd.begin(), bd.end() - 2, [](int64_t d) { return d == 1; })) {
    const int64_t rows = product(ad) / ad[rank - 1];
    ao = {{rows, ad[rank - 1]}, {ad[rank - 1], 1}};
    bo = {{bd[rank - 2], bd[rank - 1]}, {bo.strides[rank - 2], bo.strides[rank - 1]}, bo.permuted};
    out = {rows, out[rank - 1]};
  }
  const Value* bias = input_at(node, 2);
  const bool activation = has_fused_activation(node);
  if (bias && (ad.size() != 2 || !bias->is_constant() || product(dims_of(bias)) != bd[1]))
    fail_internal(at + ": the fused bias does not fit a product of " + dims_string(ad) + " by " + dims_string(bd));
  if (ad.size() == 2 && reads_in_place(b, ad[0]) && !activation && !ao.permuted && !bo.permuted)
    return linalg::make_weights_gemv({ad[0], ad[1], bd[1], false, 1.f, 1.f, bias ? 1 : 0, bias ? bd[1] : 0, {}}, at);
  const dnnl::memory::desc user_a_md = ao.md(), user_b_md = bo.md(), y_md = plain_md(out);
  dnnl::memory::desc a_md = user_a_md, b_md = b->is_constant() ? any_md(bd) : user_b_md;
  dnnl::primitive_attr attr = user_scratchpad_attr();
  dnnl::post_ops po;
  append_activation(po, node, at);
  attr.set_post_ops(po);
  const dnnl::memory::desc bias_md = bias ? plain_md({1, bd[1]}) : dnnl::memory::desc();
  const auto make = [&] {
    return make_pd(at, [&] {
      if (bias) return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, bias_md, y_md), attr, env.dnnl->engine);
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, y_md), attr, env.dnnl->engine);
    });
  };
  auto pd = make();
  // A permuted operand is read through its strides only where oneDNN runs the same kernel as for
  // the operand in rows (its brgemm kernel takes plain operands: ViT's K^T read through the
  // strides of K fell to its GEMM, 1.16 ms a product against 0.29); else the kernel reorders it
  // into its scratchpad each run, as the Transpose node did, still without the tensor.
  if (ao.permuted || bo.permuted) {
    const auto strided = pd;
    if (ao.permuted) a_md = plain_md(ad);
    if (bo.permuted && !b->is_constant()) b_md = plain_md(bd);
    pd = make();
    if (std::string(strided.impl_info_str()) == pd.impl_info_str()) {
      a_md = user_a_md;
      if (!b->is_constant()) b_md = user_b_md;
      pd = strided;
    }
  }

  auto kernel = std::make_unique<PrimitiveKernel>(node, env);
  kernel->set_primitive(pd);
  kernel->bind_input_staged(DNNL_ARG_SRC, 0, user_a_md, a_md);
  if (b->is_constant()) kernel->bind_memory(DNNL_ARG_WEIGHTS, constant_memory(b, user_b_md, pd.weights_desc(), kernel->ctx(), at));
  else kernel->bind_input_staged(DNNL_ARG_WEIGHTS, 1, user_b_md, b_md);
  if (bias) kernel->bind_memory(DNNL_ARG_BIAS, constant_memory(bias, bias_md, pd.query_md(dnnl::query::weights_md, 1), kernel->ctx(), at));
  kernel->bind_output(DNNL_ARG_DST, 0, y_md);
  return kernel;
}

}  // namespace memplan::rt::dnnl_kernels
