// Winograd's convolutions: which ones the pass takes (the pure choice, exactly), and through the
// public API that a chosen 3x3 convolution runs oneDNN's Winograd kernel where the machine has one,
// with the direct convolution's answer; that it gives way where its scratchpad would set the
// arena's peak; what memory and speed preferences do; and that a plan records the choice.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "io/npy.h"
#include "memplan/error.h"
#include "memplan/memplan.h"
#include "passes/winograd_convs.h"
#include "plan/plan_file.h"
#include "runtime/dnnl_context.h"
#include "support/cli_runner.h"
#include "support/model_builder.h"
#include "support/naive_conv.h"
#include "support/numeric.h"
#include "support/temp_dir.h"

using namespace memplan;
using namespace memplan::test;

namespace {

std::vector<std::string> names(const std::vector<WinogradConv>& convs) {
  std::vector<std::string> out;
  for (const WinogradConv& c : convs) out.push_back(c.node);
  return out;
}

}  // namespace

namespace {

constexpr uint64_t kNoPeak = std::numeric_limits<uint64_t>::max();

WinogradCandidate candidate(const std::string& node, uint64_t added, uint64_t pixels, uint64_t scratchpad = 0,
                            uint64_t live = 0) {
  return {{node, 2, added, pixels}, scratchpad, live};
}

}  // namespace

TEST_CASE("Winograd convolutions with the most output pixels are taken first, each that still fits the budget",
          "[winograd]") {
  const std::vector<WinogradCandidate> candidates = {
      candidate("a", 50, 100), candidate("b", 80, 400), candidate("c", 30, 400), candidate("d", 10, 50)};
  // b (400 pixels, 80 bytes) first; c (400, 30) no longer fits the 20 left, nor a (50); d (10) does.
  CHECK(names(pick_winograd_convs(candidates, 100, kNoPeak)) == std::vector<std::string>{"b", "d"});
  CHECK(names(pick_winograd_convs(candidates, 1000, kNoPeak)) == std::vector<std::string>{"b", "c", "a", "d"});
  CHECK(pick_winograd_convs(candidates, 9, kNoPeak).empty());
  // A kernel that adds nothing is taken even without a budget.
  CHECK(names(pick_winograd_convs({candidate("free", 0, 1)}, 0, kNoPeak)) == std::vector<std::string>{"free"});
}

TEST_CASE("a Winograd convolution whose scratchpad would make its step the model's largest is left out, its budget "
          "kept for the next",
          "[winograd]") {
  // The model's largest step holds 1000 bytes. "big" (most pixels) would hold 600 + 500 there;
  // "fits" holds 600 + 400, exactly the peak; "small" 100 + 50.
  const std::vector<WinogradCandidate> candidates = {
      candidate("big", 60, 900, 500, 600), candidate("fits", 60, 800, 400, 600), candidate("small", 40, 100, 50, 100)};
  CHECK(names(pick_winograd_convs(candidates, 100, 1000)) == std::vector<std::string>{"fits", "small"});
  // A scratchpad alone past the peak (no wrap-around in the sum).
  CHECK(pick_winograd_convs({candidate("huge", 1, 1, 2000, kNoPeak - 10)}, 100, 1000).empty());
}

namespace {

constexpr int64_t C = 32, H = 28;

// y = P(Relu(Conv3x3(P(x)))) of C channels at H x H, the 3x3 padded to keep its size, P a 1x1
// convolution: the 3x3 one then reads and writes channel-blocked tensors, as inside a CNN (the
// model's own input and output stay plain). `peak`: where the step holding the most bytes is. At
// the 3x3 with its Winograd scratchpad (about 1 MB at 2 threads); Elsewhere, a second output
// z = x + K (K a constant of 16 images); or ElsewhereUnshared, twelve Reshapes of x summed in a chain
// of Adds, whose step holds the most only while each tensor has bytes of its own (each view shares
// x's bytes in the plan, so the 3x3's step sets the arena's peak after all); or InActivations, a second
// input of 64 images, through a Relu to a second output: bytes of the arena, no weights. `heavy`: a
// MatMul on its own input whose weights are 25 times the 3x3's, so the balanced weight budget (5% of
// the model's weights and arena) has room for its Winograd form.
struct ConvModel {
  std::string path;
  std::vector<float> x, w, b, p;
};

enum class Peak { AtConv, Elsewhere, ElsewhereUnshared, InActivations };

ConvModel conv_model(const TempDir& dir, Peak peak, bool heavy) {
  ConvModel m;
  m.path = dir / "conv.onnx";
  m.x = random_floats(static_cast<size_t>(C * H * H), 1);
  m.w = random_floats(static_cast<size_t>(C * C * 9), 2, -0.2f, 0.2f);
  m.b = random_floats(static_cast<size_t>(C), 3);
  m.p = random_floats(static_cast<size_t>(C * C), 6, -0.3f, 0.3f);
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, C, H, H});
  add_initializer(g, tensor_f32("w", {C, C, 3, 3}, m.w));
  add_initializer(g, tensor_f32("b", {C}, m.b));
  add_initializer(g, tensor_f32("p", {C, C, 1, 1}, m.p));
  add_node(g, "Conv", {"x", "p"}, {"t"}, "pre");
  auto* conv = add_node(g, "Conv", {"t", "w", "b"}, {"c"}, "conv3x3");
  attr_ints(conv, "kernel_shape", {3, 3});
  attr_ints(conv, "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"c"}, {"r"}, "relu");
  add_node(g, "Conv", {"r", "p"}, {"y"}, "post");
  add_output(g, "y", elem::kFloat, {1, C, H, H});
  if (peak == Peak::ElsewhereUnshared) {
    add_initializer(g, tensor_i64("flat", {2}, {C, H * H}));
    for (int i = 0; i < 12; ++i) add_node(g, "Reshape", {"x", "flat"}, {"view" + std::to_string(i)}, "view" + std::to_string(i));
    std::string sum = "view0";
    for (int i = 1; i < 12; ++i) {
      add_node(g, "Add", {sum, "view" + std::to_string(i)}, {"sum" + std::to_string(i)}, "add" + std::to_string(i));
      sum = "sum" + std::to_string(i);
    }
    add_output(g, sum, elem::kFloat, {C, H * H});
  }
  if (peak == Peak::Elsewhere) {
    add_initializer(g, tensor_f32("k", {16, C, H, H}, random_floats(static_cast<size_t>(16 * C * H * H), 4)));
    add_node(g, "Add", {"x", "k"}, {"z"}, "add");
    add_output(g, "z", elem::kFloat, {16, C, H, H});
  }
  if (peak == Peak::InActivations) {
    add_input(g, "z", elem::kFloat, {64, C, H, H});
    add_node(g, "Relu", {"z"}, {"zr"}, "relu_z");
    add_output(g, "zr", elem::kFloat, {64, C, H, H});
  }
  if (heavy) {
    add_input(g, "v", elem::kFloat, {1, 8});
    add_initializer(g, tensor_f32("big", {8, 30000}, random_floats(8 * 30000, 5)));
    add_node(g, "MatMul", {"v", "big"}, {"u"}, "matmul");
    add_output(g, "u", elem::kFloat, {1, 30000});
  }
  std::ofstream(m.path, std::ios::binary) << mb.bytes();
  return m;
}

std::string conv_implementation(const CompiledModel& model) {
  for (const NodeKernel& k : model.kernels())
    if (k.node == "Conv node 'conv3x3'") return k.implementation;
  return "";
}

// y by the naive convolutions and Relu.
std::vector<float> expected_y(const ConvModel& m) {
  Conv2d conv;
  conv.pads = {1, 1, 1, 1};
  const std::vector<int64_t> image{1, C, H, H}, pointwise{C, C, 1, 1};
  const std::vector<float> t = naive_conv2d(m.x, image, m.p, pointwise, {}, Conv2d{}, H, H);
  std::vector<float> r = naive_conv2d(t, image, m.w, {C, C, 3, 3}, m.b, conv, H, H);
  for (float& e : r) e = std::max(e, 0.f);
  return naive_conv2d(r, image, m.p, pointwise, {}, Conv2d{}, H, H);
}

// Runs the model and checks y against the naive convolution and Relu.
void check_output(const std::shared_ptr<const CompiledModel>& model, const ConvModel& m) {
  Session s(model);
  const std::vector<int64_t> x_dims{1, C, H, H}, v_dims{1, 8};
  s.set_input("x", kFloat32, x_dims, m.x.data(), m.x.size() * 4);
  const std::vector<float> v(8, 0.5f);
  const std::vector<int64_t> z_dims{64, C, H, H};
  const std::vector<float> z(static_cast<size_t>(64 * C * H * H), -1.f);
  for (const TensorInfo& in : model->inputs()) {
    if (in.name == "v") s.set_input("v", kFloat32, v_dims, v.data(), v.size() * 4);
    if (in.name == "z") s.set_input("z", kFloat32, z_dims, z.data(), z.size() * 4);
  }
  s.run();
  const TensorRef y = s.output("y");
  const float* p = static_cast<const float*>(y.data);
  require_close(std::vector<float>(p, p + y.bytes / 4), expected_y(m), abs_rel(1e-4, 1e-4));
}

bool has_winograd_kernels() { return rt::dnnl_runs_isa(dnnl_cpu_isa_avx512_core); }

CompileOptions prefer(const std::string& p) {
  CompileOptions o;
  o.prefer = p;
  return o;
}

}  // namespace

TEST_CASE("a 3x3 convolution the balanced budget has room for runs Winograd's F(2,3) kernel, with the direct answer",
          "[winograd]") {
  TempDir dir("winograd");
  const ConvModel m = conv_model(dir, Peak::Elsewhere, true);
  const auto model = CompiledModel::compile(m.path, prefer("balanced"));
  const std::string impl = conv_implementation(*model);
  // oneDNN 2.6 has Winograd kernels on AVX-512 only (DNNL_MAX_CPU_ISA=AVX2 leaves the direct one).
  if (has_winograd_kernels()) {
    CHECK(impl.find("wino_2x3") != std::string::npos);
    CHECK(model->report_text().find("winograd: 1 of 1 convolutions chosen run Winograd's kernels") != std::string::npos);
  } else {
    CHECK(impl.find("wino") == std::string::npos);
  }
  check_output(model, m);
}

TEST_CASE("the balanced budget counts the arena beside the weights: a model of few weights and large activations runs "
          "its 3x3 convolution in Winograd's form",
          "[winograd]") {
  // 41 KB of weights beside a 25.7 MB arena: 5% of the weights alone (2 KB) had no room for the
  // 28 KB F(2,3) adds; 5% of the run's floor has.
  TempDir dir("winograd");
  const ConvModel m = conv_model(dir, Peak::InActivations, false);
  const auto model = CompiledModel::compile(m.path, prefer("balanced"));
  if (has_winograd_kernels()) CHECK(conv_implementation(*model).find("wino_2x3") != std::string::npos);
  else CHECK(conv_implementation(*model).find("wino") == std::string::npos);
  check_output(model, m);
}

TEST_CASE("without room in the balanced weight budget, or preferring memory, a 3x3 convolution runs the direct kernel",
          "[winograd]") {
  TempDir dir("winograd");
  const ConvModel light = conv_model(dir, Peak::AtConv, false);  // its weights are the convolutions' own
  const auto balanced = CompiledModel::compile(light.path, prefer("balanced"));
  CHECK(conv_implementation(*balanced).find("wino") == std::string::npos);
  CHECK(balanced->report_json().find("\"winograd_convs\": []") != std::string::npos);
  check_output(balanced, light);
  const ConvModel heavy = conv_model(dir, Peak::Elsewhere, true);
  const auto memory = CompiledModel::compile(heavy.path, prefer("memory"));
  CHECK(conv_implementation(*memory).find("wino") == std::string::npos);
  check_output(memory, heavy);
}

TEST_CASE("a Winograd kernel whose scratchpad would set the arena's peak is not chosen, or gives way to the direct one, "
          "unless speed is preferred",
          "[winograd]") {
  TempDir dir("winograd");
  if (!has_winograd_kernels()) {
    // Nothing to give way: the direct kernel runs whatever the preference.
    const ConvModel m = conv_model(dir, Peak::AtConv, true);
    CHECK(conv_implementation(*CompiledModel::compile(m.path, prefer("speed"))).find("wino") == std::string::npos);
    return;
  }
  // At the largest step of the model, counting each tensor's own bytes: not chosen.
  const ConvModel at_conv = conv_model(dir, Peak::AtConv, true);
  const auto left_out = CompiledModel::compile(at_conv.path, prefer("balanced"));
  CHECK(left_out->report_json().find("\"winograd_convs\": []") != std::string::npos);
  const auto fastest = CompiledModel::compile(at_conv.path, prefer("speed"));
  CHECK(conv_implementation(*fastest).find("wino") != std::string::npos);
  CHECK(fastest->arena_bytes() > left_out->arena_bytes());
  check_output(fastest, at_conv);
  // Not there counting own bytes, but there in the plan, where the views share x's bytes: chosen,
  // then it gives way.
  const TempDir dir2("winograd");
  const ConvModel views = conv_model(dir2, Peak::ElsewhereUnshared, true);
  const auto balanced = CompiledModel::compile(views.path, prefer("balanced"));
  const auto speed = CompiledModel::compile(views.path, prefer("speed"));
  CHECK(conv_implementation(*balanced).find("wino") == std::string::npos);
  CHECK(balanced->report_text().find("winograd: 0 of 1 convolutions chosen") != std::string::npos);
  CHECK(conv_implementation(*speed).find("wino") != std::string::npos);
  CHECK(speed->arena_bytes() > balanced->arena_bytes());
  check_output(balanced, views);
}

TEST_CASE("a plan records the Winograd convolutions, loading it runs them again, and a plan naming another node is refused",
          "[winograd]") {
  TempDir dir("winograd");
  const ConvModel m = conv_model(dir, Peak::Elsewhere, true);
  const auto compiled = CompiledModel::compile(m.path, prefer("speed"));
  const std::string plan = dir / "conv.mplan";
  compiled->save_plan(plan);
  const auto loaded = CompiledModel::load(m.path, plan);
  CHECK(conv_implementation(*loaded) == conv_implementation(*compiled));
  CHECK(loaded->arena_bytes() == compiled->arena_bytes());
  check_output(loaded, m);
  if (!has_winograd_kernels()) return;  // the plan then records none to rename below
  MemoryPlan p = read_plan_file(plan);
  REQUIRE(p.winograd_convs.size() == 1);
  p.winograd_convs[0].node = "add";
  write_plan_file(p, plan);
  CHECK_THROWS_WITH(CompiledModel::load(m.path, plan),
                    Catch::Contains("runs node 'add' as a Winograd convolution") && Catch::Contains("as a Add"));
  p.winograd_convs[0].node = "nowhere";
  write_plan_file(p, plan);
  CHECK_THROWS_WITH(CompiledModel::load(m.path, plan), Catch::Contains("has no such node"));
  p.winograd_convs[0].node = "conv3x3";
  p.winograd_convs[0].tile = 3;
  write_plan_file(p, plan);
  CHECK_THROWS_WITH(CompiledModel::load(m.path, plan), Catch::Contains("of tile 3"));
}

TEST_CASE("a plan whose Winograd kernel gave way loads where oneDNN has no Winograd kernel, on the direct one",
          "[winograd][run-cli]") {
  TempDir dir("winograd");
  const ConvModel m = conv_model(dir, Peak::ElsewhereUnshared, true);
  const auto compiled = CompiledModel::compile(m.path, prefer("balanced"));
  // Made here: on AVX-512 the plan records the convolution and its swap to the direct kernel.
  if (has_winograd_kernels())
    REQUIRE(compiled->report_text().find("winograd: 0 of 1 convolutions chosen") != std::string::npos);
  const std::string plan = dir / "views.mplan";
  compiled->save_plan(plan);
  const std::vector<int64_t> x_dims{1, C, H, H}, v_dims{1, 8};
  const std::vector<float> v(8, 0.5f);
  io::write_npy(dir / "x.npy", DType::Float32, x_dims, m.x.data(), m.x.size() * 4);
  io::write_npy(dir / "v.npy", DType::Float32, v_dims, v.data(), v.size() * 4);
  // Loaded as an AVX2 CPU would (oneDNN reads the cap once per process: a child process).
  REQUIRE(setenv("DNNL_MAX_CPU_ISA", "AVX2", 1) == 0);
  const Run r = run_cli({"run", m.path, "--plan", plan, "--input", "x=" + dir / "x.npy", "--input", "v=" + dir / "v.npy",
                         "--output-dir", dir.path.string(), "--check-memory"});
  unsetenv("DNNL_MAX_CPU_ISA");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("1 run the direct kernel") != std::string::npos);
  const io::NpyArray y = io::read_npy(dir / "y.npy");
  const float* p = reinterpret_cast<const float*>(y.data.data());
  require_close(std::vector<float>(p, p + y.data.size() / 4), expected_y(m), abs_rel(1e-4, 1e-4));
}
