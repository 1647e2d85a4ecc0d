// No-op removal: a Pad of zeros disappears (its readers read its input); any other Pad stays.
#include <catch2/catch.hpp>

#include "passes/drop_noops.h"
#include "plan/compile.h"
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
