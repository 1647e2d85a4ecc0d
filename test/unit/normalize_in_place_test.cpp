// Softmax, LayerNormalization and InstanceNormalization write over their input where the input
// dies there: attention's scores ([heads, T, T], a transformer's largest tensor) and a feature
// extractor's normalized maps take no second buffer, and the answers are those of a kernel writing
// into a buffer of its own.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>
#include <fstream>

#include "memplan/memplan.h"
#include "runtime/compiled_model_impl.h"
#include "support/model_builder.h"
#include "support/numeric.h"
#include "support/temp_dir.h"

using namespace memplan::test;

namespace {

constexpr int64_t kHeads = 4, kT = 64, kD = 16;

// q, k, v [heads, T, D] -> scores = q x k^T [heads, T, T] -> Softmax (or LogSoftmax) -> x v.
std::string attention(const std::string& softmax, const TempDir& dir) {
  ModelBuilder b;
  auto& g = b.graph();
  for (const char* name : {"q", "k", "v"}) add_input(g, name, elem::kFloat, {kHeads, kT, kD});
  attr_ints(add_node(g, "Transpose", {"k"}, {"kt"}, "kt"), "perm", {0, 2, 1});
  add_node(g, "MatMul", {"q", "kt"}, {"scores"}, "scores");
  add_node(g, softmax, {"scores"}, {"probs"}, "softmax");
  add_node(g, "MatMul", {"probs", "v"}, {"y"}, "mix");
  add_output(g, "y", elem::kFloat, {kHeads, kT, kD});
  const std::string path = dir / (softmax + ".onnx");
  std::ofstream(path, std::ios::binary) << b.bytes();
  return path;
}

// The graph's output y as a session with memory guards computes it from `inputs` ({name, values}),
// each of shape `dims`.
std::vector<float> run_guarded(const std::shared_ptr<const memplan::CompiledModel>& model,
                               const std::vector<std::pair<std::string, const std::vector<float>*>>& inputs,
                               const std::vector<int64_t>& dims) {
  memplan::SessionOptions guard;
  guard.check_memory = true;
  memplan::Session session(model, guard);
  for (const auto& [name, values] : inputs)
    session.set_input(name, memplan::kFloat32, dims, values->data(), values->size() * sizeof(float));
  session.run();
  const memplan::TensorRef y = session.output("y");
  std::vector<float> got(y.bytes / sizeof(float));
  std::memcpy(got.data(), y.data, y.bytes);
  return got;
}

// `name`'s buffer is written in place over `over`'s.
void check_in_place(const memplan::CompiledModel& m, const std::string& name, const std::string& over);

const memplan::PlannedBuffer& buffer(const memplan::CompiledModel& m, const std::string& name) {
  for (const memplan::PlannedBuffer& pb : m.impl().plan.graphs[0].buffers)
    if (pb.name == name) return pb;
  FAIL("no buffer " << name);
  throw;
}

void check_in_place(const memplan::CompiledModel& m, const std::string& name, const std::string& over) {
  const memplan::PlannedBuffer& b = buffer(m, name);
  CHECK(b.alias == memplan::AliasKind::InPlace);
  REQUIRE(b.group >= 0);
  CHECK(m.impl().plan.graphs[0].buffers[static_cast<size_t>(b.group)].name == over);
}

}  // namespace

TEST_CASE("Softmax writes over attention's scores where they die, to a softmax's answers", "[kernels][softmax]") {
  const std::string op = GENERATE(std::string("Softmax"), std::string("LogSoftmax"));
  INFO(op);
  TempDir dir("softmax_in_place");
  const auto model = memplan::CompiledModel::compile(attention(op, dir), {});
  check_in_place(*model, "probs", "scores");

  const size_t n = static_cast<size_t>(kHeads * kT * kD);
  const std::vector<float> q = random_floats(n, 1, -2.f, 2.f), k = random_floats(n, 2, -2.f, 2.f), v = random_floats(n, 3);
  const std::vector<float> got = run_guarded(model, {{"q", &q}, {"k", &k}, {"v", &v}}, {kHeads, kT, kD});
  REQUIRE(got.size() == n);

  std::vector<double> want(n, 0.0), row(static_cast<size_t>(kT));
  for (int64_t h = 0; h < kHeads; ++h)
    for (int64_t i = 0; i < kT; ++i) {
      double top = -INFINITY, sum = 0;
      for (int64_t j = 0; j < kT; ++j) {
        double s = 0;
        for (int64_t d = 0; d < kD; ++d)
          s += static_cast<double>(q[static_cast<size_t>((h * kT + i) * kD + d)]) * k[static_cast<size_t>((h * kT + j) * kD + d)];
        row[static_cast<size_t>(j)] = s;
        top = std::max(top, s);
      }
      for (double s : row) sum += std::exp(s - top);
      for (int64_t j = 0; j < kT; ++j) {
        const double p = op == "Softmax" ? std::exp(row[static_cast<size_t>(j)] - top) / sum
                                         : row[static_cast<size_t>(j)] - top - std::log(sum);
        for (int64_t d = 0; d < kD; ++d)
          want[static_cast<size_t>((h * kT + i) * kD + d)] += p * v[static_cast<size_t>((h * kT + j) * kD + d)];
      }
    }
  require_close(got, want, scaled(1e-4));
}

TEST_CASE("Layer, instance, group and RMS normalization write over an input that dies at them, to the normalized "
          "values", "[kernels][norm]") {
  const std::string op = GENERATE(std::string("LayerNormalization"), std::string("InstanceNormalization"),
                                  std::string("GroupNormalization"), std::string("RMSNormalization"));
  INFO(op);
  // x [1, C, L] -> Relu -> the normalization -> Neg -> y. Statistics over L (LayerNormalization,
  // RMSNormalization: scale and bias [L]; InstanceNormalization: [C]) or over pairs of channels
  // (GroupNormalization, opset 21: scale and bias [C]).
  constexpr int64_t kC = 8, kL = 300, kGroup = 2;
  const bool over_rows = op == "LayerNormalization" || op == "RMSNormalization";
  const int64_t params = over_rows ? kL : kC;
  const std::vector<float> scale = random_floats(static_cast<size_t>(params), 11, 0.5f, 2.f),
                           bias = random_floats(static_cast<size_t>(params), 12);
  const int64_t opset = op == "RMSNormalization" ? 23 : op == "GroupNormalization" ? 21 : 17;
  ModelBuilder b("norm", opset, opset >= 21 ? 10 : 8);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {1, kC, kL});
  add_initializer(g, tensor_f32("scale", {params}, scale));
  add_node(g, "Relu", {"x"}, {"r"}, "relu");
  if (op == "RMSNormalization") {
    add_node(g, op, {"r", "scale"}, {"n"}, "norm");
  } else {
    add_initializer(g, tensor_f32("bias", {params}, bias));
    onnx::NodeProto* norm = add_node(g, op, {"r", "scale", "bias"}, {"n"}, "norm");
    if (op == "GroupNormalization") attr_int(norm, "num_groups", kC / kGroup);
  }
  add_node(g, "Neg", {"n"}, {"y"}, "neg");
  add_output(g, "y", elem::kFloat, {1, kC, kL});
  TempDir dir("norm_in_place");
  const std::string path = dir / "m.onnx";
  std::ofstream(path, std::ios::binary) << b.bytes();
  const auto model = memplan::CompiledModel::compile(path, {});
  check_in_place(*model, "n", "r");

  const std::vector<float> x = random_floats(static_cast<size_t>(kC * kL), 13, -3.f, 3.f);
  const std::vector<float> got = run_guarded(model, {{"x", &x}}, {1, kC, kL});
  auto relu = [&](int64_t c, int64_t l) { return static_cast<double>(std::max(x[static_cast<size_t>(c * kL + l)], 0.f)); };
  std::vector<double> want(x.size());
  const int64_t per = op == "GroupNormalization" ? kGroup : 1;  // channels per statistic
  for (int64_t c0 = 0; c0 < kC; c0 += per) {
    double mean = 0, var = 0, square = 0;
    for (int64_t c = c0; c < c0 + per; ++c)
      for (int64_t l = 0; l < kL; ++l) mean += relu(c, l) / static_cast<double>(per * kL);
    for (int64_t c = c0; c < c0 + per; ++c)
      for (int64_t l = 0; l < kL; ++l) {
        var += std::pow(relu(c, l) - mean, 2) / static_cast<double>(per * kL);
        square += relu(c, l) * relu(c, l) / static_cast<double>(per * kL);
      }
    for (int64_t c = c0; c < c0 + per; ++c)
      for (int64_t l = 0; l < kL; ++l) {
        const size_t p = static_cast<size_t>(over_rows ? l : c), e = static_cast<size_t>(c * kL + l);
        want[e] = op == "RMSNormalization" ? -(relu(c, l) / std::sqrt(square + 1e-5) * scale[p])
                                           : -((relu(c, l) - mean) / std::sqrt(var + 1e-5) * scale[p] + bias[p]);
      }
  }
  require_close(got, want, scaled(1e-4));
}
