// Conv fusions: BatchNormalization folded into the weights, Relu/Clip taken as a post-op; the
// fused model gives the unfused answer.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "runtime/compiled_model_impl.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

namespace {

struct ConvBnAct {
  std::vector<float> x, w, b, scale, beta, mean, var;
  static constexpr int C = 2, O = 3, H = 5, K = 3;
  ConvBnAct() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    auto fill = [&](std::vector<float>& v, size_t n) {
      v.resize(n);
      for (float& f : v) f = d(rng);
    };
    fill(x, C * H * H);
    fill(w, O * C * K * K);
    fill(b, O);
    fill(scale, O);
    fill(beta, O);
    fill(mean, O);
    fill(var, O);
    for (float& v : var) v = std::abs(v) + 0.1f;
  }
  // act: "Relu" or "Clip" (to [-0.5, 0.5]); `bn_out` names the BatchNormalization's output.
  std::string write(const std::string& act, const std::string& bn_out = "n") const {
    ModelBuilder m;
    auto& g = m.graph();
    add_input(g, "x", elem::kFloat, {1, C, H, H});
    add_initializer(g, tensor_f32("w", {O, C, K, K}, w));
    add_initializer(g, tensor_f32("b", {O}, b));
    add_initializer(g, tensor_f32("scale", {O}, scale));
    add_initializer(g, tensor_f32("beta", {O}, beta));
    add_initializer(g, tensor_f32("mean", {O}, mean));
    add_initializer(g, tensor_f32("var", {O}, var));
    attr_ints(add_node(g, "Conv", {"x", "w", "b"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
    add_node(g, "BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {bn_out}, "bn");
    if (act == "Clip") {
      add_initializer(g, tensor_f32("lo", {}, {-0.5f}));
      add_initializer(g, tensor_f32("hi", {}, {0.5f}));
      add_node(g, "Clip", {bn_out, "lo", "hi"}, {"y"}, "act");
    } else {
      add_node(g, act, {bn_out}, {"y"}, "act");
    }
    add_output(g, "y", elem::kFloat, {1, O, H, H});
    const std::string path = (std::filesystem::temp_directory_path() / ("fuse_" + act + bn_out + ".onnx")).string();
    std::ofstream(path, std::ios::binary) << m.bytes();
    return path;
  }
  // The model at `path` (input x [1, C, H, H], output y [1, O, H, H]) run on x.
  std::vector<float> run(const std::string& path) const {
    auto model = CompiledModel::compile(path, {});
    Session s(model);
    s.set_input("x", kFloat32, std::vector<int64_t>{1, C, H, H}, x.data(), x.size() * 4);
    s.run();
    const float* y = static_cast<const float*>(s.output("y").data);
    return {y, y + O * H * H};
  }
  float expected(int o, int i, int j, const std::string& act) const {
    float s = b[o];
    for (int c = 0; c < C; ++c)
      for (int ki = 0; ki < K; ++ki)
        for (int kj = 0; kj < K; ++kj) {
          const int y = i + ki - 1, z = j + kj - 1;
          if (y < 0 || z < 0 || y >= H || z >= H) continue;
          s += x[(c * H + y) * H + z] * w[((o * C + c) * K + ki) * K + kj];
        }
    s = (s - mean[o]) / std::sqrt(var[o] + 1e-5f) * scale[o] + beta[o];
    return act == "Relu" ? std::max(s, 0.f) : std::clamp(s, -0.5f, 0.5f);
  }
};

bool close(float got, float want) { return std::abs(got - want) <= 1e-4f + 1e-3f * std::abs(want); }

}  // namespace

TEST_CASE("Conv + BatchNormalization + Relu/Clip become one Conv with the same answer", "[passes][fusion]") {
  ConvBnAct m;
  for (const std::string act : {"Relu", "Clip"}) {
    INFO(act);
    const std::string path = m.write(act);
    Model ir = prepare_model(path, {});
    REQUIRE(ir.main->nodes.size() == 1);
    const Node& conv = *ir.main->nodes[0];
    CHECK(conv.op_type == "Conv");
    CHECK(conv.attr_int("memplan_fused_activation", 0) == (act == "Relu" ? 1 : 2));
    CHECK(ir.main->find_local("w") == nullptr);  // the replaced weights are dropped

    const std::vector<float> y = m.run(path);
    for (int o = 0; o < m.O; ++o)
      for (int i = 0; i < m.H; ++i)
        for (int j = 0; j < m.H; ++j) REQUIRE(close(y[(o * m.H + i) * m.H + j], m.expected(o, i, j, act)));
  }
}

TEST_CASE("an Add of a per-channel constant after a Conv becomes its bias, but not after its activation",
          "[passes][fusion]") {
  ConvBnAct m;  // its x and w; `b` as the Add's constant
  for (const bool after_relu : {false, true}) {
    INFO((after_relu ? "Conv -> Relu -> Add" : "Conv -> Add -> Relu"));
    ModelBuilder mb;
    auto& g = mb.graph();
    add_input(g, "x", elem::kFloat, {1, m.C, m.H, m.H});
    add_initializer(g, tensor_f32("w", {m.O, m.C, m.K, m.K}, m.w));
    add_initializer(g, tensor_f32("shift", {1, m.O, 1, 1}, m.b));  // Paddle2ONNX's bias, written apart
    attr_ints(add_node(g, "Conv", {"x", "w"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
    add_node(g, after_relu ? "Relu" : "Add", after_relu ? std::vector<std::string>{"c"} : std::vector<std::string>{"c", "shift"},
             {"t"}, "first");
    add_node(g, after_relu ? "Add" : "Relu", after_relu ? std::vector<std::string>{"t", "shift"} : std::vector<std::string>{"t"},
             {"y"}, "second");
    add_output(g, "y", elem::kFloat, {1, m.O, m.H, m.H});
    const std::string path = (std::filesystem::temp_directory_path() / "fuse_bias_add.onnx").string();
    std::ofstream(path, std::ios::binary) << mb.bytes();
    Model ir = prepare_model(path, {});
    CHECK(ir.main->nodes.size() == (after_relu ? 2u : 1u));

    const std::vector<float> y = m.run(path);
    for (int o = 0; o < m.O; ++o)
      for (int i = 0; i < m.H; ++i)
        for (int j = 0; j < m.H; ++j) {
          float conv = 0;
          for (int c = 0; c < m.C; ++c)
            for (int ki = 0; ki < m.K; ++ki)
              for (int kj = 0; kj < m.K; ++kj) {
                const int r = i + ki - 1, q = j + kj - 1;
                if (r >= 0 && q >= 0 && r < m.H && q < m.H)
                  conv += m.x[(c * m.H + r) * m.H + q] * m.w[((o * m.C + c) * m.K + ki) * m.K + kj];
              }
          const float want = after_relu ? std::max(conv, 0.f) + m.b[o] : std::max(conv + m.b[o], 0.f);
          REQUIRE(close(y[(o * m.H + i) * m.H + j], want));
        }
  }
}

TEST_CASE("a folded constant takes a fresh name where the model already uses the one it would take", "[passes][fusion]") {
  // The folded weights would be "conv_bn_folded_W", the name the model gives the BatchNormalization's output.
  ConvBnAct m;
  const std::string path = m.write("Relu", "conv_bn_folded_W");
  Model ir = prepare_model(path, {});
  REQUIRE(ir.main->nodes.size() == 1);
  CHECK(ir.main->nodes[0]->inputs[1]->name == "conv_bn_folded_W_1");
  auto model = CompiledModel::compile(path, {});
  Session s(model);
  s.set_input("x", kFloat32, std::vector<int64_t>{1, m.C, m.H, m.H}, m.x.data(), m.x.size() * 4);
  s.run();
  const float* y = static_cast<const float*>(s.output("y").data);
  const float want = m.expected(1, 2, 3, "Relu");
  CHECK(std::abs(y[(1 * m.H + 2) * m.H + 3] - want) <= 1e-4f + 1e-3f * std::abs(want));
}

TEST_CASE("a Conv whose output is also read elsewhere is not fused", "[passes][fusion]") {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 1, 3, 3});
  add_initializer(g, tensor_f32("w", {1, 1, 1, 1}, {2.f}));
  add_node(g, "Conv", {"x", "w"}, {"c"}, "conv");
  add_node(g, "Relu", {"c"}, {"r"}, "relu");
  add_node(g, "Add", {"c", "r"}, {"y"}, "add");
  add_output(g, "y", elem::kFloat, {1, 1, 3, 3});
  Model ir = mb.import();
  prepare_model(ir, {});
  CHECK(ir.main->nodes.size() == 3);
}

TEST_CASE("Conv -> Add (or Sum) -> Relu (the ResNet shortcut) becomes one Conv with the same answer", "[passes][fusion]") {
  const std::string op = GENERATE("Add", "Sum");
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 2, 3, 3});
  add_input(g, "skip", elem::kFloat, {1, 2, 3, 3});
  add_initializer(g, tensor_f32("w", {2, 2, 1, 1}, {1.f, -1.f, 0.5f, 2.f}));
  add_node(g, "Conv", {"x", "w"}, {"c"}, "conv");
  add_node(g, op, {"skip", "c"}, {"s"}, "add");
  add_node(g, "Relu", {"s"}, {"y"}, "relu");
  add_output(g, "y", elem::kFloat, {1, 2, 3, 3});
  const std::string path = (std::filesystem::temp_directory_path() / ("fuse_" + op + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  Model ir = prepare_model(path, {});
  REQUIRE(ir.main->nodes.size() == 1);
  CHECK(ir.main->nodes[0]->inputs.size() == 4);

  std::vector<float> x(18), skip(18);
  for (int i = 0; i < 18; ++i) {
    x[i] = static_cast<float>(i % 5) - 2.f;
    skip[i] = static_cast<float>(i % 3) - 1.f;
  }
  auto model = CompiledModel::compile(path, {});
  Session s(model);
  const std::vector<int64_t> shape{1, 2, 3, 3};
  s.set_input("x", kFloat32, shape, x.data(), 72);
  s.set_input("skip", kFloat32, shape, skip.data(), 72);
  s.run();
  const float* y = static_cast<const float*>(s.output("y").data);
  const float w[2][2] = {{1.f, -1.f}, {0.5f, 2.f}};
  for (int o = 0; o < 2; ++o)
    for (int p = 0; p < 9; ++p) {
      const float conv = w[o][0] * x[p] + w[o][1] * x[9 + p];
      CHECK(y[o * 9 + p] == Approx(std::max(conv + skip[o * 9 + p], 0.f)).margin(1e-6));
    }
}

TEST_CASE("an Add of two Convs is fused into the later Conv, never one that runs before its addend", "[passes][fusion]") {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 1, 2, 2});
  add_initializer(g, tensor_f32("w1", {1, 1, 1, 1}, {2.f}));
  add_initializer(g, tensor_f32("w2", {1, 1, 1, 1}, {3.f}));
  add_node(g, "Conv", {"x", "w1"}, {"c1"}, "conv1");
  add_node(g, "Conv", {"x", "w2"}, {"c2"}, "conv2");
  add_node(g, "Add", {"c1", "c2"}, {"y"}, "add");
  add_output(g, "y", elem::kFloat, {1, 1, 2, 2});
  Model ir = mb.import();
  prepare_model(ir, {});
  REQUIRE(ir.main->nodes.size() == 2);
  CHECK(ir.main->nodes[0]->inputs.size() == 2);                // conv1 unchanged
  CHECK(ir.main->nodes[1]->inputs.size() == 4);                // conv2 adds c1
  CHECK(ir.main->nodes[1]->inputs[3]->name == "c1");
}

TEST_CASE("BatchNormalization -> Mul -> Add with per-channel constants becomes one BatchNormalization", "[passes][fusion]") {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 2, 2, 2});
  add_initializer(g, tensor_f32("scale", {2}, {2.f, 0.5f}));
  add_initializer(g, tensor_f32("beta", {2}, {1.f, -1.f}));
  add_initializer(g, tensor_f32("mean", {2}, {0.5f, 0.f}));
  add_initializer(g, tensor_f32("var", {2}, {4.f, 1.f}));
  add_initializer(g, tensor_f32("m", {2, 1, 1}, {3.f, -2.f}));
  add_initializer(g, tensor_f32("a", {1, 2, 1, 1}, {0.25f, 4.f}));
  attr_float(add_node(g, "BatchNormalization", {"x", "scale", "beta", "mean", "var"}, {"n"}, "bn"), "epsilon", 0.f);
  add_node(g, "Mul", {"n", "m"}, {"s"}, "mul");
  add_node(g, "Add", {"a", "s"}, {"y"}, "add");
  add_output(g, "y", elem::kFloat, {1, 2, 2, 2});
  const std::string path = (std::filesystem::temp_directory_path() / "fold_scale_shift.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  Model ir = prepare_model(path, {});
  REQUIRE(ir.main->nodes.size() == 1);
  CHECK(ir.main->nodes[0]->op_type == "BatchNormalization");

  const std::vector<float> x = {1.f, 2.f, 3.f, 4.f, -1.f, -2.f, 0.f, 5.f};
  auto model = CompiledModel::compile(path, {});
  Session s(model);
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 2, 2, 2}, x.data(), 32);
  s.run();
  const float* y = static_cast<const float*>(s.output("y").data);
  const float scale[2] = {2.f, 0.5f}, beta[2] = {1.f, -1.f}, mean[2] = {0.5f, 0.f}, var[2] = {4.f, 1.f},
              m[2] = {3.f, -2.f}, a[2] = {0.25f, 4.f};
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 4; ++i) {
      const float n = (x[c * 4 + i] - mean[c]) / std::sqrt(var[c]) * scale[c] + beta[c];
      CHECK(y[c * 4 + i] == Approx(n * m[c] + a[c]).margin(1e-5));
    }
}

TEST_CASE("a BatchNormalization no Conv absorbs takes the following Relu", "[passes][fusion]") {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 2, 1, 2});
  add_initializer(g, tensor_f32("scale", {2}, {2.f, -1.f}));
  add_initializer(g, tensor_f32("beta", {2}, {0.5f, 0.f}));
  add_initializer(g, tensor_f32("mean", {2}, {0.f, 1.f}));
  add_initializer(g, tensor_f32("var", {2}, {1.f, 1.f}));
  attr_float(add_node(g, "BatchNormalization", {"x", "scale", "beta", "mean", "var"}, {"n"}, "bn"), "epsilon", 0.f);
  add_node(g, "Relu", {"n"}, {"y"}, "relu");
  add_output(g, "y", elem::kFloat, {1, 2, 1, 2});
  const std::string path = (std::filesystem::temp_directory_path() / "fuse_bn_relu.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  Model ir = prepare_model(path, {});
  REQUIRE(ir.main->nodes.size() == 1);
  CHECK(ir.main->nodes[0]->attr_int("memplan_fused_activation", 0) == 1);

  auto model = CompiledModel::compile(path, {});
  Session s(model);
  const std::vector<float> x = {1.f, -1.f, 3.f, -2.f};
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 2, 1, 2}, x.data(), 16);
  s.run();
  const float* y = static_cast<const float*>(s.output("y").data);
  // channel 0: 2x + 0.5; channel 1: -(x - 1); then Relu
  CHECK(y[0] == Approx(2.5f));
  CHECK(y[1] == Approx(0.f));
  CHECK(y[2] == Approx(0.f));
  CHECK(y[3] == Approx(3.f));
}

namespace {

// x [1, 32, 12, 12] -> BatchNormalization -> Relu -> 1x1 Conv (24 out) -> y; with `read_after`, x
// is also pooled after the batch norm (as DenseNet's concatenation is read after its norm1). With
// `conv_first`, the batch norm reads an identity 1x1 Conv of x instead, which the layout pass keeps
// channel-blocked while the graph output y stays plain.
struct PreActivated {
  static constexpr int C = 32, M = 24, H = 12;
  std::vector<float> x, w, b, scale, beta, mean, var;
  PreActivated() {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    for (auto [v, n] : {std::pair{&x, C * H * H}, {&w, M * C}, {&b, M}, {&scale, C}, {&beta, C}, {&mean, C}, {&var, C}}) {
      v->resize(static_cast<size_t>(n));
      for (float& f : *v) f = d(rng);
    }
    for (float& v : var) v = std::abs(v) + 0.1f;
  }
  std::string write(bool read_after, bool conv_first = false) const {
    ModelBuilder mb;
    auto& g = mb.graph();
    add_input(g, "x", elem::kFloat, {1, C, H, H});
    std::string in = "x";
    if (conv_first) {
      std::vector<float> eye(static_cast<size_t>(C * C), 0.f);
      for (int c = 0; c < C; ++c) eye[static_cast<size_t>(c * C + c)] = 1.f;
      add_initializer(g, tensor_f32("eye", {C, C, 1, 1}, eye));
      add_node(g, "Conv", {"x", "eye"}, {"xc"}, "identity");
      in = "xc";
    }
    add_initializer(g, tensor_f32("w", {M, C, 1, 1}, w));
    add_initializer(g, tensor_f32("b", {M}, b));
    add_initializer(g, tensor_f32("scale", {C}, scale));
    add_initializer(g, tensor_f32("beta", {C}, beta));
    add_initializer(g, tensor_f32("mean", {C}, mean));
    add_initializer(g, tensor_f32("var", {C}, var));
    add_node(g, "BatchNormalization", {in, "scale", "beta", "mean", "var"}, {"n"}, "bn");
    add_node(g, "Relu", {"n"}, {"r"}, "relu");
    add_node(g, "Conv", {"r", "w", "b"}, {"y"}, "conv");
    add_output(g, "y", elem::kFloat, {1, M, H, H});
    if (read_after) {
      add_node(g, "GlobalAveragePool", {in}, {"p"}, "pool");
      add_output(g, "p", elem::kFloat, {1, C, 1, 1});
    }
    const std::string path =
        (std::filesystem::temp_directory_path() /
         (std::string("fuse_pre_activation_") + (read_after ? "1" : "0") + (conv_first ? "c" : "") + ".onnx"))
            .string();
    std::ofstream(path, std::ios::binary) << mb.bytes();
    return path;
  }
  float expected(int o, int p) const {
    double s = b[static_cast<size_t>(o)];
    for (int c = 0; c < C; ++c) {
      const double n = (x[static_cast<size_t>(c * H * H + p)] - mean[static_cast<size_t>(c)]) /
                           std::sqrt(var[static_cast<size_t>(c)] + 1e-5) * scale[static_cast<size_t>(c)] +
                       beta[static_cast<size_t>(c)];
      s += std::max(n, 0.0) * w[static_cast<size_t>(o * C + c)];
    }
    return static_cast<float>(s);
  }
};

}  // namespace

TEST_CASE("a batch norm and Relu that only a 1x1 Conv reads, whose input is read after them, become the Conv's "
          "pre-activation, whole or a chunk of channels at a time, with the same answer",
          "[passes][fusion]") {
  PreActivated m;
  // conv_first: a channel-blocked input and a plain output.
  const bool conv_first = GENERATE(false, true);
  INFO("conv_first " << conv_first);
  const std::string path = m.write(true, conv_first);
  Model ir = prepare_model(path, {});
  const Node* conv = find_node(*ir.main, "conv");
  REQUIRE(conv != nullptr);
  CHECK(find_node(*ir.main, "bn") == nullptr);
  CHECK(conv->inputs[0]->name == (conv_first ? "xc" : "x"));
  REQUIRE(conv->attr("memplan_pre_scale") != nullptr);
  CHECK(conv->attr("memplan_pre_scale")->floats.size() == static_cast<size_t>(m.C));
  CHECK(conv->attr_int("memplan_pre_relu", 0) == 1);

  for (const std::string prefer : {"speed", "memory"}) {
    INFO(prefer);
    CompileOptions o;
    o.prefer = prefer;
    auto model = CompiledModel::compile(path, o);
    // With memory preferred, the normalized input (the Conv's scratchpad, at the peak when x is
    // the graph input) is made a chunk of channels at a time.
    const auto& leaner = model->impl().plan.graphs[0].leaner_kernels;
    if (!conv_first) CHECK(leaner.empty() == (prefer == "speed"));
    // The model's own weights are released once the kernel holds its reordered copy: the leaner
    // variants, made later, read them back from that copy (they held the model's, and DenseNet's
    // weights were in memory twice).
    const Node* compiled_conv = find_node(*model->impl().model.main, "conv");
    REQUIRE(compiled_conv != nullptr);
    CHECK(compiled_conv->inputs[1]->constant->bytes.empty());
    Session s(model);
    s.set_input("x", kFloat32, std::vector<int64_t>{1, m.C, m.H, m.H}, m.x.data(), m.x.size() * 4);
    s.run();
    const float* y = static_cast<const float*>(s.output("y").data);
    for (int o2 = 0; o2 < m.M; ++o2)
      for (int p = 0; p < m.H * m.H; ++p) {
        const float want = m.expected(o2, p);
        REQUIRE(std::abs(y[o2 * m.H * m.H + p] - want) <= 1e-4f + 1e-4f * std::abs(want));
      }
  }
}

TEST_CASE("a batch norm whose input dies at it stays a batch norm, written in place, not a pre-activation",
          "[passes][fusion]") {
  PreActivated m;
  Model ir = prepare_model(m.write(false), {});
  const Node* conv = find_node(*ir.main, "conv");
  REQUIRE(conv != nullptr);
  CHECK(find_node(*ir.main, "bn") != nullptr);
  CHECK(conv->attr("memplan_pre_scale") == nullptr);
}
