// Weights are held once: a constant only a oneDNN kernel's reordered copy uses is dropped after
// the kernels are made; one a kernel reads at run time is kept, and the answers stay right.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "memplan/memplan.h"
#include "runtime/compiled_model_impl.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

namespace {

const Value* value_named(const CompiledModel& m, const std::string& name) {
  for (const Value* v : m.impl().values)
    if (v->name == name) return v;
  return nullptr;
}

}  // namespace

TEST_CASE("weights: oneDNN's reordered copies replace the model's, run-time reads keep theirs", "[weights]") {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 1, 2, 2});
  add_initializer(g, tensor_f32("w", {2, 1, 1, 1}, {2.f, -3.f}));
  // Varies along the width too: no Conv bias or post-op takes it.
  add_initializer(g, tensor_f32("bias", {2, 1, 2}, {20.f, 21.f, 30.f, 31.f}));
  add_node(g, "Conv", {"x", "w"}, {"c"}, "conv");
  add_node(g, "Add", {"c", "bias"}, {"y"}, "add");  // the binary kernel reads its operands each run
  add_output(g, "y", elem::kFloat, {1, 2, 2, 2});
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_weights_once.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();

  auto model = CompiledModel::compile(path, {});
  const Value* w = value_named(*model, "w");
  const Value* bias = value_named(*model, "bias");
  REQUIRE(w);
  REQUIRE(bias);
  CHECK(w->constant->bytes.empty());       // the Conv holds its own reordered copy
  CHECK(bias->constant->bytes.size() == 16);  // read each run

  Session s(model);
  const std::vector<float> x = {1.f, 2.f, 3.f, 4.f};
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 1, 2, 2}, x.data(), 16);
  s.run();
  const float* y = static_cast<const float*>(s.output("y").data);
  for (int i = 0; i < 4; ++i) {
    CHECK(y[i] == Approx(2.f * x[i] + 20.f + static_cast<float>(i % 2)));
    CHECK(y[4 + i] == Approx(-3.f * x[i] + 30.f + static_cast<float>(i % 2)));
  }
}
