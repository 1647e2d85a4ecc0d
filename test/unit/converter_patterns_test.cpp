// What converters write out, as memplan takes it: hard-swish written as four ops becomes one
// HardSwish, and the elementwise ops with constants after a Conv become a chain of post-ops (a
// chain oneDNN 2.6 computes right: no eltwise algorithm twice). Each checked on a tiny graph for
// its structure, and through the public API against a plain reference for its numbers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "ir/fused_activation.h"
#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "support/model_builder.h"
#include "support/naive_conv.h"
#include "support/numeric.h"

using namespace memplan;
using namespace memplan::test;

namespace {

constexpr int64_t C = 8, H = 6;

std::string save(const ModelBuilder& mb, const std::string& name) {
  const std::string path = (std::filesystem::temp_directory_path() / ("memplan_patterns_" + name + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  return path;
}

void add_scalar(onnx::GraphProto& g, const std::string& name, float v, std::vector<int64_t> dims = {}) {
  add_initializer(g, tensor_f32(name, std::move(dims), {v}));
}

std::vector<float> run_model(const std::string& path, const std::vector<float>& x, const std::vector<int64_t>& dims) {
  auto model = CompiledModel::compile(path, {});
  Session s(model, SessionOptions{true});
  s.set_input("x", kFloat32, dims, x.data(), x.size() * 4);
  s.run();
  const TensorRef y = s.output("y");
  const float* p = static_cast<const float*>(y.data);
  return {p, p + y.bytes / 4};
}

float hard_swish(float v) { return v * std::clamp(v + 3.f, 0.f, 6.f) / 6.f; }

// y = hard-swish(x) written out in one of the forms converters emit.
ModelBuilder written_out_hard_swish(const std::string& form) {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, C, H, H});
  add_scalar(g, "three", 3.f);
  add_scalar(g, "zero", 0.f);
  add_scalar(g, "six", 6.f, {1});
  add_scalar(g, "sixth", 1.f / 6.f, {1, 1, 1, 1});
  if (form == "HardSigmoid") {
    attr_float(add_node(g, "HardSigmoid", {"x"}, {"h"}, "hsig"), "alpha", 1.f / 6.f);
    add_node(g, "Mul", {"h", "x"}, {"y"}, "mul");
  } else {
    add_node(g, "Add", {"three", "x"}, {"a"}, "add");
    add_node(g, "Clip", {"a", "zero", "six"}, {"c"}, "clip");
    if (form == "divide last") {
      add_node(g, "Mul", {"x", "c"}, {"m"}, "mul");
      add_node(g, "Div", {"m", "six"}, {"y"}, "div");
    } else if (form == "divide first") {
      add_node(g, "Div", {"c", "six"}, {"d"}, "div");
      add_node(g, "Mul", {"d", "x"}, {"y"}, "mul");
    } else {  // times a sixth
      add_node(g, "Mul", {"c", "x"}, {"m"}, "mul");
      add_node(g, "Mul", {"sixth", "m"}, {"y"}, "mul6");
    }
  }
  add_output(g, "y", elem::kFloat, {1, C, H, H});
  return mb;
}

}  // namespace

TEST_CASE("hard-swish written out in any of the converters' forms becomes one HardSwish node with its numbers",
          "[passes][patterns]") {
  const std::vector<float> x = random_floats(C * H * H, 3, -5.f, 5.f);
  for (const std::string form : {"divide last", "divide first", "times a sixth", "HardSigmoid"}) {
    INFO(form);
    const std::string path = save(written_out_hard_swish(form), "hswish");
    const Model ir = prepare_model(path, {});
    REQUIRE(ir.main->nodes.size() == 1);
    CHECK(ir.main->nodes[0]->op_type == "HardSwish");
    CHECK(ir.main->find_local("three") == nullptr);  // the constants go with the nodes
    const std::vector<float> y = run_model(path, x, {1, C, H, H});
    std::vector<float> want(x.size());
    std::transform(x.begin(), x.end(), want.begin(), hard_swish);
    require_close(y, want, abs_rel(1e-6, 1e-6));
  }
}

TEST_CASE("a written-out hard-swish whose parts are read elsewhere, or whose constants differ, is left as it is",
          "[passes][patterns]") {
  SECTION("the clipped value is also a graph output") {
    ModelBuilder mb = written_out_hard_swish("divide last");
    add_output(mb.graph(), "c", elem::kFloat, {1, C, H, H});
    const Model ir = prepare_model(save(mb, "hswish_read"), {});
    CHECK(ir.main->nodes.size() == 4);
  }
  SECTION("Clip to 0..5, not 0..6") {
    ModelBuilder mb = written_out_hard_swish("divide last");
    for (auto& t : *mb.graph().mutable_initializer())
      if (t.name() == "six") t = tensor_f32("six", {1}, {5.f});
    const Model ir = prepare_model(save(mb, "hswish_five"), {});
    CHECK(ir.main->nodes.size() == 4);
  }
}

namespace {

// y = GELU(x) as torch writes it below opset 20, with the 0.5 in one of the groupings exporters
// use, and the division by sqrt(2) or the product by its reciprocal.
ModelBuilder written_out_gelu(const std::string& grouping, bool reciprocal, float half = 0.5f) {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {2, 7, 24});
  add_scalar(g, "root2", reciprocal ? 0.70710678f : 1.4142135f);
  add_scalar(g, "one", 1.f);
  add_scalar(g, "half", half);
  add_node(g, reciprocal ? "Mul" : "Div", {"x", "root2"}, {"scaled"}, "scale");
  add_node(g, "Erf", {"scaled"}, {"e"}, "erf");
  add_node(g, "Add", {"e", "one"}, {"s"}, "plus_one");
  if (grouping == "(x * s) * 0.5") {
    add_node(g, "Mul", {"x", "s"}, {"p"}, "times_x");
    add_node(g, "Mul", {"p", "half"}, {"y"}, "halve");
  } else if (grouping == "(s * 0.5) * x") {
    add_node(g, "Mul", {"half", "s"}, {"p"}, "halve");
    add_node(g, "Mul", {"x", "p"}, {"y"}, "times_x");
  } else {  // (x * 0.5) * s
    add_node(g, "Mul", {"x", "half"}, {"p"}, "halve");
    add_node(g, "Mul", {"s", "p"}, {"y"}, "times_s");
  }
  add_output(g, "y", elem::kFloat, {2, 7, 24});
  return mb;
}

}  // namespace

TEST_CASE("GELU written out as torch exports it, in any grouping, becomes one Gelu node with its numbers",
          "[passes][patterns]") {
  const std::vector<float> x = random_floats(2 * 7 * 24, 9, -4.f, 4.f);
  std::vector<float> want(x.size());
  std::transform(x.begin(), x.end(), want.begin(),
                 [](float v) { return static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))); });
  for (const std::string grouping : {"(x * s) * 0.5", "(s * 0.5) * x", "(x * 0.5) * s"})
    for (const bool reciprocal : {false, true}) {
      INFO(grouping << (reciprocal ? ", times 1 / sqrt(2)" : ", divided by sqrt(2)"));
      const std::string path = save(written_out_gelu(grouping, reciprocal), "gelu");
      const Model ir = prepare_model(path, {});
      REQUIRE(ir.main->nodes.size() == 1);
      CHECK(ir.main->nodes[0]->op_type == "Gelu");
      require_close(run_model(path, x, {2, 7, 24}), want, abs_rel(1e-5, 1e-5));
    }
  SECTION("a half that is not 0.5 is left as it is") {
    const Model ir = prepare_model(save(written_out_gelu("(x * s) * 0.5", false, 0.49f), "gelu_not"), {});
    CHECK(ir.main->nodes.size() == 5);
  }
  SECTION("the Erf also read elsewhere is left as it is") {
    ModelBuilder mb = written_out_gelu("(x * s) * 0.5", false);
    add_output(mb.graph(), "e", elem::kFloat, {2, 7, 24});
    CHECK(prepare_model(save(mb, "gelu_read"), {}).main->nodes.size() == 5);
  }
}

TEST_CASE("a Linear layer's MatMul takes its bias Add and the activation after it, with the unfused numbers",
          "[passes][patterns]") {
  // x[2, 5, 16] x W[16, 12] + b[12] -> Relu: torch's nn.Linear on 3-D input, then its activation.
  constexpr int64_t K = 16, N = 12, R = 10;
  const std::vector<float> x = random_floats(R * K, 11), w = random_floats(K * N, 12), b = random_floats(N, 13);
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {2, 5, K});
  add_initializer(g, tensor_f32("w", {K, N}, w));
  add_initializer(g, tensor_f32("b", {N}, b));
  add_node(g, "MatMul", {"x", "w"}, {"m"}, "linear");
  add_node(g, "Add", {"b", "m"}, {"a"}, "bias");
  add_node(g, "Relu", {"a"}, {"y"}, "act");
  add_output(g, "y", elem::kFloat, {2, 5, N});
  const std::string path = save(mb, "linear");
  const Model ir = prepare_model(path, {});
  REQUIRE(ir.main->nodes.size() == 1);
  CHECK(ir.main->nodes[0]->op_type == "MatMul");
  CHECK(ir.main->nodes[0]->inputs.size() == 3);
  CHECK(has_fused_activation(*ir.main->nodes[0]));
  std::vector<float> want(static_cast<size_t>(R * N));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t n = 0; n < N; ++n) {
      double sum = b[static_cast<size_t>(n)];
      for (int64_t k = 0; k < K; ++k) sum += double(x[static_cast<size_t>(r * K + k)]) * w[static_cast<size_t>(k * N + n)];
      want[static_cast<size_t>(r * N + n)] = std::max(static_cast<float>(sum), 0.f);
    }
  require_close(run_model(path, x, {2, 5, K}), want, abs_rel(1e-5, 1e-5));
}

TEST_CASE("a Linear layer's MatMul takes the GELU after its bias, erf or tanh form, as one oneDNN matmul with the "
          "unfused numbers", "[passes][patterns]") {
  constexpr int64_t K = 24, N = 40, R = 14;
  const bool tanh_form = GENERATE(false, true);
  INFO((tanh_form ? "tanh" : "erf") << " form");
  const std::vector<float> x = random_floats(R * K, 14), w = random_floats(K * N, 15), b = random_floats(N, 16);
  ModelBuilder mb("linear_gelu", 20);  // Gelu is an opset-20 op
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {2, 7, K});
  add_initializer(g, tensor_f32("w", {K, N}, w));
  add_initializer(g, tensor_f32("b", {N}, b));
  add_node(g, "MatMul", {"x", "w"}, {"m"}, "linear");
  add_node(g, "Add", {"m", "b"}, {"a"}, "bias");
  auto* gelu = add_node(g, "Gelu", {"a"}, {"y"}, "act");
  if (tanh_form) add_attr(gelu, "approximate", onnx::AttributeProto::STRING)->set_s("tanh");
  add_output(g, "y", elem::kFloat, {2, 7, N});
  const std::string path = save(mb, tanh_form ? "linear_gelu_tanh" : "linear_gelu");
  const Model ir = prepare_model(path, {});
  REQUIRE(ir.main->nodes.size() == 1);
  CHECK(ir.main->nodes[0]->op_type == "MatMul");
  const std::optional<std::vector<EltwiseStep>> steps = fused_steps(*ir.main->nodes[0]);
  REQUIRE(steps);
  CHECK(*steps == std::vector<EltwiseStep>{{tanh_form ? EltwiseStep::Kind::GeluTanh : EltwiseStep::Kind::GeluErf, 0.f, 0.f}});
  auto model = CompiledModel::compile(path, {});
  CHECK_THAT(model->kernels()[0].implementation, !Catch::Contains("ref"));
  std::vector<float> want(static_cast<size_t>(R * N));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t n = 0; n < N; ++n) {
      double v = b[static_cast<size_t>(n)];
      for (int64_t k = 0; k < K; ++k) v += double(x[static_cast<size_t>(r * K + k)]) * w[static_cast<size_t>(k * N + n)];
      const double phi = tanh_form ? 0.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)))
                                   : 0.5 * (1 + std::erf(v / std::sqrt(2.0)));
      want[static_cast<size_t>(r * N + n)] = static_cast<float>(v * phi);
    }
  require_close(run_model(path, x, {2, 7, K}), want, abs_rel(1e-5, 1e-4));
}

TEST_CASE("a MatMul of a few rows by large weights takes the bias but leaves the activation, and reads the weights "
          "in place", "[passes][patterns]") {
  // One row by 1 MiB of weights: linalg/weights_gemv.h, which adds a bias but applies no activation.
  constexpr int64_t K = 512, N = 512;
  const std::vector<float> x = random_floats(K, 21), w = random_floats(K * N, 22), b = random_floats(N, 23);
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, K});
  add_initializer(g, tensor_f32("w", {K, N}, w));
  add_initializer(g, tensor_f32("b", {N}, b));
  add_node(g, "MatMul", {"x", "w"}, {"m"}, "linear");
  add_node(g, "Add", {"m", "b"}, {"a"}, "bias");
  add_node(g, "Relu", {"a"}, {"y"}, "act");
  add_output(g, "y", elem::kFloat, {1, N});
  const std::string path = save(mb, "linear_one_row");
  const Model ir = prepare_model(path, {});
  REQUIRE(ir.main->nodes.size() == 2);
  CHECK(ir.main->nodes[0]->inputs.size() == 3);
  auto model = CompiledModel::compile(path, {});
  CHECK_THAT(model->kernels()[0].implementation, Catch::Contains("weights-in-place"));
  std::vector<float> want(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    double sum = b[static_cast<size_t>(n)];
    for (int64_t k = 0; k < K; ++k) sum += double(x[static_cast<size_t>(k)]) * w[static_cast<size_t>(k * N + n)];
    want[static_cast<size_t>(n)] = std::max(static_cast<float>(sum), 0.f);
  }
  require_close(run_model(path, x, {1, K}), want, abs_rel(1e-4, 1e-4));
}

TEST_CASE("an Add that broadcasts along two separate runs of axes (Swin's window mask) runs memplan's loops, not "
          "oneDNN's reference kernel", "[passes][patterns]") {
  // [1, 4, 3, 7, 7] + [1, 4, 1, 7, 7]: oneDNN 2.6 has only ref:any for it (45 ms in Swin-T).
  const std::vector<float> x = random_floats(4 * 3 * 49, 31), mask = random_floats(4 * 49, 32);
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 4, 3, 7, 7});
  add_initializer(g, tensor_f32("mask", {1, 4, 1, 7, 7}, mask));
  add_node(g, "Add", {"x", "mask"}, {"y"}, "masked");
  add_output(g, "y", elem::kFloat, {1, 4, 3, 7, 7});
  const std::string path = save(mb, "window_mask");
  auto model = CompiledModel::compile(path, {});
  REQUIRE(model->kernels().size() == 1);
  INFO(model->kernels()[0].implementation);
  CHECK_FALSE(model->kernels()[0].reference);
  std::vector<float> want(x.size());
  for (size_t w = 0; w < 4; ++w)
    for (size_t h = 0; h < 3; ++h)
      for (size_t i = 0; i < 49; ++i) want[(w * 3 + h) * 49 + i] = x[(w * 3 + h) * 49 + i] + mask[w * 49 + i];
  require_close(run_model(path, x, {1, 4, 3, 7, 7}), want, abs_rel(1e-6, 1e-6));
}

namespace {

// x[1,3,H,H] -> Conv (C channels, pads 1) -> ops... -> y: each op a (type, constant) pair, the
// constant omitted (NaN) for a unary op.
struct Op {
  std::string type;
  float constant = std::numeric_limits<float>::quiet_NaN();
  std::function<float(float)> f;
};

std::string conv_then(const std::vector<Op>& ops, const std::vector<float>& w, const std::vector<float>& b) {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 3, H, H});
  add_initializer(g, tensor_f32("w", {C, 3, 3, 3}, w));
  add_initializer(g, tensor_f32("b", {C}, b));
  attr_ints(add_node(g, "Conv", {"x", "w", "b"}, {"t0"}, "conv"), "pads", {1, 1, 1, 1});
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string in = "t" + std::to_string(i), out = i + 1 == ops.size() ? "y" : "t" + std::to_string(i + 1);
    const std::string k = "k" + std::to_string(i);
    if (std::isnan(ops[i].constant)) {
      add_node(g, ops[i].type, {in}, {out}, ops[i].type + std::to_string(i));
    } else {
      add_scalar(g, k, ops[i].constant, {1, 1, 1, 1});
      add_node(g, ops[i].type, {in, k}, {out}, ops[i].type + std::to_string(i));
    }
  }
  add_output(g, "y", elem::kFloat, {1, C, H, H});
  return save(mb, "chain");
}

}  // namespace

TEST_CASE("elementwise ops with constants after a Conv become its post-ops, never one oneDNN algorithm twice, "
          "with the unfused numbers",
          "[passes][patterns]") {
  const std::vector<float> x = random_floats(3 * H * H, 1), w = random_floats(C * 27, 2), b = random_floats(C, 4);
  std::vector<float> conv = naive_conv2d(x, {1, 3, H, H}, w, {C, 3, 3, 3}, b, Conv2d{1, {1, 1}, {1, 1}, {1, 1, 1, 1}}, H, H);
  const Op leaky{"LeakyRelu", std::numeric_limits<float>::quiet_NaN(), [](float v) { return v < 0 ? 0.01f * v : v; }};
  const Op relu{"Relu", std::numeric_limits<float>::quiet_NaN(), [](float v) { return std::max(v, 0.f); }};
  const auto mul = [](float c) { return Op{"Mul", c, [c](float v) { return v * c; }}; };
  const auto add = [](float c) { return Op{"Add", c, [c](float v) { return v + c; }}; };
  const auto div = [](float c) { return Op{"Div", c, [c](float v) { return v / c; }}; };
  const auto max = [](float c) { return Op{"Max", c, [c](float v) { return std::max(v, c); }}; };
  const auto min = [](float c) { return Op{"Min", c, [c](float v) { return std::min(v, c); }}; };
  const auto clip_min = [](float c) { return Op{"Clip", c, [c](float v) { return std::max(v, c); }}; };  // no max input
  struct Case {
    const char* name;
    std::vector<Op> ops;
    size_t nodes;  // after the fusions
  };
  const std::vector<Case> cases = {
      {"LeakyRelu then Max, TensorFlow's", {leaky, max(-0.3f)}, 1},
      {"Mul then Add, Paddle's scale: two Linear steps merge", {mul(0.75f), add(0.1f)}, 1},
      {"Max then Min: two Clip steps merge", {max(-0.2f), min(0.4f)}, 1},
      {"Div then Mul then Add", {div(3.f), mul(2.f), add(-0.5f)}, 1},
      {"Clip with its min alone, then Div by 0, which stays a node", {clip_min(-0.2f), div(0.f)}, 2},
      {"Mul, Relu, Mul: the second Linear cannot follow the Relu", {mul(0.75f), relu, mul(2.f)}, 2},
      {"Max, Relu, Min: nor the second Clip", {max(-0.3f), relu, min(0.4f)}, 2},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string path = conv_then(c.ops, w, b);
    const Model ir = prepare_model(path, {});
    CHECK(ir.main->nodes.size() == c.nodes);
    std::vector<float> want = conv;
    for (const Op& op : c.ops)
      for (float& v : want) v = op.f(v);
    require_close(run_model(path, x, {1, 3, H, H}), want, abs_rel(1e-5, 1e-5));
  }
}

TEST_CASE("fused eltwise steps merge Linear into Linear and Clip into Clip, and refuse a second step of a kind",
          "[passes][patterns]") {
  using K = EltwiseStep::Kind;
  constexpr float inf = std::numeric_limits<float>::infinity();
  std::vector<EltwiseStep> s;
  REQUIRE(add_fused_step(s, {K::Linear, 2.f, 1.f}));
  REQUIRE(add_fused_step(s, {K::Linear, 3.f, -1.f}));  // 3 (2x + 1) - 1
  CHECK(s == std::vector<EltwiseStep>{{K::Linear, 6.f, 2.f}});
  REQUIRE(add_fused_step(s, {K::Clip, -1.f, inf}));
  REQUIRE(add_fused_step(s, {K::Clip, 2.f, 5.f}));  // clip(clip(v, -1, inf), 2, 5)
  CHECK(s.back() == EltwiseStep{K::Clip, 2.f, 5.f});
  REQUIRE(add_fused_step(s, {K::Relu, 0.1f, 0.f}));
  CHECK_FALSE(add_fused_step(s, {K::Linear, 1.f, 1.f}));  // a Linear is already there
  CHECK_FALSE(add_fused_step(s, {K::Clip, 0.f, 1.f}));
  CHECK(s.size() == 3);
  REQUIRE(add_fused_step(s, {K::Relu, 0.5f, 0.f}));  // leaky(leaky(v, 0.1), 0.5) = leaky(v, 0.05)
  CHECK(s.back().alpha == Approx(0.05f));
  // Disjoint clips: everything ends at the second one's bound.
  std::vector<EltwiseStep> d{{K::Clip, 0.f, 1.f}};
  REQUIRE(add_fused_step(d, {K::Clip, 2.f, 3.f}));
  CHECK(d.back() == EltwiseStep{K::Clip, 2.f, 2.f});
}

TEST_CASE("a GEMM convolution applies its fused chain after the primitive, to the unfused numbers",
          "[passes][patterns]") {
  // A 1x1 Conv of 24 plain channels into a graph output runs on oneDNN's GEMM convolution, which
  // applies eltwise post-ops in a slow loop: the kernel applies the chain itself.
  constexpr int64_t c = 24, h = 16;
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, c, h, h});
  const std::vector<float> w = random_floats(c * c, 5), x = random_floats(c * h * h, 6);
  add_initializer(g, tensor_f32("w", {c, c, 1, 1}, w));
  add_node(g, "Conv", {"x", "w"}, {"t"}, "conv");
  add_scalar(g, "k", 0.75f);
  add_node(g, "Mul", {"t", "k"}, {"m"}, "scale");
  add_scalar(g, "b", -0.1f);
  add_node(g, "Add", {"m", "b"}, {"a"}, "shift");
  attr_float(add_node(g, "LeakyRelu", {"a"}, {"y"}, "act"), "alpha", 0.2f);
  add_output(g, "y", elem::kFloat, {1, c, h, h});
  const std::string path = save(mb, "gemm_chain");
  auto model = CompiledModel::compile(path, {});
  REQUIRE(model->kernels().size() == 1);
  INFO(model->kernels()[0].implementation);
  if (model->kernels()[0].implementation.find("gemm") != std::string::npos)
    CHECK_THAT(model->kernels()[0].implementation, Catch::EndsWith(", then memplan's activation loop"));
  std::vector<float> want = naive_conv2d(x, {1, c, h, h}, w, {c, c, 1, 1}, {}, Conv2d{}, h, h);
  for (float& v : want) {
    v = v * 0.75f - 0.1f;
    v = v < 0 ? 0.2f * v : v;
  }
  require_close(run_model(path, x, {1, c, h, h}), want, abs_rel(1e-5, 1e-5));
}
