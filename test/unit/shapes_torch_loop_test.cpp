// PyTorch's for-loops (torch.jit.script, then torch.onnx.export) end their Loop body with
// Identity(<a main-graph Constant>) as the condition. Constant folding deletes that Identity node
// while the body is inferred; its output, now a constant, must not keep pointing at the deleted
// node (Loop inference follows the condition through Identity producers afterwards). This used to
// crash `memplan compile` on every scripted for-loop.
#include <catch2/catch.hpp>

#include "shapes/shape_inference.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

TEST_CASE("Loop: a body condition folded from an outer Constant (torch's for-loop)", "[shapes]") {
  ModelBuilder b;
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {4});
  add_constant(g, tensor_i64("M", {}, {3}));
  add_constant(g, tensor_bool("keep_going", {}, {1}));
  onnx::GraphProto body;
  body.set_name("body");
  add_input(body, "i", elem::kInt64, {});
  add_input(body, "c", elem::kBool, {});
  add_input(body, "acc", elem::kFloat, {4});
  add_node(body, "Neg", {"acc"}, {"acc_out"}, "neg");
  add_node(body, "Identity", {"keep_going"}, {"c_out"}, "pass_outer_cond");
  add_output(body, "c_out", elem::kBool, {});
  add_output(body, "acc_out", elem::kFloat, {4});
  attr_graph(add_node(g, "Loop", {"M", "keep_going", "x"}, {"y"}, "loop"), "body", body);
  add_output(g, "y", elem::kFloat, {4});
  Model m = b.import();
  infer_shapes(m, {});
  const Node* loop = find_node(*m.main, "loop");
  REQUIRE(loop);
  const Graph* folded_body = loop->subgraph("body");
  REQUIRE(folded_body);
  const Value* cond_out = folded_body->outputs[0];
  REQUIRE(cond_out->constant);
  CHECK(cond_out->producer == nullptr);
  CHECK(find_node(*folded_body, "pass_outer_cond") == nullptr);
  CHECK(dims_of(loop->outputs[0]) == std::vector<int64_t>{4});
}
