// No-op removal: a Pad of zeros disappears (its readers read its input); any other Pad stays.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "memplan/memplan.h"

#include "passes/drop_noops.h"
#include "pipeline/compile_pipeline.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

TEST_CASE("drop_noops: a Pad of zeros goes, a real Pad and a Pad that is a graph output stay", "[passes]") {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 1, 4, 4});
  add_initializer(g, tensor_i64("zeros", {8}, {0, 0, 0, 0, 0, 0, 0, 0}));
  add_initializer(g, tensor_i64("ones", {8}, {0, 0, 1, 1, 0, 0, 1, 1}));
  add_node(g, "Pad", {"x", "zeros"}, {"p0"}, "noop");
  add_node(g, "Relu", {"p0"}, {"r"}, "relu");
  add_node(g, "Pad", {"r", "ones"}, {"y"}, "real");
  add_node(g, "Pad", {"x", "zeros"}, {"z"}, "noop_output");
  add_output(g, "y", elem::kFloat, {1, 1, 6, 6});
  add_output(g, "z", elem::kFloat, {1, 1, 4, 4});
  Model m = mb.import();
  prepare_model(m, {});  // runs drop_noops
  CHECK_FALSE(find_node(*m.main, "noop"));
  REQUIRE(find_node(*m.main, "relu"));
  CHECK(find_node(*m.main, "relu")->inputs[0]->name == "x");
  CHECK(find_node(*m.main, "real"));
  CHECK(find_node(*m.main, "noop_output"));
  CHECK(drop_noops(m) == 0);  // nothing left to drop
}

TEST_CASE("drop_noops: a zero Pad before an AveragePool becomes its pads, counted in the average", "[passes]") {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 1, 3, 3});
  add_initializer(g, tensor_i64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1}));
  add_node(g, "Pad", {"x", "pads"}, {"p"}, "pad");
  auto* pool = add_node(g, "AveragePool", {"p"}, {"y"}, "pool");
  attr_ints(pool, "kernel_shape", {3, 3});
  add_output(g, "y", elem::kFloat, {1, 1, 3, 3});
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_fold_pad.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  Model m = prepare_model(path, {});
  REQUIRE(m.main->nodes.size() == 1);
  const Node& avg = *m.main->nodes[0];
  CHECK(avg.attr_ints("pads") == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(avg.attr_int("count_include_pad", 0) == 1);

  auto model = CompiledModel::compile(path, {});
  Session s(model);
  const std::vector<float> x(9, 1.f);
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 1, 3, 3}, x.data(), 36);
  s.run();
  const float* y = static_cast<const float*>(s.output("y").data);
  CHECK(y[0] == Approx(4.f / 9));  // a corner window holds 4 ones and 5 padded zeros
  CHECK(y[1] == Approx(6.f / 9));
  CHECK(y[4] == Approx(1.f));
}
