// Softmax writes over its input where the input dies there: attention's scores ([heads, T, T], a
// transformer's largest tensor) take no second buffer, and the answers are those of a softmax
// into a buffer of its own.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
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

const memplan::PlannedBuffer& buffer(const memplan::CompiledModel& m, const std::string& name) {
  for (const memplan::PlannedBuffer& pb : m.impl().plan.graphs[0].buffers)
    if (pb.name == name) return pb;
  FAIL("no buffer " << name);
  throw;
}

}  // namespace

TEST_CASE("Softmax writes over attention's scores where they die, to a softmax's answers", "[kernels][softmax]") {
  const std::string op = GENERATE(std::string("Softmax"), std::string("LogSoftmax"));
  INFO(op);
  TempDir dir("softmax_in_place");
  const auto model = memplan::CompiledModel::compile(attention(op, dir), {});
  const memplan::PlannedBuffer& probs = buffer(*model, "probs");
  CHECK(probs.alias == memplan::AliasKind::InPlace);
  REQUIRE(probs.group >= 0);
  CHECK(model->impl().plan.graphs[0].buffers[static_cast<size_t>(probs.group)].name == "scores");

  const size_t n = static_cast<size_t>(kHeads * kT * kD);
  const std::vector<float> q = random_floats(n, 1, -2.f, 2.f), k = random_floats(n, 2, -2.f, 2.f), v = random_floats(n, 3);
  memplan::SessionOptions guard;
  guard.check_memory = true;
  memplan::Session session(model, guard);
  const std::vector<int64_t> dims{kHeads, kT, kD};
  session.set_input("q", memplan::kFloat32, dims, q.data(), n * sizeof(float));
  session.set_input("k", memplan::kFloat32, dims, k.data(), n * sizeof(float));
  session.set_input("v", memplan::kFloat32, dims, v.data(), n * sizeof(float));
  session.run();
  const memplan::TensorRef y = session.output("y");
  std::vector<float> got(n);
  REQUIRE(y.bytes == n * sizeof(float));
  std::memcpy(got.data(), y.data, y.bytes);

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
