// No-op removal: a Pad of zeros disappears (its readers read its input); any other Pad stays.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "memplan/memplan.h"

#include "passes/assign_layouts.h"
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

TEST_CASE("drop_noops: an inference Dropout whose mask nothing reads goes and the convolutions around it stay blocked, "
          "one in training mode or with a read mask stays", "[passes]") {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 16, 4, 4});
  add_initializer(g, tensor_f32("w", {16, 16, 1, 1}, std::vector<float>(256, 0.0625f)));
  add_initializer(g, tensor_bool("off", {}, {0}));
  add_initializer(g, tensor_bool("on", {}, {1}));
  add_input(g, "mode", elem::kBool, {});
  add_node(g, "Conv", {"x", "w"}, {"c1"}, "conv1");
  add_node(g, "Dropout", {"c1"}, {"d1", "unread_mask"}, "inference");          // goes
  add_node(g, "Conv", {"d1", "w"}, {"c2"}, "conv2");
  add_initializer(g, tensor_f32("ratio", {}, {0.5f}));
  add_node(g, "Dropout", {"c2", "ratio", "off"}, {"d2"}, "training_off");      // goes
  add_node(g, "Conv", {"d2", "w"}, {"c3"}, "conv3");
  add_node(g, "Dropout", {"c3", "ratio", "on"}, {"d3"}, "training_on");        // stays
  add_node(g, "Dropout", {"c3", "ratio", "mode"}, {"d4"}, "training_input");   // stays
  add_node(g, "Dropout", {"c3"}, {"d5", "read_mask"}, "mask_read");            // stays
  add_node(g, "Add", {"d3", "d4"}, {"s"}, "add");
  add_node(g, "Add", {"s", "d5"}, {"y"}, "add2");
  add_output(g, "y", elem::kFloat, {1, 16, 4, 4});
  add_output(g, "read_mask", elem::kBool, {1, 16, 4, 4});
  Model m = mb.import();
  prepare_model(m, {});
  CHECK_FALSE(find_node(*m.main, "inference"));
  CHECK_FALSE(find_node(*m.main, "training_off"));
  CHECK(find_node(*m.main, "training_on"));
  CHECK(find_node(*m.main, "training_input"));
  CHECK(find_node(*m.main, "mask_read"));
  REQUIRE(find_node(*m.main, "conv2"));
  CHECK(find_node(*m.main, "conv2")->inputs[0]->name == "c1");
  CHECK(find_node(*m.main, "conv3")->inputs[0]->name == "c2");
  // With the Dropouts gone, the tensors between the convolutions may be channel-blocked.
  if (const int block = preferred_channel_block(); block > 0) {
    for (const auto& v : m.main->values)
      if (v->name == "c1" || v->name == "c2") CHECK(v->channel_block != 0);
  }
}
