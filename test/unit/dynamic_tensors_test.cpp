// Dynamic tensors: a size that no inference, folding or bound fixes (a Loop whose trip count is a
// run-time input, with scan outputs) is allocated by the session outside the arena, and so is
// what it flows into; the rest stays planned. --static refuses such models instead.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "plan/verifier.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

namespace {

// stack[k] = x0 + 0 + 1 + ... + k over a run-time trip count n; then doubled = 2 * stack,
// t = transpose(doubled), total = sum(doubled), shp = shape(doubled).
ModelBuilder loop_model() {
  ModelBuilder b("dynamic", 13);
  auto& g = b.graph();
  add_input(g, "n", elem::kInt64, {});
  add_input(g, "x0", elem::kFloat, {2});
  onnx::GraphProto body = loop_body_skeleton("body");
  add_input(body, "x_in", elem::kFloat, {2});
  auto* cast = add_node(body, "Cast", {"iter"}, {"iter_f"}, "iter_f");
  attr_int(cast, "to", elem::kFloat);
  add_node(body, "Add", {"x_in", "iter_f"}, {"x_out"}, "add");
  add_node(body, "Identity", {"x_out"}, {"scan"}, "scan");
  add_output(body, "x_out", elem::kFloat, {2});
  add_output(body, "scan", elem::kFloat, {2});
  auto* loop = add_node(g, "Loop", {"n", "", "x0"}, {"x_final", "stack"}, "loop");
  attr_graph(loop, "body", body);
  add_initializer(g, tensor_f32("two", {}, {2.f}));
  add_node(g, "Mul", {"stack", "two"}, {"doubled"}, "double");
  auto* tr = add_node(g, "Transpose", {"doubled"}, {"t"}, "transpose");
  attr_ints(tr, "perm", {1, 0});
  auto* sum = add_node(g, "ReduceSum", {"doubled"}, {"total"}, "total");
  attr_int(sum, "keepdims", 0);
  add_node(g, "Shape", {"doubled"}, {"shp"}, "shape");
  add_output(g, "x_final", elem::kFloat, {2});
  add_output(g, "t", elem::kFloat, {2, "k"});
  add_output(g, "total", elem::kFloat, {});
  add_output(g, "shp", elem::kInt64, {2});
  return b;
}

std::string write(const ModelBuilder& b, const std::string& file) {
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  return path;
}

std::vector<float> floats(const TensorRef& r) {
  const float* p = static_cast<const float*>(r.data);
  return {p, p + r.bytes / 4};
}

void run_loop(Session& s, int64_t n) {
  const std::vector<float> x0{1, 2};
  s.set_input("n", kInt64, std::vector<int64_t>{}, &n, 8);
  s.set_input("x0", kFloat32, std::vector<int64_t>{2}, x0.data(), 8);
  s.run();
}

}  // namespace

TEST_CASE("dynamic tensors: a run-time trip count's scan output and what it flows into run outside the arena",
          "[dynamic]") {
  const std::string path = write(loop_model(), "memplan_dynamic_loop.onnx");
  auto model = CompiledModel::compile(path, {});
  const std::string report = model->report_json();
  // The scan output and the two tensors sized by it are dynamic; Shape and ReduceSum have
  // static outputs and stay planned.
  for (const char* name : {"\"stack\"", "\"doubled\"", "\"t\""}) CHECK_THAT(report, Catch::Contains(name));
  CHECK_THAT(model->report_text(), Catch::Contains("'stack' [?, 2] from loop; a bound for it would plan it in the arena"));

  for (bool guard : {false, true}) {
    INFO("guard mode " << guard);
    Session s(model, SessionOptions{guard});
    run_loop(s, 4);  // stack = [1 2], [2 3], [4 5], [7 8]
    CHECK(floats(s.output("t")) == std::vector<float>{2, 4, 8, 14, 4, 6, 10, 16});
    CHECK(floats(s.output("total")) == std::vector<float>{64});
    CHECK(floats(s.output("x_final")) == std::vector<float>{7, 8});
    const auto* shp = static_cast<const int64_t*>(s.output("shp").data);
    CHECK(std::vector<int64_t>(shp, shp + 2) == std::vector<int64_t>{4, 2});
    TensorRef t = s.output("t");
    CHECK(std::vector<int64_t>(t.shape.begin(), t.shape.end()) == std::vector<int64_t>{2, 4});

    run_loop(s, 7);  // longer: the buffers grow, the kernels are made again for the new shapes
    t = s.output("t");
    CHECK(std::vector<int64_t>(t.shape.begin(), t.shape.end()) == std::vector<int64_t>{2, 7});
    CHECK(floats(s.output("t"))[6] == 2 * (1 + 21));  // x0[0] + 0 + 1 + ... + 6, doubled

    run_loop(s, 0);  // no iteration: empty tensors
    t = s.output("t");
    CHECK(std::vector<int64_t>(t.shape.begin(), t.shape.end()) == std::vector<int64_t>{2, 0});
    CHECK(floats(s.output("total")) == std::vector<float>{0});

    // The largest size each took: 7 rows of 2 floats.
    for (const DynamicTensorUse& d : s.dynamic_tensors()) CHECK(d.max_bytes == 7 * 2 * 4);
    CHECK(s.dynamic_tensors().size() == 3);
  }
}

TEST_CASE("dynamic tensors: --static refuses them, naming the tensor and the --bound", "[dynamic]") {
  const std::string path = write(loop_model(), "memplan_dynamic_strict.onnx");
  CompileOptions o;
  o.static_only = true;
  CHECK_THROWS_WITH(CompiledModel::compile(path, o), Catch::Contains("'stack'") && Catch::Contains("bounds[stack] = <dims>"));
  o.bounds["stack"] = {8, 2};  // with a bound the whole chain is planned in the arena
  auto model = CompiledModel::compile(path, o);
  CHECK_THAT(model->report_json(), Catch::Contains("\"dynamic_tensors\": []"));
  Session s(model);
  run_loop(s, 4);
  CHECK(floats(s.output("t")) == std::vector<float>{2, 4, 8, 14, 4, 6, 10, 16});
  CHECK(s.dynamic_tensors().empty());
}

TEST_CASE("dynamic tensors: the verifier wants the plan to list exactly the dynamic tensors", "[dynamic][verifier]") {
  const std::string path = write(loop_model(), "memplan_dynamic_verify.onnx");
  Compilation c = compile_model(path, {}, {});
  REQUIRE(c.plan.dynamic_tensors.size() == 3);
  REQUIRE_NOTHROW(verify_plan(c.model, c.plan));
  MemoryPlan missing = c.plan;
  missing.dynamic_tensors.pop_back();
  CHECK_THROWS_WITH(verify_plan(c.model, missing), Catch::Contains("is not listed once"));
  MemoryPlan extra = c.plan;
  extra.dynamic_tensors.push_back({0, -1, "x_final", "", "", 1, ""});
  CHECK_THROWS_WITH(verify_plan(c.model, extra), Catch::Contains("'x_final'"));
}

namespace {

// An outer Loop over n whose body runs an inner Loop of `o_iter` trips: the inner scan output has
// a size only the run decides, inside the outer body. The body sums it (a static [1, 1]) or, with
// `return_dynamic`, returns it as its own scan output.
ModelBuilder nested_model(bool return_dynamic) {
  ModelBuilder b("nested", 13);
  auto& g = b.graph();
  add_input(g, "n", elem::kInt64, {});
  add_input(g, "x0", elem::kFloat, {2});
  onnx::GraphProto inner = loop_body_skeleton("inner", "i_");
  add_input(inner, "i_x", elem::kFloat, {2});
  add_node(inner, "Identity", {"i_x"}, {"i_x_out"}, "i_pass");
  add_node(inner, "Identity", {"i_x"}, {"i_scan"}, "i_scan");
  add_output(inner, "i_x_out", elem::kFloat, {2});
  add_output(inner, "i_scan", elem::kFloat, {2});
  onnx::GraphProto outer = loop_body_skeleton("outer", "o_");
  add_input(outer, "o_x", elem::kFloat, {2});
  auto* l = add_node(outer, "Loop", {"o_iter", "", "o_x"}, {"o_x_out", "inner_stack"}, "inner_loop");
  attr_graph(l, "body", inner);
  add_output(outer, "o_x_out", elem::kFloat, {2});
  if (return_dynamic) {
    add_output_unranked(outer, "inner_stack", elem::kFloat);
  } else {
    add_node(outer, "ReduceSum", {"inner_stack"}, {"o_sum"}, "o_sum");
    add_output(outer, "o_sum", elem::kFloat, {1, 1});
  }
  auto* loop = add_node(g, "Loop", {"n", "", "x0"}, {"x_final", "sums"}, "outer_loop");
  attr_graph(loop, "body", outer);
  add_output(g, "x_final", elem::kFloat, {2});
  add_output_unranked(g, "sums", elem::kFloat);
  return b;
}

}  // namespace

TEST_CASE("dynamic tensors: inside a loop body, read by ordinary nodes", "[dynamic]") {
  const std::string path = write(nested_model(false), "memplan_dynamic_nested.onnx");
  auto model = CompiledModel::compile(path, {});
  CHECK_THAT(model->report_text(), Catch::Contains("'inner_stack' [?, 2] from inner_loop in "));
  Session s(model, SessionOptions{true});
  run_loop(s, 4);  // iteration i stacks x0 i times: its sum is 3 i
  CHECK(floats(s.output("sums")) == std::vector<float>{0, 3, 6, 9});
  TensorRef sums = s.output("sums");
  CHECK(std::vector<int64_t>(sums.shape.begin(), sums.shape.end()) == std::vector<int64_t>{4, 1, 1});
}

TEST_CASE("dynamic tensors: a loop body may not return one, the error names it and the --bound", "[dynamic]") {
  const std::string path = write(nested_model(true), "memplan_dynamic_returned.onnx");
  try {
    CompiledModel::compile(path, {});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("'inner_stack'") && Catch::Contains("a Loop body returns it") &&
                             Catch::Contains("bounds[inner_stack] = <dims>"));
  }
}

TEST_CASE("dynamic tensors: an op ONNX infers only through its function body gets its shape at run time too",
          "[dynamic]") {
  // A length mask as torchaudio writes it: arange(max(lengths)) >= lengths[:, None]. GreaterOrEqual-16
  // has no inference function of its own in ONNX 1.12; its body (Greater, Equal, Or) gives the shape.
  ModelBuilder b("length_mask", 16);
  auto& g = b.graph();
  add_input(g, "lengths", elem::kInt64, {2});
  add_initializer(g, tensor_i64("zero", {}, {0}));
  add_initializer(g, tensor_i64("one", {}, {1}));
  add_initializer(g, tensor_i64("axis1", {1}, {1}));
  attr_int(add_node(g, "ReduceMax", {"lengths"}, {"longest"}, "longest"), "keepdims", 0);
  add_node(g, "Range", {"zero", "longest", "one"}, {"positions"}, "positions");
  add_node(g, "Unsqueeze", {"lengths", "axis1"}, {"column"}, "column");
  add_node(g, "GreaterOrEqual", {"positions", "column"}, {"mask"}, "mask");
  add_output_unranked(g, "mask", elem::kBool);
  auto model = CompiledModel::compile(write(b, "memplan_dynamic_length_mask.onnx"), {});
  Session s(model, SessionOptions{true});
  const std::vector<int64_t> lengths{5, 3};
  s.set_input("lengths", kInt64, std::vector<int64_t>{2}, lengths.data(), 16);
  s.run();
  const TensorRef mask = s.output("mask");
  CHECK(std::vector<int64_t>(mask.shape.begin(), mask.shape.end()) == std::vector<int64_t>{2, 5});
  const auto* m = static_cast<const uint8_t*>(mask.data);
  CHECK(std::vector<uint8_t>(m, m + 10) == std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1});
}

TEST_CASE("dynamic tensors: a dead one's buffer is reused by those made after it, in the run and the next",
          "[dynamic]") {
  // A Loop of a run-time trip count n stacks its counter ([n]) -> Relu -> Neg -> Neg -> Relu:
  // five dynamic tensors in a chain, at most two of them live at once.
  ModelBuilder b("chain", 13);
  auto& g = b.graph();
  add_input(g, "n", elem::kInt64, {});
  onnx::GraphProto body = loop_body_skeleton("body");
  attr_int(add_node(body, "Cast", {"iter"}, {"iter_f"}, "iter_f"), "to", elem::kFloat);
  add_output(body, "iter_f", elem::kFloat, {});
  attr_graph(add_node(g, "Loop", {"n", ""}, {"r"}, "loop"), "body", body);
  add_node(g, "Relu", {"r"}, {"a"}, "relu1");
  add_node(g, "Neg", {"a"}, {"b"}, "neg1");
  add_node(g, "Neg", {"b"}, {"c"}, "neg2");
  add_node(g, "Relu", {"c"}, {"y"}, "relu2");
  add_output(g, "y", elem::kFloat, {"k"});
  auto model = CompiledModel::compile(write(b, "memplan_dynamic_chain.onnx"), {});
  Session s(model, SessionOptions{true});
  auto run = [&](int64_t n) {
    s.set_input("n", kInt64, std::vector<int64_t>{}, &n, 8);
    s.run();
  };
  run(4096);
  const TensorRef y = s.output("y");
  REQUIRE(y.bytes == 4096 * 4);
  CHECK(static_cast<const float*>(y.data)[4095] == 4095.f);
  uint64_t sum = 0;
  for (const DynamicTensorUse& d : s.dynamic_tensors()) sum += d.max_bytes;
  CHECK(s.dynamic_tensors().size() == 5);
  // Without reuse the session would hold every one of them (5 * 4096 * 4 bytes).
  const uint64_t held = s.dynamic_bytes();
  CHECK(held <= sum * 3 / 5);
  run(4096);
  CHECK(s.dynamic_bytes() == held);  // the next run takes the same buffers again
  run(1000);
  CHECK(s.dynamic_bytes() == held);  // and a shorter one too
  CHECK(static_cast<const float*>(s.output("y").data)[999] == 999.f);
}
