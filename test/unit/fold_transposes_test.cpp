// passes/fold_transposes: a Transpose whose only reader is a MatMul is folded into the MatMul's
// view of its operand (ir/operand_permutation.h), and the MatMul reads the Transpose's input
// through permuted strides: attention's heads split as torch exports them ([S, H, D] -> [H, S, D],
// K to [H, D, S]; 4-D with a batch), with the numbers of the transposes made.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ir/operand_permutation.h"
#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "support/model_builder.h"
#include "support/numeric.h"

using namespace memplan;
using namespace memplan::test;

namespace {

// q, k of `dims` -> Transpose(q, perm_q), Transpose(k, perm_k) -> MatMul -> y; with
// `k_read_elsewhere` the transposed k is an output too.
struct Attention {
  std::vector<int64_t> dims, perm_q, perm_k;
  bool k_read_elsewhere = false;

  static std::vector<int64_t> permuted(const std::vector<int64_t>& d, const std::vector<int64_t>& perm) {
    std::vector<int64_t> out;
    for (int64_t a : perm) out.push_back(d[static_cast<size_t>(a)]);
    return out;
  }
  std::vector<int64_t> y_dims() const {
    std::vector<int64_t> q = permuted(dims, perm_q), k = permuted(dims, perm_k);
    q.back() = k.back();
    return q;
  }
  static Shape shape(const std::vector<int64_t>& d) { return Shape(d.begin(), d.end()); }
  std::string write(const std::string& name) const {
    ModelBuilder mb;
    auto& g = mb.graph();
    add_input(g, "q", elem::kFloat, shape(dims));
    add_input(g, "k", elem::kFloat, shape(dims));
    attr_ints(add_node(g, "Transpose", {"q"}, {"qh"}, "heads_q"), "perm", perm_q);
    attr_ints(add_node(g, "Transpose", {"k"}, {"kt"}, "heads_k"), "perm", perm_k);
    add_node(g, "MatMul", {"qh", "kt"}, {"y"}, "scores");
    add_output(g, "y", elem::kFloat, shape(y_dims()));
    if (k_read_elsewhere) add_output(g, "kt", elem::kFloat, shape(permuted(dims, perm_k)));
    const std::string path = (std::filesystem::temp_directory_path() / ("memplan_fold_" + name + ".onnx")).string();
    std::ofstream(path, std::ios::binary) << mb.bytes();
    return path;
  }
  // The product by its definition: the transposes made, then batched matrix products.
  std::vector<float> want(const std::vector<float>& q, const std::vector<float>& k) const {
    const std::vector<float> qt = transpose(q, perm_q), kt = transpose(k, perm_k);
    const std::vector<int64_t> qd = permuted(dims, perm_q), kd = permuted(dims, perm_k), yd = y_dims();
    const size_t r = qd.size();
    const int64_t m = qd[r - 2], kk = qd[r - 1], n = kd[r - 1];
    int64_t batch = 1;
    for (size_t i = 0; i + 2 < r; ++i) batch *= qd[i];
    std::vector<float> y(static_cast<size_t>(batch * m * n));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t t = 0; t < kk; ++t)
            s += double(qt[static_cast<size_t>((b * m + i) * kk + t)]) * kt[static_cast<size_t>((b * kk + t) * n + j)];
          y[static_cast<size_t>((b * m + i) * n + j)] = static_cast<float>(s);
        }
    return y;
  }
  std::vector<float> transpose(const std::vector<float>& x, const std::vector<int64_t>& perm) const {
    const size_t r = dims.size();
    const std::vector<int64_t> od = permuted(dims, perm);
    std::vector<int64_t> in_strides(r, 1);
    for (size_t i = r - 1; i-- > 0;) in_strides[i] = in_strides[i + 1] * dims[i + 1];
    std::vector<float> out(x.size());
    std::vector<int64_t> idx(r, 0);
    for (size_t o = 0; o < out.size(); ++o) {
      int64_t src = 0;
      for (size_t i = 0; i < r; ++i) src += idx[i] * in_strides[static_cast<size_t>(perm[i])];
      out[o] = x[static_cast<size_t>(src)];
      for (size_t i = r; i-- > 0;)
        if (++idx[i] < od[i]) break;
        else idx[i] = 0;
    }
    return out;
  }
};

size_t count(const std::vector<int64_t>& d) {
  size_t n = 1;
  for (int64_t v : d) n *= static_cast<size_t>(v);
  return n;
}

}  // namespace

TEST_CASE("a Transpose only a MatMul reads is folded into the MatMul's strides, with the numbers of the transposed "
          "copy", "[passes][fold_transposes]") {
  const Attention a = GENERATE(Attention{{7, 3, 8}, {1, 0, 2}, {1, 2, 0}},           // ViT, BERT: [S, H, D]
                               Attention{{2, 7, 3, 8}, {0, 2, 1, 3}, {0, 2, 3, 1}},  // wav2vec2: [B, S, H, D]
                               Attention{{3, 8, 7}, {0, 2, 1}, {0, 1, 2}});          // A's last two axes
  INFO("dims " << a.dims.size() << "-D, perm_q " << a.perm_q[0] << a.perm_q[1] << a.perm_q[2]);
  const std::string path = a.write("attention_" + std::to_string(a.dims.size()) + std::to_string(a.perm_q[0]));
  const Model ir = prepare_model(path, {});
  REQUIRE(ir.main->nodes.size() == 1);
  const Node& mm = *ir.main->nodes[0];
  CHECK(mm.op_type == "MatMul");
  CHECK(operand_permutation(mm, 0) == std::optional<std::vector<int64_t>>(a.perm_q));
  CHECK(mm.inputs[0]->name == "q");

  const std::vector<float> q = random_floats(count(a.dims), 3), k = random_floats(count(a.dims), 4);
  auto model = CompiledModel::compile(path, {});
  CHECK_THAT(model->kernels()[0].implementation, !Catch::Contains("ref"));
  for (const bool guard : {false, true}) {
    Session s(model, SessionOptions{guard});
    s.set_input("q", kFloat32, a.dims, q.data(), q.size() * 4);
    s.set_input("k", kFloat32, a.dims, k.data(), k.size() * 4);
    s.run();
    const TensorRef y = s.output("y");
    const auto* p = static_cast<const float*>(y.data);
    require_close(std::vector<float>(p, p + y.bytes / 4), a.want(q, k), abs_rel(1e-5, 1e-5));
  }
}

TEST_CASE("a Transpose read by more than its MatMul stays a node", "[passes][fold_transposes]") {
  Attention a{{7, 3, 8}, {1, 0, 2}, {1, 2, 0}, true};
  const Model ir = prepare_model(a.write("read_elsewhere"), {});
  REQUIRE(ir.main->nodes.size() == 2);
  const Node& mm = ir.main->nodes[0]->op_type == "MatMul" ? *ir.main->nodes[0] : *ir.main->nodes[1];
  CHECK(operand_permutation(mm, 0));
  CHECK_FALSE(operand_permutation(mm, 1));
}
