// Loop state whose shape changes across iterations (shape inference widens the carried type; the
// session keeps the value outside the arena and hands each iteration's buffer to the next):
// growing, shrinking, changing rank, nested, with zero trips, and past what memplan supports.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>

#include "memplan/memplan.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

namespace {

std::string write(const ModelBuilder& b, const std::string& file) {
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  return path;
}

// y = Loop(n) over x: each iteration x_out = <op>(x_in) (a body of one node after the skeleton).
ModelBuilder one_node_loop(const std::string& name, const std::string& op, std::vector<std::string> extra_inputs,
                           const std::function<void(onnx::NodeProto*)>& attrs = {}) {
  ModelBuilder b(name, 13);
  auto& g = b.graph();
  add_input(g, "n", elem::kInt64, {});
  add_input(g, "x", elem::kFloat, {"len"});
  onnx::GraphProto body = loop_body_skeleton("body");
  add_input_unranked(body, "x_in", elem::kFloat);
  std::vector<std::string> inputs{"x_in"};
  inputs.insert(inputs.end(), extra_inputs.begin(), extra_inputs.end());
  auto* node = add_node(body, op, inputs, {"x_out"}, "step");
  if (attrs) attrs(node);
  add_output_unranked(body, "x_out", elem::kFloat);
  auto* loop = add_node(g, "Loop", {"n", "", "x"}, {"y"}, "loop");
  attr_graph(loop, "body", body);
  add_output_unranked(g, "y", elem::kFloat);
  return b;
}

struct Out {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

Out run(const std::shared_ptr<const CompiledModel>& model, int64_t n, const std::vector<float>& x, bool guard) {
  Session s(model, SessionOptions{guard});
  s.set_input("n", kInt64, std::vector<int64_t>{}, &n, 8);
  s.set_input("x", kFloat32, std::vector<int64_t>{static_cast<int64_t>(x.size())}, x.data(), x.size() * 4);
  s.run();
  const TensorRef y = s.output("y");
  const float* p = static_cast<const float*>(y.data);
  return {{y.shape.begin(), y.shape.end()}, {p, p + y.bytes / 4}};
}

CompileOptions for_length(int64_t len) {
  CompileOptions o;
  o.input_shapes["x"] = {len};
  return o;
}

}  // namespace

TEST_CASE("loop growth: a carried value that gains an element each iteration, any number of times", "[loop][dynamic]") {
  ModelBuilder b = one_node_loop("grow", "Concat", {"x"}, [](onnx::NodeProto* n) { attr_int(n, "axis", 0); });
  auto model = CompiledModel::compile(write(b, "memplan_loop_grow.onnx"), for_length(2));
  CHECK_THAT(model->report_text(), Catch::Contains("carries 'x_in', whose shape grows"));
  for (const bool guard : {false, true}) {
    INFO("guard " << guard);
    const Out three = run(model, 3, {1, 2}, guard);
    CHECK(three.shape == std::vector<int64_t>{8});
    CHECK(three.values == std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2});
    CHECK(run(model, 0, {1, 2}, guard).shape == std::vector<int64_t>{2});  // no trip: the initial value
    CHECK(run(model, 40, {1, 2}, guard).shape == std::vector<int64_t>{82});
  }
}

TEST_CASE("loop growth: a carried value that shrinks to nothing, and stays empty", "[loop][dynamic]") {
  ModelBuilder b = one_node_loop("shrink", "Slice", {"one", "big"});
  add_initializer(b.graph(), tensor_i64("one", {1}, {1}));
  add_initializer(b.graph(), tensor_i64("big", {1}, {1000}));
  auto model = CompiledModel::compile(write(b, "memplan_loop_shrink.onnx"), for_length(5));
  CHECK(run(model, 2, {1, 2, 3, 4, 5}, true).values == std::vector<float>{3, 4, 5});
  const Out all = run(model, 9, {1, 2, 3, 4, 5}, true);
  CHECK(all.shape == std::vector<int64_t>{0});
  CHECK(all.values.empty());
}

TEST_CASE("loop growth: a rank that grows each iteration runs up to memplan's largest rank, then one clear error",
          "[loop][dynamic]") {
  ModelBuilder b = one_node_loop("rank", "Unsqueeze", {"axes"});
  add_initializer(b.graph(), tensor_i64("axes", {1}, {0}));
  auto model = CompiledModel::compile(write(b, "memplan_loop_rank.onnx"), for_length(2));
  const Out three = run(model, 3, {1, 2}, true);
  CHECK(three.shape == std::vector<int64_t>{1, 1, 1, 2});
  CHECK(three.values == std::vector<float>{1, 2});
  try {
    run(model, 12, {1, 2}, false);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("Unsqueeze node 'step'") && Catch::Contains("rank 9"));
  }
}

TEST_CASE("loop growth: a growing loop inside another starts again from its initial value each time", "[loop][dynamic]") {
  // outer: for i < n: inner = Loop(i + 1) appending x to x; sum_i = ReduceSum(inner) (a scan output).
  ModelBuilder b("nested_growth", 13);
  auto& g = b.graph();
  add_input(g, "n", elem::kInt64, {});
  add_input(g, "x", elem::kFloat, {2});
  add_initializer(g, tensor_i64("one", {}, {1}));
  onnx::GraphProto inner = loop_body_skeleton("inner_body", "i_");
  add_input_unranked(inner, "acc_in", elem::kFloat);
  attr_int(add_node(inner, "Concat", {"acc_in", "x"}, {"acc_out"}, "append"), "axis", 0);
  add_output_unranked(inner, "acc_out", elem::kFloat);
  onnx::GraphProto outer = loop_body_skeleton("outer_body");
  add_node(outer, "Add", {"iter", "one"}, {"trips"}, "trips");
  attr_graph(add_node(outer, "Loop", {"trips", "", "x"}, {"acc"}, "inner"), "body", inner);
  attr_int(add_node(outer, "ReduceSum", {"acc"}, {"total"}, "total"), "keepdims", 1);
  add_output(outer, "total", elem::kFloat, {1});
  attr_graph(add_node(g, "Loop", {"n", ""}, {"totals"}, "outer"), "body", outer);
  add_output_unranked(g, "totals", elem::kFloat);
  auto model = CompiledModel::compile(write(b, "memplan_loop_nested_growth.onnx"), {});
  for (const bool guard : {false, true}) {
    Session s(model, SessionOptions{guard});
    const int64_t n = 3;
    const std::vector<float> x{1, 2};
    s.set_input("n", kInt64, std::vector<int64_t>{}, &n, 8);
    s.set_input("x", kFloat32, std::vector<int64_t>{2}, x.data(), 8);
    s.run();
    const TensorRef t = s.output("totals");
    const float* p = static_cast<const float*>(t.data);
    // Iteration i appends x i + 1 times to x: (i + 2) copies of 1 + 2.
    CHECK(std::vector<float>(p, p + t.bytes / 4) == std::vector<float>{6, 9, 12});
  }
}

namespace {

// x_out = Concat(x_in, <appended>) over a trip count fixed in the file (an initializer).
ModelBuilder constant_trips_loop(const std::string& name, int64_t trips, const std::string& appended) {
  ModelBuilder b(name, 13);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {2});
  add_initializer(g, tensor_i64("trips", {}, {trips}));
  onnx::GraphProto body = loop_body_skeleton("body");
  add_input_unranked(body, "x_in", elem::kFloat);
  attr_int(add_node(body, "Concat", {"x_in", appended}, {"x_out"}, "append"), "axis", 0);
  add_output_unranked(body, "x_out", elem::kFloat);
  attr_graph(add_node(g, "Loop", {"trips", "", "x"}, {"y"}, "loop"), "body", body);
  add_output_unranked(g, "y", elem::kFloat);
  return b;
}

std::vector<float> run_fixed(const std::shared_ptr<const CompiledModel>& model, std::vector<int64_t>& shape) {
  Session s(model, SessionOptions{true});
  const std::vector<float> x{1, 2};
  s.set_input("x", kFloat32, std::vector<int64_t>{2}, x.data(), 8);
  s.run();
  const TensorRef y = s.output("y");
  shape.assign(y.shape.begin(), y.shape.end());
  const float* p = static_cast<const float*>(y.data);
  return {p, p + y.bytes / 4};
}

}  // namespace

TEST_CASE("loop growth: a steady growth under a constant trip count is planned in the arena at its bound",
          "[loop][dynamic]") {
  // Two floats a step, five steps: at most 12 floats, 48 bytes a slot.
  auto model = CompiledModel::compile(write(constant_trips_loop("steady", 5, "x"), "memplan_loop_steady.onnx"), {});
  const std::string report = model->report_text();
  CHECK_THAT(report, Catch::Contains("slots for 'x_in': 48 bytes"));
  CHECK_THAT(report, !Catch::Contains("dynamic tensor 'x_in'"));
  CHECK_THAT(report, !Catch::Contains("dynamic tensor 'y'"));
  std::vector<int64_t> shape;
  CHECK(run_fixed(model, shape) == std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2});
  CHECK(shape == std::vector<int64_t>{12});
}

TEST_CASE("loop growth: a value that doubles each step is not bounded by a guess: the session keeps it",
          "[loop][dynamic]") {
  // Concat(x_in, x_in) adds 2, then 4, then 8: no steady step, so no bound from the trip count.
  auto model = CompiledModel::compile(write(constant_trips_loop("doubling", 3, "x_in"), "memplan_loop_doubling.onnx"), {});
  CHECK_THAT(model->report_text(), Catch::Contains("carries 'x_in', whose shape grows"));
  std::vector<int64_t> shape;
  CHECK(run_fixed(model, shape).size() == 16);
  CHECK(shape == std::vector<int64_t>{16});
}
