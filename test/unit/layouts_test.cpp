// Channel-blocked activations: which tensors the layout pass blocks on tiny hand-built graphs,
// and that every layout gives the same answer through the public API.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "memplan/memplan.h"
#include "ir/channel_shuffle.h"
#include "passes/assign_layouts.h"
#include "plan/plan.h"
#include "pipeline/compile_pipeline.h"
#include "runtime/dnnl_context.h"
#include "support/model_builder.h"
#include "support/numeric.h"

using namespace memplan;
using namespace memplan::test;

namespace {

void add_conv(onnx::GraphProto& g, const std::string& name, const std::string& in, const std::string& out, int64_t cin,
              int64_t cout, unsigned seed) {
  add_initializer(g, tensor_f32(name + "_w", {cout, cin, 3, 3}, random_floats(static_cast<size_t>(cout * cin * 9), seed)));
  attr_ints(add_node(g, "Conv", {in, name + "_w"}, {out}, name), "pads", {1, 1, 1, 1});
}

int block_of(const Model& m, const std::string& value) {
  for (const auto& v : m.main->values)
    if (v->name == value) return v->channel_block;
  FAIL("no value " << value);
  return -1;
}

// The model at `path` prepared and compiled as with MEMPLAN_CHANNEL_BLOCK=block ("0", "8" or "16").
struct UnderBlock {
  Model ir;
  std::shared_ptr<const CompiledModel> model;
};

UnderBlock under_block(const std::string& path, const char* block, const CompileOptions& options = {}) {
  setenv("MEMPLAN_CHANNEL_BLOCK", block, 1);
  UnderBlock out{prepare_model(path, {}), CompiledModel::compile(path, options)};
  unsetenv("MEMPLAN_CHANNEL_BLOCK");
  return out;
}

// Catch's Approx's own relative tolerance.
constexpr double kApproxEpsilon = std::numeric_limits<float>::epsilon() * 100;

// Runs input x of `dims` through a guard-mode session `runs` times (staged buffers live in the
// scratchpad, which other kernels write between runs) and requires output y to match `want`.
void require_output(const std::shared_ptr<const CompiledModel>& model, const std::vector<int64_t>& dims,
                    const std::vector<float>& x, const std::vector<float>& want, int runs, double epsilon,
                    double margin) {
  Session s(model, SessionOptions{true});
  for (int run = 0; run < runs; ++run) {
    s.set_input("x", kFloat32, dims, x.data(), x.size() * 4);
    s.run();
    const float* y = static_cast<const float*>(s.output("y").data);
    for (size_t i = 0; i < want.size(); ++i) REQUIRE(y[i] == Approx(want[i]).epsilon(epsilon).margin(margin));
  }
}

// x[1,3,8,8] -> conv1(16) -> relu -> conv2(32) -> maxpool -> concat(with conv3(16) of the pool
// input) -> GlobalAveragePool -> y; plus a side branch: conv2's output reshaped (a plain reader).
ModelBuilder conv_chain(bool plain_reader) {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 3, 8, 8});
  add_conv(g, "conv1", "x", "c1", 3, 16, 1);
  add_node(g, "Relu", {"c1"}, {"r1"}, "relu1");
  add_conv(g, "conv2", "r1", "c2", 16, 32, 2);
  auto* pool = add_node(g, "MaxPool", {"c2"}, {"p"}, "pool");
  attr_ints(pool, "kernel_shape", {2, 2});
  attr_ints(pool, "strides", {2, 2});
  add_conv(g, "conv3", "p", "c3", 32, 16, 3);
  attr_int(add_node(g, "Concat", {"p", "c3"}, {"cat"}, "concat"), "axis", 1);
  add_node(g, "GlobalAveragePool", {"cat"}, {"y"}, "gap");
  add_output(g, "y", elem::kFloat, {1, 48, 1, 1});
  if (plain_reader) {
    add_initializer(g, tensor_i64("flat", {2}, {1, -1}));
    add_node(g, "Reshape", {"c2", "flat"}, {"z"}, "reshape");
    add_output(g, "z", elem::kFloat, {1, 32 * 64});
  }
  return mb;
}

}  // namespace

TEST_CASE("layouts: conv, pool and concat chains stay blocked, inputs, outputs and plain readers do not", "[layouts]") {
  SECTION("a pure chain") {
    Model m = conv_chain(false).import();
    prepare_model(m, {});
    CHECK(assign_layouts(m, 16) == 5);  // r1 (conv1 with its Relu fused), c2, p, c3, cat
    CHECK(block_of(m, "x") == 0);       // graph input
    CHECK(block_of(m, "r1") == 16);     // conv1 + fused Relu
    CHECK(block_of(m, "c2") == 16);
    CHECK(block_of(m, "p") == 16);
    CHECK(block_of(m, "c3") == 16);
    CHECK(block_of(m, "cat") == 16);
    CHECK(block_of(m, "y") == 0);  // graph output, same bytes as the blocked pool result
  }
  SECTION("a plain reader (Reshape) keeps its input plain, and with it the pool that reads it") {
    Model m = conv_chain(true).import();
    prepare_model(m, {});
    assign_layouts(m, 16);
    CHECK(block_of(m, "r1") == 16);
    CHECK(block_of(m, "c2") == 0);
    CHECK(block_of(m, "p") == 0);  // MaxPool: same layout in and out
    CHECK(block_of(m, "c3") == 0);  // Concat with p: same layout for every input
    CHECK(block_of(m, "cat") == 0);
  }
  SECTION("block 8 where 16 does not divide the channels; 0 turns the pass off") {
    Model m = conv_chain(false).import();
    prepare_model(m, {});
    assign_layouts(m, 8);
    CHECK(block_of(m, "c2") == 8);
    CHECK(assign_layouts(m, 0) == 0);
    CHECK(block_of(m, "c2") == 0);
  }
}

TEST_CASE("layouts: per-channel broadcasts stay blocked, other broadcasts do not, odd channel counts go channels-last",
          "[layouts]") {
  for (const bool per_channel : {true, false}) {
    INFO("per_channel " << per_channel);
    ModelBuilder mb;
    auto& g = mb.graph();
    add_input(g, "x", elem::kFloat, {1, 16, 4, 4});
    add_conv(g, "conv1", "x", "c1", 16, 16, 1);
    if (per_channel) add_initializer(g, tensor_f32("s", {16, 1, 1}, random_floats(16, 9)));
    else add_initializer(g, tensor_f32("s", {4, 1}, random_floats(4, 9)));  // varies along H
    add_node(g, "Div", {"c1", "s"}, {"d"}, "div");
    add_conv(g, "conv2", "d", "c2", 16, 12, 2);  // 12 channels: neither 8 nor 16 divides
    add_conv(g, "conv3", "c2", "y", 12, 16, 3);
    add_output(g, "y", elem::kFloat, {1, 16, 4, 4});
    Model m = mb.import();
    prepare_model(m, {});
    assign_layouts(m, 16);
    CHECK(block_of(m, "c1") == (per_channel ? 16 : 0));
    CHECK(block_of(m, "d") == (per_channel ? 16 : 0));
    CHECK(block_of(m, "c2") == Value::kChannelsLast);
    CHECK(assign_layouts(m, 8) == (per_channel ? 3 : 1));
    CHECK(block_of(m, "d") == (per_channel ? 8 : 0));
    CHECK(block_of(m, "c2") == Value::kChannelsLast);
  }
}

TEST_CASE("layouts: plain, nChw8c and nChw16c activations give the same outputs", "[layouts]") {
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_layouts.onnx").string();
  std::ofstream(path, std::ios::binary) << conv_chain(false).bytes();
  const std::vector<float> x = random_floats(3 * 64, 5);
  auto run = [&](const char* block) {
    const auto model = under_block(path, block).model;
    Session s(model, SessionOptions{true});  // guard mode: no buffer clobbered in any layout
    s.set_input("x", kFloat32, std::vector<int64_t>{1, 3, 8, 8}, x.data(), x.size() * 4);
    s.run();
    const TensorRef y = s.output("y");
    const float* p = static_cast<const float*>(y.data);
    return std::vector<float>(p, p + y.bytes / 4);
  };
  const std::vector<float> plain = run("0"), b8 = run("8"), b16 = run("16");
  REQUIRE(plain.size() == 48);
  for (size_t i = 0; i < plain.size(); ++i) {
    CHECK(b8[i] == Approx(plain[i]).margin(1e-5));
    CHECK(b16[i] == Approx(plain[i]).margin(1e-5));
  }
}

namespace {

// Plain NCHW convolution with groups and padding 1, 3x3 kernels: the reference.
std::vector<float> reference_conv(const std::vector<float>& x, const std::vector<float>& w, int c, int m, int groups, int hw) {
  std::vector<float> y(static_cast<size_t>(m * hw * hw), 0.f);
  const int cg = c / groups, mg = m / groups;
  for (int o = 0; o < m; ++o)
    for (int i = 0; i < hw; ++i)
      for (int j = 0; j < hw; ++j) {
        float s = 0;
        for (int ci = 0; ci < cg; ++ci)
          for (int ki = 0; ki < 3; ++ki)
            for (int kj = 0; kj < 3; ++kj) {
              const int yy = i + ki - 1, xx = j + kj - 1;
              if (yy < 0 || xx < 0 || yy >= hw || xx >= hw) continue;
              const int cin = (o / mg) * cg + ci;
              s += x[static_cast<size_t>((cin * hw + yy) * hw + xx)] * w[static_cast<size_t>(((o * cg + ci) * 3 + ki) * 3 + kj)];
            }
        y[static_cast<size_t>((o * hw + i) * hw + j)] = s;
      }
  return y;
}

}  // namespace

TEST_CASE("layouts: grouped and depthwise convolutions, run in oneDNN's own layouts, match a plain reference", "[layouts]") {
  constexpr int C = 32, HW = 6;
  const std::vector<float> x = random_floats(C * HW * HW, 11), w1 = random_floats(C * (C / 2) * 9, 12),
                           w2 = random_floats(C * 9, 13);
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, C, HW, HW});
  add_initializer(g, tensor_f32("w1", {C, C / 2, 3, 3}, w1));
  add_initializer(g, tensor_f32("w2", {C, 1, 3, 3}, w2));
  auto* grouped = add_node(g, "Conv", {"x", "w1"}, {"a"}, "grouped");
  attr_ints(grouped, "pads", {1, 1, 1, 1});
  attr_int(grouped, "group", 2);
  auto* depthwise = add_node(g, "Conv", {"a", "w2"}, {"y"}, "depthwise");
  attr_ints(depthwise, "pads", {1, 1, 1, 1});
  attr_int(depthwise, "group", C);
  add_output(g, "y", elem::kFloat, {1, C, HW, HW});
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_layouts_grouped.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  const std::vector<float> want = reference_conv(reference_conv(x, w1, C, C, 2, HW), w2, C, C, C, HW);

  for (const char* block : {"0", "8", "16"}) {
    INFO("MEMPLAN_CHANNEL_BLOCK=" << block);
    const auto model = under_block(path, block).model;
    require_output(model, {1, C, HW, HW}, x, want, 2, kApproxEpsilon, 1e-4);
  }
}

TEST_CASE("layouts: a grouped Conv of 4 channels a group between blocked Convs (ResNeXt) matches a plain reference on "
          "no oneDNN reference kernel", "[layouts]") {
  // x -> dense 16 -> dense 128 -> grouped 128 in 32 groups -> dense 16 -> y. No block divides a
  // group's 4 channels, so the grouped Conv writes channels-last while the dense Conv before it
  // writes blocks (its own source is blocked, so channels-last would not spare a reorder there):
  // oneDNN 2.6 has only its reference kernel for that pair on AVX2 (ctest runs [layouts] there
  // too), so the kernel reorders the source instead.
  constexpr int C = 16, M = 128, G = 32, HW = 6;
  const std::vector<float> x = random_floats(C * HW * HW, 41), w0 = random_floats(C * C * 9, 40),
                           w1 = random_floats(M * C * 9, 42), w2 = random_floats(M * (M / G) * 9, 43),
                           w3 = random_floats(C * M * 9, 44);
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, C, HW, HW});
  add_initializer(g, tensor_f32("w0", {C, C, 3, 3}, w0));
  add_initializer(g, tensor_f32("w1", {M, C, 3, 3}, w1));
  add_initializer(g, tensor_f32("w2", {M, M / G, 3, 3}, w2));
  add_initializer(g, tensor_f32("w3", {C, M, 3, 3}, w3));
  attr_ints(add_node(g, "Conv", {"x", "w0"}, {"a0"}, "dense0"), "pads", {1, 1, 1, 1});
  attr_ints(add_node(g, "Conv", {"a0", "w1"}, {"a1"}, "dense1"), "pads", {1, 1, 1, 1});
  auto* grouped = add_node(g, "Conv", {"a1", "w2"}, {"b"}, "grouped");
  attr_ints(grouped, "pads", {1, 1, 1, 1});
  attr_int(grouped, "group", G);
  attr_ints(add_node(g, "Conv", {"b", "w3"}, {"y"}, "dense3"), "pads", {1, 1, 1, 1});
  add_output(g, "y", elem::kFloat, {1, C, HW, HW});
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_layouts_resnext.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  const std::vector<float> want =
      reference_conv(reference_conv(reference_conv(reference_conv(x, w0, C, C, 1, HW), w1, C, M, 1, HW), w2, M, M, G, HW),
                     w3, M, C, 1, HW);

  for (const char* block : {"0", "8", "16"}) {
    INFO("MEMPLAN_CHANNEL_BLOCK=" << block);
    auto [m, model] = under_block(path, block);
    if (std::string(block) != "0") {
      CHECK(block_of(m, "a1") == std::stoi(block));
      CHECK(block_of(m, "b") == Value::kChannelsLast);
    }
    CHECK_THAT(model->report_json(), Catch::Contains("\"reference_kernels\": 0,"));
    require_output(model, {1, C, HW, HW}, x, want, 1, 1e-4, 1e-2);
  }
}

TEST_CASE("layouts: a small-group convolution with a fused Add matches a plain reference", "[layouts]") {
  // 4 groups of 3 channels: no fast grouped kernel, so the Conv may run as one dense convolution
  // with block-diagonal weights, its output staged and preloaded with the Add's other input.
  constexpr int C = 12, HW = 6, G = 4;
  const std::vector<float> x = random_floats(C * HW * HW, 21), skip = random_floats(C * HW * HW, 22),
                           w = random_floats(C * (C / G) * 9, 23);
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, C, HW, HW});
  add_input(g, "skip", elem::kFloat, {1, C, HW, HW});
  add_initializer(g, tensor_f32("w", {C, C / G, 3, 3}, w));
  auto* conv = add_node(g, "Conv", {"x", "w"}, {"c"}, "grouped");
  attr_ints(conv, "pads", {1, 1, 1, 1});
  attr_int(conv, "group", G);
  add_node(g, "Add", {"c", "skip"}, {"y"}, "add");
  add_output(g, "y", elem::kFloat, {1, C, HW, HW});
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_layouts_small_groups.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  std::vector<float> want = reference_conv(x, w, C, C, G, HW);
  for (size_t i = 0; i < want.size(); ++i) want[i] += skip[i];

  Model ir = prepare_model(path, {});
  REQUIRE(ir.main->nodes.size() == 1);  // the Add is the Conv's sum post-op
  auto model = CompiledModel::compile(path, {});
  Session s(model, SessionOptions{true});
  for (int run = 0; run < 2; ++run) {
    s.set_input("x", kFloat32, std::vector<int64_t>{1, C, HW, HW}, x.data(), x.size() * 4);
    s.set_input("skip", kFloat32, std::vector<int64_t>{1, C, HW, HW}, skip.data(), skip.size() * 4);
    s.run();
    const float* y = static_cast<const float*>(s.output("y").data);
    for (size_t i = 0; i < want.size(); ++i) REQUIRE(y[i] == Approx(want[i]).margin(1e-4));
  }
}

TEST_CASE("layouts: grouped 1x1 convolutions run on a 1x1 kernel or as one batched matmul, with bias, Relu and a "
          "fused Add, and match a plain reference in every layout", "[layouts]") {
  // x -> grouped 1x1 (4 groups of 34 channels, ShuffleNet's: no block divides them) -> Relu ->
  // grouped 1x1 (2 groups of 68) + x -> y. oneDNN 2.6 has a 1x1 kernel for such groups on AVX-512
  // only; elsewhere its generic direct kernel runs them at a third of its GEMM's speed, so they
  // run as a matmul over strided views of the channels-last bytes (ctest runs [layouts] on AVX2
  // too), the bias and Relu applied after it and the Add as its sum post-op.
  constexpr int C = 136, H = 5, W = 7, P = H * W;
  const std::vector<float> x = random_floats(C * P, 51), w1 = random_floats(C * (C / 4), 52),
                           b1 = random_floats(C, 53), w2 = random_floats(C * (C / 2), 54), b2 = random_floats(C, 55);
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, C, H, W});
  add_initializer(g, tensor_f32("w1", {C, C / 4, 1, 1}, w1));
  add_initializer(g, tensor_f32("b1", {C}, b1));
  add_initializer(g, tensor_f32("w2", {C, C / 2, 1, 1}, w2));
  add_initializer(g, tensor_f32("b2", {C}, b2));
  attr_int(add_node(g, "Conv", {"x", "w1", "b1"}, {"c1"}, "groups_of_34"), "group", 4);
  add_node(g, "Relu", {"c1"}, {"r1"}, "relu");
  attr_int(add_node(g, "Conv", {"r1", "w2", "b2"}, {"c2"}, "groups_of_68"), "group", 2);
  add_node(g, "Add", {"c2", "x"}, {"y"}, "add");
  add_output(g, "y", elem::kFloat, {1, C, H, W});
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_layouts_grouped_1x1.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  // y[o][p] = b[o] + sum over the group's input channels i of w[o][i] * x[group's first + i][p].
  const auto pointwise = [&](const std::vector<float>& in, const std::vector<float>& w, const std::vector<float>& b,
                             int groups) {
    const int cg = C / groups;
    std::vector<float> out(static_cast<size_t>(C * P));
    for (int o = 0; o < C; ++o)
      for (int p = 0; p < P; ++p) {
        double sum = b[static_cast<size_t>(o)];
        for (int i = 0; i < cg; ++i)
          sum += double(w[static_cast<size_t>(o * cg + i)]) * in[static_cast<size_t>(((o / cg) * cg + i) * P + p)];
        out[static_cast<size_t>(o * P + p)] = static_cast<float>(sum);
      }
    return out;
  };
  std::vector<float> r1 = pointwise(x, w1, b1, 4);
  for (float& v : r1) v = std::max(v, 0.f);
  std::vector<float> want = pointwise(r1, w2, b2, 2);
  for (size_t i = 0; i < want.size(); ++i) want[i] += x[i];

  // For speed, the fastest kernels; for memory, the leanest (a staged matmul's convolution).
  for (const char* prefer : {"speed", "memory"})
  for (const char* block : {"0", "8", "16"}) {
    INFO("MEMPLAN_CHANNEL_BLOCK=" << block << ", prefer " << prefer);
    CompileOptions options;
    options.prefer = prefer;
    auto [m, model] = under_block(path, block, options);
    REQUIRE(m.main->nodes.size() == 2);  // the Relu and the Add are fused into the convolutions
    for (const NodeKernel& k : model->kernels()) {
      INFO(k.node << ": " << k.implementation);
      CHECK(!k.reference);
      if (std::string(prefer) == "speed")
        CHECK((k.implementation.find("1x1") != std::string::npos ||
               k.implementation.find("batched matmul") != std::string::npos));
    }
    require_output(model, {1, C, H, W}, x, want, 2, 1e-4, 1e-3);
  }
}

TEST_CASE("layouts: a dilated convolution whose padding oneDNN's direct kernels refuse reads a zero-padded copy, "
          "not the GEMM, and matches a plain reference", "[layouts]") {
  // RFB modules' 3x3 convolution dilated by 5 and padded by 5: on AVX2 (ctest runs [layouts]
  // there too) oneDNN 2.6 has only its GEMM for that padding, three times slower than its direct
  // kernel on the source padded into the scratchpad. Two runs: the padding is zeroed each time
  // over whatever the scratchpad held.
  constexpr int C = 16, H = 12, W = 14, D = 5;
  const std::vector<float> x = random_floats(C * H * W, 61), w = random_floats(C * C * 9, 62), b = random_floats(C, 63),
                           w0 = random_floats(C * C, 64), w2 = random_floats(C * C, 65);
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, C, H, W});
  add_initializer(g, tensor_f32("w0", {C, C, 1, 1}, w0));
  add_initializer(g, tensor_f32("w", {C, C, 3, 3}, w));
  add_initializer(g, tensor_f32("b", {C}, b));
  add_initializer(g, tensor_f32("w2", {C, C, 1, 1}, w2));
  // Between two 1x1 convolutions: blocked in and out.
  add_node(g, "Conv", {"x", "w0"}, {"a"}, "pointwise_before");
  auto* dilated = add_node(g, "Conv", {"a", "w", "b"}, {"d"}, "dilated");
  attr_ints(dilated, "pads", {D, D, D, D});
  attr_ints(dilated, "dilations", {D, D});
  add_node(g, "Conv", {"d", "w2"}, {"y"}, "pointwise_after");
  add_output(g, "y", elem::kFloat, {1, C, H, W});
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_layouts_dilated.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  const auto pointwise = [&](const std::vector<float>& in, const std::vector<float>& weights) {
    std::vector<float> out(in.size(), 0.f);
    for (int o = 0; o < C; ++o)
      for (int p = 0; p < H * W; ++p)
        for (int i = 0; i < C; ++i)
          out[static_cast<size_t>(o * H * W + p)] += weights[static_cast<size_t>(o * C + i)] * in[static_cast<size_t>(i * H * W + p)];
    return out;
  };
  const std::vector<float> a = pointwise(x, w0);
  std::vector<float> d(a.size(), 0.f);
  for (int o = 0; o < C; ++o)
    for (int r = 0; r < H; ++r)
      for (int c = 0; c < W; ++c) {
        double sum = b[static_cast<size_t>(o)];
        for (int i = 0; i < C; ++i)
          for (int kr = 0; kr < 3; ++kr)
            for (int kc = 0; kc < 3; ++kc) {
              const int rr = r + (kr - 1) * D, cc = c + (kc - 1) * D;
              if (rr < 0 || cc < 0 || rr >= H || cc >= W) continue;
              sum += double(w[static_cast<size_t>(((o * C + i) * 3 + kr) * 3 + kc)]) * a[static_cast<size_t>((i * H + rr) * W + cc)];
            }
        d[static_cast<size_t>((o * H + r) * W + c)] = static_cast<float>(sum);
      }
  const std::vector<float> want = pointwise(d, w2);

  for (const char* block : {"8", "16"}) {
    INFO("MEMPLAN_CHANNEL_BLOCK=" << block);
    CompileOptions options;
    options.prefer = "speed";
    auto [m, model] = under_block(path, block, options);
    for (const NodeKernel& k : model->kernels()) {
      INFO(k.node << ": " << k.implementation);
      CHECK(!k.reference);
      if (k.node.find("dilated") != std::string::npos) CHECK(k.implementation.find("gemm") == std::string::npos);
    }
    require_output(model, {1, C, H, W}, x, want, 2, 1e-4, 1e-3);
  }
}

TEST_CASE("layouts: a 3x3 or 1x1 convolution from a blocked source writing a plain output runs oneDNN's direct kernel "
          "and a reorder, not its GEMM",
          "[layouts]") {
  // x -> 3x3 (16 -> 32, blocked) -> k x k (32 -> 16) -> y, a plain graph output. oneDNN's direct
  // kernels write blocked tensors only; its GEMM (im2col) would run at half their speed, and for a
  // 1x1 it reorders the source to plain first (one reorder either way), its kernels a megabyte of
  // jit code the process keeps.
  constexpr int C = 16, M = 32, HW = 10;
  for (const int k : {3, 1}) {
    INFO("the second convolution " << k << "x" << k);
    const std::vector<float> x = random_floats(C * HW * HW, 71), w1 = random_floats(M * C * 9, 72),
                             w2 = random_floats(C * M * k * k, 73);
    ModelBuilder mb;
    auto& g = mb.graph();
    add_input(g, "x", elem::kFloat, {1, C, HW, HW});
    add_initializer(g, tensor_f32("w1", {M, C, 3, 3}, w1));
    add_initializer(g, tensor_f32("w2", {C, M, k, k}, w2));
    attr_ints(add_node(g, "Conv", {"x", "w1"}, {"a"}, "widen"), "pads", {1, 1, 1, 1});
    attr_ints(add_node(g, "Conv", {"a", "w2"}, {"y"}, "to_plain"), "pads", std::vector<int64_t>(4, k / 2));
    add_output(g, "y", elem::kFloat, {1, C, HW, HW});
    const std::string path = (std::filesystem::temp_directory_path() / "memplan_layouts_to_plain.onnx").string();
    std::ofstream(path, std::ios::binary) << mb.bytes();
    const std::vector<float> a = reference_conv(x, w1, C, M, 1, HW);
    std::vector<float> want(static_cast<size_t>(C * HW * HW), 0.f);
    if (k == 3) {
      want = reference_conv(a, w2, M, C, 1, HW);
    } else {
      for (int o = 0; o < C; ++o)
        for (int i = 0; i < M; ++i)
          for (int p = 0; p < HW * HW; ++p)
            want[static_cast<size_t>(o * HW * HW + p)] += w2[static_cast<size_t>(o * M + i)] * a[static_cast<size_t>(i * HW * HW + p)];
    }
    for (const char* block : {"8", "16"}) {
      INFO("MEMPLAN_CHANNEL_BLOCK=" << block);
      CompileOptions options;
      options.prefer = "speed";
      auto [m, model] = under_block(path, block, options);
      CHECK(block_of(m, "a") == std::stoi(block));
      for (const NodeKernel& kernel : model->kernels()) {
        INFO(kernel.node << ": " << kernel.implementation);
        CHECK(!kernel.reference);
        CHECK(kernel.implementation.find("gemm") == std::string::npos);
      }
      require_output(model, {1, C, HW, HW}, x, want, 1, 1e-4, 1e-3);
    }
  }
}

TEST_CASE("layouts: a one-channel MaxPool runs oneDNN's jit pooling on its plain bytes", "[layouts]") {
  // One channel: NCHW is NHWC, which oneDNN pools on jit kernels on any ISA; its plain NCHW
  // pooling below AVX-512 is a C++ loop about ten times slower (ctest runs [layouts] on AVX2).
  constexpr int HW = 20;
  const std::vector<float> x = random_floats(HW * HW, 75);
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 1, HW, HW});
  auto* pool = add_node(g, "MaxPool", {"x"}, {"y"}, "pool");
  attr_ints(pool, "kernel_shape", {3, 3});
  attr_ints(pool, "pads", {1, 1, 1, 1});
  add_output(g, "y", elem::kFloat, {1, 1, HW, HW});
  const std::string path = (std::filesystem::temp_directory_path() / "memplan_layouts_one_channel_pool.onnx").string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  auto model = CompiledModel::compile(path, {});
  REQUIRE(model->kernels().size() == 1);
  INFO(model->kernels()[0].implementation);
  CHECK(model->kernels()[0].implementation.rfind("jit", 0) == 0);
  Session s(model, SessionOptions{true});
  s.set_input("x", kFloat32, std::vector<int64_t>{1, 1, HW, HW}, x.data(), x.size() * 4);
  s.run();
  const float* y = static_cast<const float*>(s.output("y").data);
  for (int r = 0; r < HW; ++r)
    for (int c = 0; c < HW; ++c) {
      float top = -INFINITY;
      for (int i = std::max(r - 1, 0); i <= std::min(r + 1, HW - 1); ++i)
        for (int j = std::max(c - 1, 0); j <= std::min(c + 1, HW - 1); ++j) top = std::max(top, x[static_cast<size_t>(i * HW + j)]);
      REQUIRE(y[r * HW + c] == top);
    }
}

TEST_CASE("layouts: a dilated MaxPool or AveragePool between blocked convolutions runs memplan's window loop on plain "
          "tensors, not oneDNN's reference pooling", "[layouts]") {
  // x -> conv(16) -> pool 3x3 dilated by 2, padded by 2 -> conv(16) -> y. oneDNN 2.6 pools with
  // dilations on ref:any only (about 20 times slower); the window loop reads plain tensors, so the
  // pool's input and output are plain and the convolutions reorder around it.
  constexpr int C = 16, HW = 9;
  const std::vector<float> x = random_floats(3 * HW * HW, 90);
  for (const char* op : {"MaxPool", "AveragePool"}) {
    INFO(op);
    ModelBuilder mb;
    auto& g = mb.graph();
    add_input(g, "x", elem::kFloat, {1, 3, HW, HW});
    add_conv(g, "conv1", "x", "c1", 3, C, 91);
    auto* pool = add_node(g, op, {"c1"}, {"p"}, "pool");
    attr_ints(pool, "kernel_shape", {3, 3});
    attr_ints(pool, "dilations", {2, 2});
    attr_ints(pool, "pads", {2, 2, 2, 2});
    add_conv(g, "conv2", "p", "y", C, C, 92);
    add_output(g, "y", elem::kFloat, {1, C, HW, HW});
    const std::string path = (std::filesystem::temp_directory_path() / "memplan_layouts_dilated_pool.onnx").string();
    std::ofstream(path, std::ios::binary) << mb.bytes();
    const UnderBlock blocked = under_block(path, "16");
    CHECK(block_of(blocked.ir, "c1") == 0);
    CHECK(block_of(blocked.ir, "p") == 0);
    for (const auto& k : blocked.model->kernels()) {
      INFO(k.node << ": " << k.implementation);
      CHECK(!is_reference_implementation(k.implementation));
      if (k.node.find("'pool'") != std::string::npos) CHECK(k.implementation == "memplan:window_pool");
    }
    // The same model with every tensor plain is the reference.
    const UnderBlock plain = under_block(path, "0");
    Session s(plain.model, SessionOptions{true});
    s.set_input("x", kFloat32, std::vector<int64_t>{1, 3, HW, HW}, x.data(), x.size() * 4);
    s.run();
    const float* want = static_cast<const float*>(s.output("y").data);
    require_output(blocked.model, {1, 3, HW, HW}, x, std::vector<float>(want, want + C * HW * HW), 2, kApproxEpsilon, 1e-4);
  }
}

TEST_CASE("layouts: the channel block follows the ISA oneDNN runs, not the CPU's own flags", "[layouts][isa]") {
  // ctest runs this again under DNNL_MAX_CPU_ISA=AVX2: on an AVX-512 CPU, blocks of 16 would then
  // meet AVX2 kernels, which run 8.
  if (std::getenv("MEMPLAN_CHANNEL_BLOCK")) return;  // the override, tested by the layouts above
  const char* isa = std::getenv("DNNL_MAX_CPU_ISA");
  if (isa && std::string(isa) == "AVX2") CHECK(preferred_channel_block() == (__builtin_cpu_supports("avx2") ? 8 : 0));
  else if (!isa && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    CHECK(preferred_channel_block() == 16);  // oneDNN's avx512_core
  CHECK(preferred_channel_block() == rt::dnnl_channel_block());
}

namespace {

// x[1,3,8,8] -> conv (c channels) -> Pad (channels, `pad` at the end) -> Resize (nearest, x2)
// -> conv (8 channels) -> y: a channel Pad and an upsampling between convolutions, as TensorFlow
// and Paddle exporters write them.
std::string pad_resize_model(int64_t c, int64_t pad) {
  ModelBuilder mb("hand_built", 13);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 3, 8, 8});
  add_conv(g, "conv1", "x", "c1", 3, c, 1);
  add_initializer(g, tensor_i64("pads", {8}, {0, 0, 0, 0, 0, pad, 0, 0}));
  add_node(g, "Pad", {"c1", "pads"}, {"p"}, "pad");
  add_initializer(g, tensor_f32("scales", {4}, {1.f, 1.f, 2.f, 2.f}));
  add_attr(add_node(g, "Resize", {"p", "", "scales"}, {"r"}, "upsample"), "coordinate_transformation_mode",
           onnx::AttributeProto::STRING)
      ->set_s("asymmetric");
  add_conv(g, "conv2", "r", "y", c + pad, 8, 2);
  add_output(g, "y", elem::kFloat, {1, 8, 16, 16});
  const std::string path =
      (std::filesystem::temp_directory_path() / ("memplan_pad_resize_" + std::to_string(c) + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  return path;
}

}  // namespace

TEST_CASE("layouts: a channel Pad and a nearest Resize between convolutions run in the convolutions' layout, "
          "blocked or channels-last, with the plain numbers", "[layouts]") {
  // 16 + 16 channels: blocks of 16 and of 8; 24 + 4: channels-last where the block is 16.
  for (const auto& [c, pad] : {std::pair<int64_t, int64_t>{16, 16}, {24, 4}}) {
    INFO(c << " channels padded by " << pad);
    const std::string path = pad_resize_model(c, pad);
    const std::vector<float> x = random_floats(3 * 64, 7);
    auto run = [&](const char* block) {
      auto [m, model] = under_block(path, block);
      Session s(model, SessionOptions{true});
      s.set_input("x", kFloat32, std::vector<int64_t>{1, 3, 8, 8}, x.data(), x.size() * 4);
      s.run();
      const TensorRef y = s.output("y");
      const float* p = static_cast<const float*>(y.data);
      return std::pair{std::vector<float>(p, p + y.bytes / 4), block_of(m, "r")};
    };
    const auto [plain, plain_layout] = run("0");
    const auto [b16, layout16] = run("16");
    const auto [b8, layout8] = run("8");
    CHECK(plain_layout == 0);
    CHECK(layout16 == (c % 16 == 0 ? 16 : Value::kChannelsLast));  // the Resize's output
    CHECK(layout8 == (pad % 8 == 0 ? 8 : Value::kChannelsLast));
    REQUIRE(plain.size() == 8 * 256);
    for (size_t i = 0; i < plain.size(); ++i) {
      CHECK(b16[i] == Approx(plain[i]).epsilon(1e-4).margin(1e-4));
      CHECK(b8[i] == Approx(plain[i]).epsilon(1e-4).margin(1e-4));
    }
  }
}

namespace {

// x -> conv a (3 -> ca) -> conv b (ca -> cb) -> conv c (cb -> cc) -> y, 3x3 kernels.
Model three_convs(int64_t ca, int64_t cb, int64_t cc) {
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 3, 8, 8});
  add_conv(g, "conv_a", "x", "a", 3, ca, 1);
  add_conv(g, "conv_b", "a", "b", ca, cb, 2);
  add_conv(g, "conv_c", "b", "y", cb, cc, 3);
  add_output(g, "y", elem::kFloat, {1, cc, 8, 8});
  Model m = mb.import();
  prepare_model(m, {});
  return m;
}

}  // namespace

TEST_CASE("layouts: a Conv output between channels-last convolutions turns channels-last where a block would mean two reorders",
          "[layouts]") {
  for (const int block : {8, 16}) {
    INFO("block " << block);
    // 12 channels: no block divides them, so channels-last. b's 16 channels divide into blocks,
    // but then both conv_b (channels-last in) and conv_c (channels-last out) would mix layouts.
    Model between = three_convs(12, 16, 12);
    assign_layouts(between, block);
    CHECK(block_of(between, "a") == Value::kChannelsLast);
    CHECK(block_of(between, "b") == Value::kChannelsLast);
    // With a blocked source, a block costs one reorder and channels-last one too: b keeps its block.
    Model after_blocked = three_convs(16, 16, 12);
    assign_layouts(after_blocked, block);
    CHECK(block_of(after_blocked, "a") == block);
    CHECK(block_of(after_blocked, "b") == block);
  }
}

namespace {

// ShuffleNet's unit, as exporters write it: x[N, 24, 6, 6] -> Conv 3x3 in 4 groups of 6 channels
// -> Reshape [N, 4, 6, 6, 6] -> Transpose [0, 2, 1, 3, 4] -> Reshape [N, 24, 6, 6] -> depthwise
// Conv 3x3 -> y. No block of 8 or 16 divides a group's 6 channels.
constexpr int kShuffleN = 2, kShuffleC = 24, kShuffleGroups = 4, kShuffleHW = 6;

ModelBuilder shuffle_unit(const std::vector<float>& w1, const std::vector<float>& w2, std::vector<int64_t> perm) {
  constexpr int64_t N = kShuffleN, C = kShuffleC, G = kShuffleGroups, HW = kShuffleHW;
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {N, C, HW, HW});
  add_initializer(g, tensor_f32("w1", {C, C / G, 3, 3}, w1));
  add_initializer(g, tensor_f32("w2", {C, 1, 3, 3}, w2));
  auto* grouped = add_node(g, "Conv", {"x", "w1"}, {"a"}, "grouped");
  attr_ints(grouped, "pads", {1, 1, 1, 1});
  attr_int(grouped, "group", G);
  add_initializer(g, tensor_i64("split_shape", {5}, {N, G, C / G, HW, HW}));
  add_initializer(g, tensor_i64("merge_shape", {4}, {N, C, HW, HW}));
  add_node(g, "Reshape", {"a", "split_shape"}, {"split"}, "split");
  attr_ints(add_node(g, "Transpose", {"split"}, {"swapped"}, "swap"), "perm", perm);
  add_node(g, "Reshape", {"swapped", "merge_shape"}, {"s"}, "merge");
  auto* depthwise = add_node(g, "Conv", {"s", "w2"}, {"y"}, "depthwise");
  attr_ints(depthwise, "pads", {1, 1, 1, 1});
  attr_int(depthwise, "group", C);
  add_output(g, "y", elem::kFloat, {N, C, HW, HW});
  return mb;
}

}  // namespace

TEST_CASE("layouts: ShuffleNet's Reshape-Transpose-Reshape becomes one channel shuffle, run in every layout with the "
          "plain numbers", "[layouts][shuffle]") {
  constexpr int N = kShuffleN, C = kShuffleC, G = kShuffleGroups, HW = kShuffleHW;
  const std::vector<float> x = random_floats(N * C * HW * HW, 31), w1 = random_floats(C * (C / G) * 9, 32),
                           w2 = random_floats(C * 9, 33);

  SECTION("a Transpose that swaps other axes is no shuffle and stays as it is") {
    Model m = shuffle_unit(w1, w2, {0, 1, 2, 4, 3}).import();
    prepare_model(m, {});
    CHECK(m.main->nodes.size() == 5);
  }

  const std::string path = (std::filesystem::temp_directory_path() / "memplan_channel_shuffle.onnx").string();
  std::ofstream(path, std::ios::binary) << shuffle_unit(w1, w2, {0, 2, 1, 3, 4}).bytes();
  // The reference: each image through the grouped conv, the shuffle, the depthwise conv.
  std::vector<float> want;
  const size_t image = static_cast<size_t>(C * HW * HW);
  for (size_t n = 0; n < N; ++n) {
    const std::vector<float> a = reference_conv({x.begin() + n * image, x.begin() + (n + 1) * image}, w1, C, C, G, HW);
    std::vector<float> s(image);
    for (int g = 0; g < G; ++g)
      for (int j = 0; j < C / G; ++j)
        std::copy_n(a.begin() + (g * (C / G) + j) * HW * HW, HW * HW, s.begin() + (j * G + g) * HW * HW);
    const std::vector<float> y = reference_conv(s, w2, C, C, C, HW);
    want.insert(want.end(), y.begin(), y.end());
  }

  for (const char* block : {"0", "8", "16"}) {
    INFO("MEMPLAN_CHANNEL_BLOCK=" << block);
    auto [m, model] = under_block(path, block);
    // One Transpose node in place of the three, moving whole channels in the convolutions' layout.
    REQUIRE(m.main->nodes.size() == 3);
    const Node& shuffle = *m.main->nodes[1];
    CHECK(shuffle.op_type == "Transpose");
    CHECK(shuffle.attr_int(kChannelShuffleAttr, 0) == G);
    CHECK(block_of(m, "a") == (std::string(block) == "0" ? 0 : Value::kChannelsLast));
    CHECK(block_of(m, "s") == block_of(m, "a"));
    require_output(model, {N, C, HW, HW}, x, want, 1, kApproxEpsilon, 1e-4);
  }
}

namespace {

// ConvNeXt's block, shrunk: x[2, 32, 5, 5] -> depthwise Conv 3x3 -> d -> Transpose [0, 2, 3, 1]
// -> t -> Softmax over the channels (standing for its LayerNorm and Linear layers, which read the
// channels as rows) -> s -> Transpose [0, 3, 1, 2] -> u -> Add d -> sum -> Conv 3x3 32->16 -> y.
// With `plain_reader`, d is a graph output too: plain, so the Transpose after it copies.
constexpr int kNhwcN = 2, kNhwcC = 32, kNhwcM = 16, kNhwcHW = 5;

ModelBuilder nhwc_block(const std::vector<float>& wd, const std::vector<float>& wy, bool plain_reader) {
  constexpr int64_t N = kNhwcN, C = kNhwcC, M = kNhwcM, HW = kNhwcHW;
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {N, C, HW, HW});
  add_initializer(g, tensor_f32("wd", {C, 1, 3, 3}, wd));
  add_initializer(g, tensor_f32("wy", {M, C, 3, 3}, wy));
  auto* depthwise = add_node(g, "Conv", {"x", "wd"}, {"d"}, "depthwise");
  attr_ints(depthwise, "pads", {1, 1, 1, 1});
  attr_int(depthwise, "group", C);
  attr_ints(add_node(g, "Transpose", {"d"}, {"t"}, "to_nhwc"), "perm", {0, 2, 3, 1});
  attr_int(add_node(g, "Softmax", {"t"}, {"s"}, "softmax"), "axis", -1);
  attr_ints(add_node(g, "Transpose", {"s"}, {"u"}, "to_nchw"), "perm", {0, 3, 1, 2});
  add_node(g, "Add", {"u", "d"}, {"sum"}, "residual");
  attr_ints(add_node(g, "Conv", {"sum", "wy"}, {"y"}, "conv"), "pads", {1, 1, 1, 1});
  add_output(g, "y", elem::kFloat, {N, M, HW, HW});
  if (plain_reader) add_output(g, "d", elem::kFloat, {N, C, HW, HW});
  return mb;
}

const PlannedBuffer& planned(const MemoryPlan& p, const std::string& name) {
  for (const PlannedBuffer& b : p.graphs.at(0).buffers)
    if (b.name == name) return b;
  FAIL("no buffer " << name);
  return p.graphs.at(0).buffers.front();
}

}  // namespace

TEST_CASE("layouts: Transposes between NCHW and NHWC around convolutions read and write channels-last and copy nothing, "
          "with the plain numbers", "[layouts][nhwc]") {
  constexpr int N = kNhwcN, C = kNhwcC, M = kNhwcM, HW = kNhwcHW;
  const std::vector<float> x = random_floats(N * C * HW * HW, 41), wd = random_floats(C * 9, 42), wy = random_floats(M * C * 9, 43);
  // The reference, image by image in NCHW.
  std::vector<float> want;
  const size_t image = static_cast<size_t>(C * HW * HW), pixels = static_cast<size_t>(HW * HW);
  for (size_t n = 0; n < N; ++n) {
    const std::vector<float> d = reference_conv({x.begin() + n * image, x.begin() + (n + 1) * image}, wd, C, C, C, HW);
    std::vector<float> sum(d);
    for (size_t p = 0; p < pixels; ++p) {
      double top = -1e30, total = 0;
      for (size_t c = 0; c < C; ++c) top = std::max<double>(top, d[c * pixels + p]);
      for (size_t c = 0; c < C; ++c) total += std::exp(d[c * pixels + p] - top);
      for (size_t c = 0; c < C; ++c) sum[c * pixels + p] += static_cast<float>(std::exp(d[c * pixels + p] - top) / total);
    }
    const std::vector<float> y = reference_conv(sum, wy, C, M, 1, HW);
    want.insert(want.end(), y.begin(), y.end());
  }

  for (const bool plain_reader : {false, true}) {
    INFO("d also a graph output: " << plain_reader);
    const std::string path = (std::filesystem::temp_directory_path() / "memplan_nhwc_block.onnx").string();
    std::ofstream(path, std::ios::binary) << nhwc_block(wd, wy, plain_reader).bytes();
    for (const char* block : {"0", "8", "16"}) {
      INFO("MEMPLAN_CHANNEL_BLOCK=" << block);
      auto [m, model] = under_block(path, block);
      const bool layouts = std::string(block) != "0";
      // 32 channels divide into blocks, yet the tensors the Transposes read and write are stored
      // channels-last, and so is the Add between them; the NHWC side is plain. A plain d (a graph
      // output) holds the Add, and with it u, plain too.
      const int nchw = layouts && !plain_reader ? Value::kChannelsLast : 0;
      CHECK(block_of(m, "d") == nchw);
      CHECK(block_of(m, "t") == 0);
      CHECK(block_of(m, "s") == 0);
      CHECK(block_of(m, "u") == nchw);
      CHECK(block_of(m, "sum") == nchw);
      require_output(model, {N, C, HW, HW}, x, want, 2, 1e-4, 1e-5);

      setenv("MEMPLAN_CHANNEL_BLOCK", block, 1);
      const Compilation c = compile_model(path, {}, {});
      unsetenv("MEMPLAN_CHANNEL_BLOCK");
      CHECK((planned(c.plan, "t").alias == AliasKind::View) == (nchw != 0));
      CHECK((planned(c.plan, "u").alias == AliasKind::View) == (nchw != 0));
    }
  }
}
