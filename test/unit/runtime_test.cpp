// The runtime through the public API: every example and real model runs in guard mode and
// matches its expected outputs; every data set takes its own branch or loop path.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "memplan/memplan.h"
#include "plan/plan.h"
#include "plan/plan_file.h"
#include "support/model_builder.h"
#include "support/numeric.h"
#include "support/test_data_set.h"

namespace fs = std::filesystem;
using namespace memplan;

namespace {

using test::pb_name;
using test::read_pb;

std::vector<double> values_of(const Tensor& t) {
  std::vector<double> out;
  for (uint64_t i = 0; i < t.element_count(); ++i) out.push_back(t.float_at(i));
  return out;
}

// The tolerance a model folder's SOURCE.json suggests ("suggested_tolerance": {"rtol": R,
// "atol": A}), else ONNX's backend-test tolerances for real models: rtol 1e-3, atol 1e-4.
test::Tolerance folder_tolerance(const fs::path& dir) {
  double rtol = 1e-3, atol = 1e-4;
  std::ifstream in(dir / "SOURCE.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("\"suggested_tolerance\"");
  if (at != std::string::npos) {
    const size_t end = text.find('}', at);
    for (auto [key, value] : {std::pair{"\"rtol\"", &rtol}, std::pair{"\"atol\"", &atol}}) {
      const size_t k = text.find(key, at);
      REQUIRE(k < end);
      *value = std::stod(text.substr(text.find(':', k) + 1));
    }
  }
  return test::abs_rel(atol, rtol);
}

// Compares at `tol`; NaN == NaN.
void require_output_close(const TensorRef& got, const Tensor& want, const std::string& what,
                          const test::Tolerance& tol = test::abs_rel(1e-4, 1e-3)) {
  INFO(what);
  REQUIRE(got.dtype == static_cast<int32_t>(want.dtype));
  REQUIRE(std::vector<int64_t>(got.shape.begin(), got.shape.end()) == want.dims);
  Tensor g = want;
  g.bytes.assign(static_cast<const std::byte*>(got.data), static_cast<const std::byte*>(got.data) + got.bytes);
  test::require_close(values_of(g), values_of(want), tol);
}

// Runs every test_data_set of a model folder; returns how many data sets ran.
int run_model_folder(const fs::path& dir) {
  int sets = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("test_data_set_", 0) != 0) continue;
    INFO(entry.path().string());
    std::vector<fs::path> inputs, outputs;
    for (const auto& f : fs::directory_iterator(entry.path())) {
      const std::string name = f.path().filename().string();
      if (name.rfind("input_", 0) == 0) inputs.push_back(f.path());
      if (name.rfind("output_", 0) == 0) outputs.push_back(f.path());
    }
    std::sort(inputs.begin(), inputs.end());
    std::sort(outputs.begin(), outputs.end());
    const std::string model_path = (dir / "model.onnx").string();
    const auto declared = model_inputs(model_path);
    CompileOptions options;
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::string name = pb_name(inputs[i]);
      if (name.empty()) name = declared.at(i).name;
      feeds.emplace_back(name, read_pb(inputs[i]));
      options.input_shapes[name] = feeds.back().second.dims;
    }
    auto model = CompiledModel::compile(model_path, options);
    Session session(model, SessionOptions{true});
    for (int run = 0; run < 2; ++run) {  // a second run must give the same answer from the same arena
      for (auto& [name, t] : feeds) {
        const auto bytes = t.materialize();
        session.set_input(name, static_cast<int32_t>(t.dtype), t.dims, bytes.data(), bytes.size());
      }
      session.run();
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string name = pb_name(outputs[i]);
      if (name.empty()) name = model->outputs().at(i).name;
      require_output_close(session.output(name), read_pb(outputs[i]), name, folder_tolerance(dir));
    }
    ++sets;
  }
  return sets;
}

}  // namespace

TEST_CASE("every example model matches its expected outputs in guard mode", "[runtime]") {
  const fs::path models = fs::path(MEMPLAN_SOURCE_DIR) / "models";
  int sets = 0;
  for (const char* name : {"tiny_mlp", "example", "scan_sum", "loop_scan_outputs", "nested_if_loop_if",
                           "capture_two_levels", "if_different_shapes", "loop_data_dependent_exit",
                           "loop_growing_state"})
    sets += run_model_folder(models / name);
  // example: both branches; loop_data_dependent_exit: 0, 1 and 15 trips; if_different_shapes: both
  // shapes; loop_growing_state: a decoder's token history stopped early, at full length, and never grown.
  CHECK(sets == 17);
}

TEST_CASE("the real models match their expected outputs", "[runtime][real]") {
  const fs::path real = fs::path(MEMPLAN_SOURCE_DIR) / "models" / "real";  // models/real/README.md
  REQUIRE(fs::exists(real));
  int models = 0;
  for (const auto& entry : fs::directory_iterator(real)) {
    if (!fs::exists(entry.path() / "model.onnx")) continue;
    CHECK(run_model_folder(entry.path()) >= 1);
    ++models;
  }
  CHECK(models == 22);
}

TEST_CASE("greedy decoders exported from PyTorch, their token history growing in a Loop, match ONNX Runtime in guard mode",
          "[runtime][loop]") {
  // models/torch_decoders/make_torch_decoders.py: a transformer decoder over the whole history and
  // an LSTM with attention, each stopped early by its end token, run to max_len, and run no step.
  const fs::path dir = fs::path(MEMPLAN_SOURCE_DIR) / "models" / "torch_decoders";
  for (const char* name : {"greedy_transformer", "greedy_lstm_attention"}) CHECK(run_model_folder(dir / name) == 3);
}

TEST_CASE("PyTorch exports with run-time sizes match ONNX Runtime in guard mode", "[runtime][dynamic]") {
  // models/torch_dynamic/make_torch_dynamic.py: torchaudio's Conformer with a padding mask made
  // from run-time lengths (batch 2, two sequence lengths); torchvision's Swin blocks, whose
  // attention dropout exports in training mode at ratio 0; a Keypoint R-CNN whose post-processing
  // (TopK, NonZero, NonMaxSuppression, a Loop over detections) decides every size at run time;
  // a Python list built in a scripted loop, stacked and concatenated (3 items, and none); an STFT
  // magnitude front end over two signal lengths.
  const fs::path dir = fs::path(MEMPLAN_SOURCE_DIR) / "models" / "torch_dynamic";
  for (const char* name :
       {"conformer_masks", "swin_dropout0", "keypoint_rcnn_small", "scripted_list_loop", "stft_frontend"}) {
    INFO(name);
    CHECK(run_model_folder(dir / name) == 2);
  }
}

TEST_CASE("a growing carried value bounded on its body input is planned in the arena, and refused past the bound",
          "[runtime][loop]") {
  const fs::path dir = fs::path(MEMPLAN_SOURCE_DIR) / "models" / "loop_growing_state";
  auto feed = [&](Session& session, const char* set) {
    for (const auto& f : fs::directory_iterator(dir / set))
      if (f.path().filename().string().rfind("input_", 0) == 0) {
        Tensor t = read_pb(f.path());
        session.set_input(pb_name(f.path()), static_cast<int32_t>(t.dtype), t.dims, t.bytes.data(), t.bytes.size());
      }
  };
  CompileOptions options;
  options.bounds["ys_in"] = {1, 8};  // the history: the start token and up to 7 decoded
  auto model = CompiledModel::compile((dir / "model.onnx").string(), options);
  const std::string report = model->report_text();
  CHECK_THAT(report, Catch::Contains("slots for 'ys_in': 64 bytes"));
  CHECK_THAT(report, Catch::Contains("(its shape grows or shrinks with the run: the slot holds its bound)"));
  CHECK_THAT(model->report_json(), Catch::Contains("\"value\": \"ys_in\"") && Catch::Contains("\"grows\": true"));
  CHECK_THAT(report, !Catch::Contains("dynamic tensor 'ys_in'"));
  for (const char* set : {"test_data_set_0", "test_data_set_1", "test_data_set_2"}) {
    INFO(set);
    Session session(model, SessionOptions{true});
    feed(session, set);
    session.run();
    require_output_close(session.output("ys"), read_pb(dir / set / "output_0.pb"), "ys");
  }
  options.bounds["ys_in"] = {1, 4};  // set 1 decodes six tokens: seven do not fit in four
  auto small = CompiledModel::compile((dir / "model.onnx").string(), options);
  Session session(small);
  feed(session, "test_data_set_1");
  // The history's writer finds it would pass its slot: it names itself and the bytes, writes nothing.
  CHECK_THROWS_WITH(session.run(), Catch::Contains("Concat node 'append'") && Catch::Contains("needs 40 bytes") &&
                                       Catch::Contains("holds 32"));
}

TEST_CASE("a loop scan output bounded by --bound runs and refuses more iterations than the bound", "[runtime]") {
  const fs::path dir = fs::path(MEMPLAN_SOURCE_DIR) / "models" / "loop_data_dependent_scan";
  CompileOptions options;
  options.bounds["sums"] = {4};
  auto model = CompiledModel::compile((dir / "model.onnx").string(), options);
  for (const char* set : {"test_data_set_0", "test_data_set_1", "test_data_set_2"}) {
    INFO(set);
    Session session(model);
    std::vector<fs::path> inputs;
    for (const auto& f : fs::directory_iterator(dir / set))
      if (f.path().filename().string().rfind("input_", 0) == 0) inputs.push_back(f.path());
    std::sort(inputs.begin(), inputs.end());
    for (const auto& p : inputs) {
      Tensor t = read_pb(p);
      session.set_input(pb_name(p), static_cast<int32_t>(t.dtype), t.dims, t.bytes.data(), t.bytes.size());
    }
    const Tensor expected = read_pb(dir / set / "output_2.pb");
    if (expected.dims[0] <= 4) {
      session.run();
      CHECK(session.output("sums").shape[0] == expected.dims[0]);
    } else {
      CHECK_THROWS_WITH(session.run(), Catch::Contains("raise the bound of 'sums'"));
    }
  }
}

TEST_CASE("a run with an input not set again is refused, zero-copy inputs stay bound", "[runtime]") {
  auto model = CompiledModel::compile(std::string(MEMPLAN_SOURCE_DIR) + "/models/tiny_mlp/model.onnx", {});
  Session session(model);
  CHECK_THROWS_WITH(session.run(), Catch::Contains("input 'x' is not set"));
  alignas(64) float x[64] = {};
  const std::vector<int64_t> shape{1, 64};
  session.set_input("x", kFloat32, shape, x, sizeof x);
  session.run();
  CHECK_THROWS_WITH(session.run(), Catch::Contains("set it before each run"));
  session.bind_input("x", kFloat32, shape, x, sizeof x);
  session.run();
  const float first = static_cast<const float*>(session.output("probs").data)[0];
  session.run();
  CHECK(static_cast<const float*>(session.output("probs").data)[0] == first);
  CHECK_THROWS_WITH(session.bind_input("x", kFloat32, shape, x + 1, 64 * 4), Catch::Contains("aligned"));
  CHECK_THROWS_WITH(session.set_input("x", kInt64, shape, x, sizeof x), Catch::Contains("int64"));
}

TEST_CASE("runtime: a one-element input stands for a declared scalar, as in ONNX Runtime", "[runtime]") {
  using namespace memplan::test;
  ModelBuilder b("scalar", 13);
  add_input(b.graph(), "s", elem::kInt64, {});
  add_node(b.graph(), "Neg", {"s"}, {"y"}, "neg");
  add_output(b.graph(), "y", elem::kInt64, {});
  const std::string path = (fs::temp_directory_path() / "memplan_scalar_input.onnx").string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  memplan::CompileOptions o;
  o.input_shapes["s"] = {1};  // the shape a client sends
  auto model = memplan::CompiledModel::compile(path, o);
  memplan::Session s(model);
  const int64_t v = 16000;
  s.set_input("s", memplan::kInt64, std::vector<int64_t>{1}, &v, 8);
  s.run();
  CHECK(*static_cast<const int64_t*>(s.output("y").data) == -16000);
  CHECK(s.output("y").shape.empty());
  const int64_t two[2] = {1, 2};
  CHECK_THROWS_WITH(s.set_input("s", memplan::kInt64, std::vector<int64_t>{2}, two, 16), Catch::Contains("rank"));
}

TEST_CASE("runtime: two nodes of one name each get their own scratchpad (names need not be unique)", "[runtime]") {
  using namespace memplan::test;
  // ReduceLogSumExp takes a scratchpad as large as its output; both nodes are called "dup".
  ModelBuilder b("dup_names", 13);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {2, 3});
  auto* r0 = add_node(g, "ReduceLogSumExp", {"x"}, {"rows"}, "dup");
  attr_ints(r0, "axes", {1});
  auto* r1 = add_node(g, "ReduceLogSumExp", {"x"}, {"cols"}, "dup");
  attr_ints(r1, "axes", {0});
  add_node(g, "Neg", {"rows"}, {"y_rows"}, "neg");
  add_output(g, "y_rows", elem::kFloat, {2, 1});
  add_output(g, "cols", elem::kFloat, {1, 3});
  const std::string path = (fs::temp_directory_path() / "memplan_dup_names.onnx").string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  auto model = memplan::CompiledModel::compile(path, {});
  const std::string plan_path = (fs::temp_directory_path() / "memplan_dup_names.mplan").string();
  model->save_plan(plan_path);
  for (const auto& m : {model, memplan::CompiledModel::load(path, plan_path)}) {
    memplan::Session s(m, memplan::SessionOptions{true});
    const std::vector<float> x{0, 1, 2, 3, 4, 5};
    s.set_input("x", memplan::kFloat32, std::vector<int64_t>{2, 3}, x.data(), 24);
    s.run();
    const float* rows = static_cast<const float*>(s.output("y_rows").data);
    const float* cols = static_cast<const float*>(s.output("cols").data);
    CHECK(rows[0] == Approx(-std::log(std::exp(0.f) + std::exp(1.f) + std::exp(2.f))));
    CHECK(rows[1] == Approx(-std::log(std::exp(3.f) + std::exp(4.f) + std::exp(5.f))));
    for (int j = 0; j < 3; ++j) CHECK(cols[j] == Approx(std::log(std::exp(float(j)) + std::exp(float(j + 3)))));
  }
}

TEST_CASE("declared_model gives the inputs and outputs a file declares, symbolic dims by name, and its metadata",
          "[runtime]") {
  using namespace memplan::test;
  ModelBuilder mb("declared");
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 4});
  g.mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
  add_node(g, "Relu", {"x"}, {"y"}, "relu");
  add_output(g, "y", elem::kFloat, {1, 4});
  g.mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
  mb.proto().set_doc_string("what it does");
  mb.proto().set_model_version(7);
  auto* prop = mb.proto().add_metadata_props();
  prop->set_key("license");
  prop->set_value("MIT");
  const std::string path = (fs::temp_directory_path() / "memplan_declared.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  const ModelDeclaration d = declared_model(path);
  REQUIRE(d.inputs.size() == 1);
  CHECK(d.inputs[0].name == "x");
  CHECK(d.inputs[0].shape == std::vector<int64_t>{-1, 4});
  CHECK(d.inputs[0].dim_names == std::vector<std::string>{"batch", ""});
  REQUIRE(d.outputs.size() == 1);
  CHECK(d.outputs[0].dim_names == std::vector<std::string>{"batch", ""});
  CHECK(d.metadata.producer_name == "memplan-tests");
  CHECK(d.metadata.graph_name == "declared");
  CHECK(d.metadata.description == "what it does");
  CHECK(d.metadata.version == 7);
  CHECK(d.metadata.custom == std::map<std::string, std::string>{{"license", "MIT"}});
  CHECK(model_inputs(path)[0].dim_names == d.inputs[0].dim_names);
}

TEST_CASE("a plan whose dynamic loop state names a writer past the Loop body's nodes is refused on load, naming the "
          "plan (found by fuzz_plan: an out-of-bounds read)", "[runtime][loop][plan-file]") {
  const fs::path dir = fs::path(MEMPLAN_SOURCE_DIR) / "models" / "loop_growing_state";
  auto model = CompiledModel::compile((dir / "model.onnx").string(), {});
  const fs::path plan_path = fs::temp_directory_path() / "memplan_dynamic_writer.mplan";
  model->save_plan(plan_path.string());
  MemoryPlan plan = read_plan_file(plan_path.string());
  bool planted = false;
  for (GraphPlan& g : plan.graphs)
    for (Region& r : g.regions)
      for (CarriedSlots& cs : r.carried)
        if (cs.home == SlotHome::Dynamic) {
          cs.writer = 1000;  // the body has a handful of nodes
          planted = true;
        }
  REQUIRE(planted);
  write_plan_file(plan, plan_path.string());
  CHECK_THROWS_WITH(CompiledModel::load((dir / "model.onnx").string(), plan_path.string()),
                    Catch::Contains(plan_path.string()) && Catch::Contains("loop-state writer"));
}

TEST_CASE("a Resize to a trillion columns compiles without allocating a table for them (found by fuzz_onnx: "
          "kernel selection allocated 75 TB)", "[runtime][resize]") {
  // Resize-18 cubic to sizes [1, 2, 16391, 1052266987273]: the output is absurd but its bytes fit
  // 64 bits, so the plan is made (a session would refuse its arena: not tried here, where ASan
  // aborts on an allocation that large); nothing at compile time may allocate per output column.
  const fs::path finding = fs::path(MEMPLAN_SOURCE_DIR) / "test" / "fuzz" / "findings" / "fuzz_onnx" / "resize_huge_columns.onnx";
  std::shared_ptr<const CompiledModel> model;
  try {
    model = CompiledModel::compile(finding.string(), {});
  } catch (const Error&) {
    return;  // refused with memplan's own error: fine
  }
  CHECK(model->arena_bytes() > (uint64_t{1} << 50));
}
