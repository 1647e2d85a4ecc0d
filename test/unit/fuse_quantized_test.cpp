// The quantized fusions (passes/fuse_quantized): DynamicQuantizeLinear -> ConvInteger -> Cast ->
// Mul(x_scale * w_scale) -> Add(bias) -> Relu becomes DynamicQuantizeLinear and one ConvInteger
// with the unfused answer; QDQ around a Conv becomes one QLinearConv within a step of it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

namespace {

onnx::TensorProto tensor_i8(const std::string& name, std::vector<int64_t> dims, const std::vector<int8_t>& v) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT8);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size()));
  return t;
}

constexpr int C = 3, M = 4, H = 9;

// quantize_dynamic's layout for one Conv; `block` also makes the int32 ConvInteger output a graph
// output, which keeps the nodes apart (the reference). `test` names the file apart from other test
// cases' (ctest runs them in parallel).
std::string write(bool block, bool per_channel, const std::string& test) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> wd(-127, 127);
  std::vector<int8_t> w(M * C * 3 * 3);
  for (int8_t& v : w) v = static_cast<int8_t>(wd(rng));
  ModelBuilder m;
  auto& g = m.graph();
  add_input(g, "x", elem::kFloat, {1, C, H, H});
  add_initializer(g, tensor_i8("w", {M, C, 3, 3}, w));
  add_initializer(g, tensor_i8("w_zp", {}, {0}));
  add_initializer(g, per_channel ? tensor_f32("w_scale", {M, 1, 1}, {0.01f, 0.02f, 0.005f, 0.03f})
                                 : tensor_f32("w_scale", {}, {0.01f}));
  add_initializer(g, tensor_f32("b", {M, 1, 1}, {0.5f, -0.25f, 0.f, 1.f}));
  add_node(g, "DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"}, "dql");
  attr_ints(add_node(g, "ConvInteger", {"xq", "w", "xz", "w_zp"}, {"acc"}, "conv"), "pads", {1, 1, 1, 1});
  attr_int(add_node(g, "Cast", {"acc"}, {"accf"}, "cast"), "to", onnx::TensorProto::FLOAT);
  add_node(g, "Mul", {"xs", "w_scale"}, {"scale"}, "scales_mul");
  add_node(g, "Mul", {"accf", "scale"}, {"scaled"}, "mul");
  add_node(g, "Add", {"scaled", "b"}, {"biased"}, "add");
  add_node(g, "Relu", {"biased"}, {"y"}, "relu");
  add_output(g, "y", elem::kFloat, {1, M, H, H});
  if (block) add_output(g, "acc", elem::kInt32, {1, M, H, H});
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("fuse_quantized_" + test + std::to_string(block) + std::to_string(per_channel) + ".onnx"))
                               .string();
  std::ofstream(path, std::ios::binary) << m.bytes();
  return path;
}

std::vector<float> run(const std::string& path, const std::vector<float>& x) {
  auto model = CompiledModel::compile(path, {});
  Session s(model);
  s.set_input("x", kFloat32, std::vector<int64_t>{1, C, H, H}, x.data(), x.size() * 4);
  s.run();
  std::vector<float> y(M * H * H);
  std::memcpy(y.data(), s.output("y").data, y.size() * 4);
  return y;
}

}  // namespace

TEST_CASE("DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul -> Add -> Relu becomes one ConvInteger", "[passes][fusion]") {
  const bool per_channel = GENERATE(false, true);
  INFO("per-channel " << per_channel);
  const std::string fused = write(false, per_channel, "fused"), reference = write(true, per_channel, "fused");
  Model ir = prepare_model(fused, {});
  // The scale's Mul(x_scale, w_scale) stays, moved before the ConvInteger that now reads it.
  REQUIRE(ir.main->nodes.size() == 3);
  CHECK(ir.main->nodes[1]->op_type == "Mul");
  CHECK(ir.main->nodes[2]->op_type == "ConvInteger");
  CHECK(ir.main->nodes[2]->attr_int("memplan_dequantized", 0) == 1);
  CHECK(ir.main->nodes[2]->attr_int("memplan_fused_activation", 0) == 1);
  CHECK(prepare_model(reference, {}).main->nodes.size() == 7);

  std::mt19937 rng(9);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> x(C * H * H);
  for (float& v : x) v = d(rng);
  const std::vector<float> got = run(fused, x), want = run(reference, x);
  // The same float operations in the same order: the same bits.
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == want[i]);
}

TEST_CASE("a ConvInteger whose Cast is read elsewhere is not fused", "[passes][fusion]") {
  Model ir = prepare_model(write(true, false, "shared"), {});
  for (const auto& n : ir.main->nodes) CHECK(n->attr(std::string("memplan_dequantized")) == nullptr);
}

namespace {

onnx::TensorProto tensor_u8(const std::string& name, std::vector<int64_t> dims, const std::vector<uint8_t>& v) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::UINT8);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size()));
  return t;
}

// The static QDQ layout around one Conv (+ Relu); `block` makes the Conv's output a graph output too.
std::string write_qdq(bool block) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> wd(-127, 127);
  std::vector<int8_t> w(M * C * 3 * 3);
  for (int8_t& v : w) v = static_cast<int8_t>(wd(rng));
  ModelBuilder m;
  auto& g = m.graph();
  add_input(g, "x", elem::kFloat, {1, C, H, H});
  add_initializer(g, tensor_f32("xs", {}, {2.f / 255}));
  add_initializer(g, tensor_u8("xz", {}, {128}));
  add_initializer(g, tensor_i8("wq", {M, C, 3, 3}, w));
  add_initializer(g, tensor_f32("ws", {M}, {0.01f, 0.02f, 0.005f, 0.03f}));
  add_initializer(g, tensor_i8("wz", {M}, {0, 0, 0, 0}));
  add_initializer(g, tensor_f32("b", {M}, {0.5f, -0.25f, 0.f, 1.f}));
  add_initializer(g, tensor_f32("ys", {}, {0.05f}));
  add_initializer(g, tensor_u8("yz", {}, {3}));
  add_node(g, "QuantizeLinear", {"x", "xs", "xz"}, {"xq"}, "qx");
  add_node(g, "DequantizeLinear", {"xq", "xs", "xz"}, {"xf"}, "dqx");
  attr_int(add_node(g, "DequantizeLinear", {"wq", "ws", "wz"}, {"wf"}, "dqw"), "axis", 0);
  attr_ints(add_node(g, "Conv", {"xf", "wf", "b"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"c"}, {"r"}, "relu");
  add_node(g, "QuantizeLinear", {"r", "ys", "yz"}, {"yq"}, "qy");
  add_node(g, "DequantizeLinear", {"yq", "ys", "yz"}, {"y"}, "dqy");
  add_output(g, "y", elem::kFloat, {1, M, H, H});
  if (block) add_output(g, "c", elem::kFloat, {1, M, H, H});
  const std::string path =
      (std::filesystem::temp_directory_path() / ("fuse_qdq_" + std::to_string(block) + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << m.bytes();
  return path;
}

}  // namespace

TEST_CASE("QDQ around a Conv (weights as DequantizeLinear of int8) becomes one QLinearConv", "[passes][fusion]") {
  Model ir = prepare_model(write_qdq(false), {});
  REQUIRE(ir.main->nodes.size() == 3);
  CHECK(ir.main->nodes[0]->op_type == "QuantizeLinear");
  CHECK(ir.main->nodes[1]->op_type == "QLinearConv");
  CHECK(ir.main->nodes[1]->attr_int("memplan_fused_activation", 0) == 1);
  CHECK(ir.main->nodes[2]->op_type == "DequantizeLinear");
  // Unfused, the Conv runs in float with its weights folded once (no DequantizeLinear per run).
  Model plain = prepare_model(write_qdq(true), {});
  for (const auto& n : plain.main->nodes) CHECK(n->name != "dqw");

  std::mt19937 rng(9);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> x(C * H * H);
  for (float& v : x) v = d(rng);
  const std::vector<float> got = run(write_qdq(false), x), want = run(write_qdq(true), x);
  // The float Conv and the int8 one (with its bias rounded to the accumulator's scale) may round
  // an output that lies near a step of the output scale to the other side: one step at most.
  size_t steps = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    REQUIRE(std::abs(got[i] - want[i]) <= 0.05f * 1.001f);
    steps += got[i] != want[i];
  }
  CHECK(steps <= got.size() / 20);
}

namespace {

constexpr int64_t kRows = 2, kDepth = 64, kCols = 16;

// DequantizeLinear(xq, a uint8 input) -> Gemm(., DequantizeLinear(int8 W, per-column scales and
// zero points), float C) -> y: a QDQ classifier. `trans_b`: W is [N, K] (else [K, N]); `alpha`
// other than 1 keeps the float Gemm. `test` names the file apart from other test cases'.
std::string write_qdq_gemm(bool trans_b, float alpha, const std::string& test) {
  std::mt19937 rng(21);
  std::uniform_int_distribution<int> wd(-127, 127);
  std::vector<int8_t> w(kDepth * kCols);
  for (int8_t& v : w) v = static_cast<int8_t>(wd(rng));
  std::vector<float> ws, b;
  std::vector<int8_t> wz;
  for (int64_t n = 0; n < kCols; ++n) {
    ws.push_back(0.001f * static_cast<float>(n + 1));
    wz.push_back(static_cast<int8_t>(n % 3 - 1));
    b.push_back(0.25f * static_cast<float>(n) - 1.f);
  }
  ModelBuilder m;
  auto& g = m.graph();
  add_input(g, "xq", onnx::TensorProto::UINT8, {kRows, kDepth});
  add_initializer(g, tensor_f32("xs", {}, {0.05f}));
  add_initializer(g, tensor_u8("xz", {}, {3}));
  add_initializer(g, tensor_i8("wq", trans_b ? std::vector<int64_t>{kCols, kDepth} : std::vector<int64_t>{kDepth, kCols}, w));
  add_initializer(g, tensor_f32("ws", {kCols}, ws));
  add_initializer(g, tensor_i8("wz", {kCols}, wz));
  add_initializer(g, tensor_f32("b", {kCols}, b));
  add_node(g, "DequantizeLinear", {"xq", "xs", "xz"}, {"xf"}, "dqx");
  attr_int(add_node(g, "DequantizeLinear", {"wq", "ws", "wz"}, {"wf"}, "dqw"), "axis", trans_b ? 0 : 1);
  auto* gemm = add_node(g, "Gemm", {"xf", "wf", "b"}, {"y"}, "gemm");
  attr_int(gemm, "transB", trans_b ? 1 : 0);
  attr_float(gemm, "alpha", alpha);
  add_output(g, "y", elem::kFloat, {kRows, kCols});
  const std::string path =
      (std::filesystem::temp_directory_path() / ("fuse_qdq_gemm_" + test + std::to_string(trans_b) + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << m.bytes();
  return path;
}

}  // namespace

TEST_CASE("a QDQ Gemm becomes a dequantized 1x1 ConvInteger with the int8 sums, W no longer dequantized per run", "[passes][fusion][quantized]") {
  const bool trans_b = GENERATE(true, false);
  INFO("transB " << trans_b);
  const std::string path = write_qdq_gemm(trans_b, 1.f, "fused");
  Model ir = prepare_model(path, {});
  std::vector<std::string> ops;
  for (const auto& n : ir.main->nodes) ops.push_back(n->op_type);
  CHECK(ops == std::vector<std::string>{"Reshape", "ConvInteger", "Reshape"});

  // y[m, n] = float(sum_k (xq - 3) * (w - wz[n])) * (0.05f * ws[n]) + b[n]: the int8 product with
  // ONNX Runtime's dequantizing epilogue, bit for bit.
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> xd(0, 255);
  std::vector<uint8_t> xq(kRows * kDepth);
  for (uint8_t& v : xq) v = static_cast<uint8_t>(xd(rng));
  auto model = CompiledModel::compile(path, {});
  Session s(model);
  s.set_input("xq", kUint8, std::vector<int64_t>{kRows, kDepth}, xq.data(), xq.size());
  s.run();
  std::vector<float> got(kRows * kCols);
  std::memcpy(got.data(), s.output("y").data, got.size() * sizeof(float));
  std::mt19937 wrng(21);
  std::uniform_int_distribution<int> wd(-127, 127);
  std::vector<int> w(kDepth * kCols);
  for (int& v : w) v = wd(wrng);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t n = 0; n < kCols; ++n) {
      int32_t acc = 0;
      for (int64_t k = 0; k < kDepth; ++k) {
        const int wv = w[static_cast<size_t>(trans_b ? n * kDepth + k : k * kCols + n)];
        acc += (xq[static_cast<size_t>(r * kDepth + k)] - 3) * (wv - static_cast<int>(n % 3 - 1));
      }
      const float scale = 0.05f * (0.001f * static_cast<float>(n + 1));
      const float want = static_cast<float>(acc) * scale + (0.25f * static_cast<float>(n) - 1.f);
      CHECK(got[static_cast<size_t>(r * kCols + n)] == want);
    }
}

TEST_CASE("a QDQ Gemm with alpha other than 1 stays a float Gemm", "[passes][fusion][quantized]") {
  Model ir = prepare_model(write_qdq_gemm(true, 0.5f, "alpha"), {});
  bool gemm = false;
  for (const auto& n : ir.main->nodes) gemm = gemm || n->op_type == "Gemm";
  CHECK(gemm);
}

namespace {

// quantize_dynamic's layout for a MatMul of a [2, 3, K] activation by constant weights [K, N]:
// MatMulInteger(aq, B, a_zp, B_zp) [-> Cast -> Mul(scale[N]) -> Add(bias[N])], the zero point of
// aq a run-time input (DynamicQuantizeLinear's). uint8 weights about a zero point of 90 leave int8
// (oneDNN's float32 form); int8 ones have a zero point per column.
constexpr int64_t kBatch = 2, kSeq = 3, kK = 24, kN = 10;

struct MatMulCase {
  bool uint8_weights = false, dequantized = true;
  std::vector<int> w, w_zp;  // [K, N]; one, or N

  std::string write(const std::string& test) {
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> wd(uint8_weights ? 0 : -127, uint8_weights ? 255 : 127);
    w.resize(kK * kN);
    for (int& v : w) v = wd(rng);
    w_zp.clear();
    if (uint8_weights) w_zp = {90};
    else
      for (int64_t n = 0; n < kN; ++n) w_zp.push_back(static_cast<int>(n % 3) - 1);
    ModelBuilder m;
    auto& g = m.graph();
    add_input(g, "aq", onnx::TensorProto::UINT8, {kBatch, kSeq, kK});
    add_input(g, "a_zp", onnx::TensorProto::UINT8, {});
    if (uint8_weights) {
      add_initializer(g, tensor_u8("B", {kK, kN}, std::vector<uint8_t>(w.begin(), w.end())));
      add_initializer(g, tensor_u8("B_zp", {}, {90}));
    } else {
      add_initializer(g, tensor_i8("B", {kK, kN}, std::vector<int8_t>(w.begin(), w.end())));
      add_initializer(g, tensor_i8("B_zp", {kN}, std::vector<int8_t>(w_zp.begin(), w_zp.end())));
    }
    std::vector<float> scale, bias;
    for (int64_t n = 0; n < kN; ++n) {
      scale.push_back(0.003f * static_cast<float>(n + 1));
      bias.push_back(0.5f - 0.1f * static_cast<float>(n));
    }
    add_initializer(g, tensor_f32("scale", {kN}, scale));
    add_initializer(g, tensor_f32("bias", {kN}, bias));
    add_node(g, "MatMulInteger", {"aq", "B", "a_zp", "B_zp"}, {dequantized ? "acc" : "y"}, "mm");
    if (dequantized) {
      attr_int(add_node(g, "Cast", {"acc"}, {"accf"}, "cast"), "to", elem::kFloat);
      add_node(g, "Mul", {"accf", "scale"}, {"scaled"}, "mul");
      add_node(g, "Add", {"scaled", "bias"}, {"y"}, "add");
      add_output(g, "y", elem::kFloat, {kBatch, kSeq, kN});
    } else {
      add_output(g, "y", elem::kInt32, {kBatch, kSeq, kN});
    }
    const std::string path = (std::filesystem::temp_directory_path() / ("fuse_matmul_integer_" + test + ".onnx")).string();
    std::ofstream(path, std::ios::binary) << m.bytes();
    return path;
  }

  int32_t acc(const std::vector<uint8_t>& a, int a_zp, int64_t row, int64_t n) const {
    int32_t sum = 0;
    const int zw = w_zp[w_zp.size() == 1 ? 0 : static_cast<size_t>(n)];
    for (int64_t k = 0; k < kK; ++k)
      sum += (a[static_cast<size_t>(row * kK + k)] - a_zp) * (w[static_cast<size_t>(k * kN + n)] - zw);
    return sum;
  }
};

}  // namespace

TEST_CASE("a dynamically quantized MatMul becomes a dequantized 1x1 ConvInteger between Reshapes, the same bits",
          "[passes][fusion][quantized]") {
  MatMulCase c;
  c.uint8_weights = GENERATE(false, true);
  c.dequantized = GENERATE(true, false);
  INFO("uint8 weights " << c.uint8_weights << ", dequantized " << c.dequantized);
  const std::string path = c.write(std::to_string(c.uint8_weights) + std::to_string(c.dequantized));
  Model ir = prepare_model(path, {});
  std::vector<std::string> ops;
  for (const auto& n : ir.main->nodes) ops.push_back(n->op_type);
  CHECK(ops == std::vector<std::string>{"Reshape", "ConvInteger", "Reshape"});

  std::mt19937 rng(8);
  std::uniform_int_distribution<int> ad(0, 255);
  std::vector<uint8_t> a(kBatch * kSeq * kK);
  for (uint8_t& v : a) v = static_cast<uint8_t>(ad(rng));
  const uint8_t a_zp = 117;
  auto model = CompiledModel::compile(path, {});
  Session s(model);
  s.set_input("aq", kUint8, std::vector<int64_t>{kBatch, kSeq, kK}, a.data(), a.size());
  s.set_input("a_zp", kUint8, std::vector<int64_t>{}, &a_zp, 1);
  s.run();
  TensorRef y = s.output("y");
  REQUIRE(std::vector<int64_t>(y.shape.begin(), y.shape.end()) == std::vector<int64_t>{kBatch, kSeq, kN});
  for (int64_t r = 0; r < kBatch * kSeq; ++r)
    for (int64_t n = 0; n < kN; ++n) {
      const int32_t acc = c.acc(a, a_zp, r, n);
      const size_t at = static_cast<size_t>(r * kN + n);
      if (c.dequantized) {
        const float want = static_cast<float>(acc) * (0.003f * static_cast<float>(n + 1)) + (0.5f - 0.1f * static_cast<float>(n));
        CHECK(static_cast<const float*>(y.data)[at] == want);
      } else {
        CHECK(static_cast<const int32_t*>(y.data)[at] == acc);
      }
    }
}

TEST_CASE("a MatMulInteger whose weights are not constants stays as it is", "[passes][fusion][quantized]") {
  ModelBuilder m;
  auto& g = m.graph();
  add_input(g, "a", onnx::TensorProto::UINT8, {kSeq, kK});
  add_input(g, "b", onnx::TensorProto::INT8, {kK, kN});
  add_node(g, "MatMulInteger", {"a", "b"}, {"y"}, "mm");
  add_output(g, "y", elem::kInt32, {kSeq, kN});
  const std::string path = (std::filesystem::temp_directory_path() / "fuse_matmul_integer_runtime_b.onnx").string();
  std::ofstream(path, std::ios::binary) << m.bytes();
  Model ir = prepare_model(path, {});
  REQUIRE(ir.main->nodes.size() == 1);
  CHECK(ir.main->nodes[0]->op_type == "MatMulInteger");
}

TEST_CASE("a QLinearMatMul by constant weights becomes a 1x1 QLinearConv between Reshapes, requantizing like ONNX",
          "[passes][fusion][quantized]") {
  // y = saturate(round_half_even(sum (a - 7) * (b - b_zp[n]) * 0.5 * b_scale[n] / 4) + 100), with
  // power-of-two scales so the one rounding is the last; B per column int8.
  const bool uint8_weights = GENERATE(false, true);
  INFO("uint8 weights " << uint8_weights);
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> wd(uint8_weights ? 0 : -127, uint8_weights ? 255 : 127), ad(0, 255);
  std::vector<int> w(kK * kN), b_zp;
  for (int& v : w) v = wd(rng);
  std::vector<float> b_scale;
  for (int64_t n = 0; n < kN; ++n) {
    b_scale.push_back(n % 2 ? 0.25f : 0.125f);
    b_zp.push_back(uint8_weights ? 128 + static_cast<int>(n) : static_cast<int>(n % 3) - 1);
  }
  ModelBuilder m;
  auto& g = m.graph();
  add_input(g, "a", onnx::TensorProto::UINT8, {kBatch, kSeq, kK});
  add_initializer(g, tensor_f32("a_scale", {}, {0.5f}));
  add_initializer(g, tensor_u8("a_zp", {}, {7}));
  if (uint8_weights) {
    add_initializer(g, tensor_u8("b", {kK, kN}, std::vector<uint8_t>(w.begin(), w.end())));
    add_initializer(g, tensor_u8("b_zp", {kN}, std::vector<uint8_t>(b_zp.begin(), b_zp.end())));
  } else {
    add_initializer(g, tensor_i8("b", {kK, kN}, std::vector<int8_t>(w.begin(), w.end())));
    add_initializer(g, tensor_i8("b_zp", {kN}, std::vector<int8_t>(b_zp.begin(), b_zp.end())));
  }
  add_initializer(g, tensor_f32("b_scale", {kN}, b_scale));
  add_initializer(g, tensor_f32("y_scale", {}, {4.f}));
  add_initializer(g, tensor_u8("y_zp", {}, {100}));
  add_node(g, "QLinearMatMul", {"a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"}, {"y"}, "qmm");
  add_output(g, "y", onnx::TensorProto::UINT8, {kBatch, kSeq, kN});
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("fuse_qlinear_matmul_" + std::to_string(uint8_weights) + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << m.bytes();

  Model ir = prepare_model(path, {});
  std::vector<std::string> ops;
  for (const auto& n : ir.main->nodes) ops.push_back(n->op_type);
  CHECK(ops == std::vector<std::string>{"Reshape", "QLinearConv", "Reshape"});

  std::vector<uint8_t> a(kBatch * kSeq * kK);
  for (uint8_t& v : a) v = static_cast<uint8_t>(ad(rng));
  auto model = CompiledModel::compile(path, {});
  Session s(model);
  s.set_input("a", kUint8, std::vector<int64_t>{kBatch, kSeq, kK}, a.data(), a.size());
  s.run();
  const auto* y = static_cast<const uint8_t*>(s.output("y").data);
  for (int64_t r = 0; r < kBatch * kSeq; ++r)
    for (int64_t n = 0; n < kN; ++n) {
      int32_t acc = 0;
      for (int64_t k = 0; k < kK; ++k)
        acc += (a[static_cast<size_t>(r * kK + k)] - 7) * (w[static_cast<size_t>(k * kN + n)] - b_zp[static_cast<size_t>(n)]);
      const double v = std::nearbyint(static_cast<double>(acc) * 0.5 * b_scale[static_cast<size_t>(n)] / 4.0) + 100;
      CHECK(static_cast<int>(y[r * kN + n]) == static_cast<int>(std::clamp(v, 0.0, 255.0)));
    }
}

namespace {

// DequantizeLinear(xq uint8 [1, planes, h, w]) -> Resize (linear, half_pixel; to `out_h` x `out_w`
// by sizes) -> QuantizeLinear (int8, another scale and zero point) -> y. `block` also returns the
// float Resize output, which keeps the three nodes apart (the reference).
std::string write_qdq_resize(bool block, int64_t planes, int64_t h, int64_t w, int64_t out_h, int64_t out_w) {
  ModelBuilder m;
  auto& g = m.graph();
  add_input(g, "xq", onnx::TensorProto::UINT8, {1, planes, h, w});
  add_initializer(g, tensor_f32("xs", {}, {0.037f}));
  add_initializer(g, tensor_u8("xz", {}, {11}));
  add_initializer(g, tensor_f32("ys", {}, {0.0291f}));
  add_initializer(g, tensor_i8("yz", {}, {-5}));
  add_initializer(g, tensor_i64("sizes", {4}, {1, planes, out_h, out_w}));
  add_node(g, "DequantizeLinear", {"xq", "xs", "xz"}, {"xf"}, "dq");
  auto* r = add_node(g, "Resize", {"xf", "", "", "sizes"}, {"rf"}, "resize");
  add_attr(r, "mode", onnx::AttributeProto::STRING)->set_s("linear");
  add_node(g, "QuantizeLinear", {"rf", "ys", "yz"}, {"y"}, "q");
  add_output(g, "y", onnx::TensorProto::INT8, {1, planes, out_h, out_w});
  if (block) add_output(g, "rf", elem::kFloat, {1, planes, out_h, out_w});
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("fuse_qdq_resize_" + std::to_string(block) + "_" + std::to_string(planes) + "_" +
                             std::to_string(out_h) + "x" + std::to_string(out_w) + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << m.bytes();
  return path;
}

std::vector<int8_t> run_resize(const std::string& path, const std::vector<uint8_t>& x, std::vector<int64_t> shape,
                               int threads) {
  CompileOptions o;
  o.threads = threads;
  auto model = CompiledModel::compile(path, o);
  SessionOptions so;
  so.check_memory = true;
  so.adapt_to_load = false;
  Session s(model, so);
  s.set_input("xq", kUint8, shape, x.data(), x.size());
  s.run();
  const TensorRef y = s.output("y");
  const auto* p = static_cast<const int8_t*>(y.data);
  return {p, p + y.bytes};
}

}  // namespace

TEST_CASE("QDQ around a Resize becomes one Resize from bytes to bytes: the same bytes as the float one, on 1 and 2 threads",
          "[passes][fusion][quantized]") {
  // Doubling (the vectorized rows) and an odd size (the general linear rows); 16 planes of 64 x 64
  // are enough to resample planes on two threads.
  for (const auto& [planes, h, w, out_h, out_w] : {std::array<int64_t, 5>{16, 64, 64, 128, 128}, {3, 7, 9, 10, 13}}) {
    INFO(planes << " planes " << h << "x" << w << " to " << out_h << "x" << out_w);
    Model ir = prepare_model(write_qdq_resize(false, planes, h, w, out_h, out_w), {});
    REQUIRE(ir.main->nodes.size() == 1);
    const Node& n = *ir.main->nodes[0];
    CHECK(n.op_type == "Resize");
    CHECK(n.attr_int("memplan_quantized", 0) == 1);
    CHECK(n.inputs[0]->type.dtype == DType::Uint8);
    CHECK(n.outputs[0]->type.dtype == DType::Int8);
    Model plain = prepare_model(write_qdq_resize(true, planes, h, w, out_h, out_w), {});
    CHECK(plain.main->nodes.size() == 3);

    std::mt19937 rng(5);
    std::uniform_int_distribution<int> d(0, 255);
    std::vector<uint8_t> x(static_cast<size_t>(planes * h * w));
    for (uint8_t& v : x) v = static_cast<uint8_t>(d(rng));
    const std::vector<int64_t> shape{1, planes, h, w};
    const std::vector<int8_t> want = run_resize(write_qdq_resize(true, planes, h, w, out_h, out_w), x, shape, 1);
    for (int threads : {1, 2}) {
      INFO(threads << " threads");
      CHECK(run_resize(write_qdq_resize(false, planes, h, w, out_h, out_w), x, shape, threads) == want);
    }
  }
}

TEST_CASE("a QDQ Resize whose float output is read elsewhere, or that resizes more than its last two dims, stays a "
          "float Resize", "[passes][fusion][quantized]") {
  Model read = prepare_model(write_qdq_resize(true, 3, 7, 9, 14, 18), {});
  CHECK(read.main->nodes.size() == 3);
  // Resizing the planes' count too: the kernel resamples whole planes only, so nothing is fused.
  ModelBuilder m;
  auto& g = m.graph();
  add_input(g, "xq", onnx::TensorProto::UINT8, {1, 2, 4, 4});
  add_initializer(g, tensor_f32("s", {}, {0.1f}));
  add_initializer(g, tensor_u8("z", {}, {0}));
  add_initializer(g, tensor_i64("sizes", {4}, {1, 4, 8, 8}));
  add_node(g, "DequantizeLinear", {"xq", "s", "z"}, {"xf"}, "dq");
  add_node(g, "Resize", {"xf", "", "", "sizes"}, {"rf"}, "resize");
  add_node(g, "QuantizeLinear", {"rf", "s", "z"}, {"y"}, "q");
  add_output(g, "y", onnx::TensorProto::UINT8, {1, 4, 8, 8});
  const std::string path = (std::filesystem::temp_directory_path() / "fuse_qdq_resize_channels.onnx").string();
  std::ofstream(path, std::ios::binary) << m.bytes();
  Model ir = prepare_model(path, {});
  std::vector<std::string> ops;
  for (const auto& n : ir.main->nodes) ops.push_back(n->op_type);
  CHECK(ops == std::vector<std::string>{"DequantizeLinear", "Resize", "QuantizeLinear"});
}

namespace {

// DequantizeLinear(a uint8) + DequantizeLinear(b int8) -> QuantizeLinear (uint8) -> y, all
// [1, planes, 64, 64]; `block` also returns the float sum (the reference, unfused).
std::string write_qdq_add(bool block, int64_t planes) {
  ModelBuilder m;
  auto& g = m.graph();
  const Shape shape{1, planes, 64, 64};
  add_input(g, "a", onnx::TensorProto::UINT8, shape);
  add_input(g, "b", onnx::TensorProto::INT8, shape);
  add_initializer(g, tensor_f32("as", {}, {0.031f}));
  add_initializer(g, tensor_u8("az", {}, {7}));
  add_initializer(g, tensor_f32("bs", {}, {0.017f}));
  add_initializer(g, tensor_i8("bz", {}, {-3}));
  add_initializer(g, tensor_f32("ys", {}, {0.043f}));
  add_initializer(g, tensor_u8("yz", {}, {120}));
  add_node(g, "DequantizeLinear", {"a", "as", "az"}, {"af"}, "dqa");
  add_node(g, "DequantizeLinear", {"b", "bs", "bz"}, {"bf"}, "dqb");
  add_node(g, "Add", {"af", "bf"}, {"sum"}, "add");
  add_node(g, "QuantizeLinear", {"sum", "ys", "yz"}, {"y"}, "q");
  add_output(g, "y", onnx::TensorProto::UINT8, shape);
  if (block) add_output(g, "sum", elem::kFloat, shape);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("fuse_qdq_add_" + std::to_string(block) + "_" + std::to_string(planes) + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << m.bytes();
  return path;
}

}  // namespace

TEST_CASE("QDQ around an Add becomes one Add of 8-bit values: the same bytes as the float one, on 1 and 2 threads",
          "[passes][fusion][quantized]") {
  const int64_t planes = 32;  // 128 KiB: split across two threads
  Model ir = prepare_model(write_qdq_add(false, planes), {});
  REQUIRE(ir.main->nodes.size() == 1);
  const Node& n = *ir.main->nodes[0];
  CHECK(n.op_type == "Add");
  CHECK(n.attr_int("memplan_quantized", 0) == 1);
  CHECK(n.outputs[0]->type.dtype == DType::Uint8);
  CHECK(prepare_model(write_qdq_add(true, planes), {}).main->nodes.size() == 4);

  std::mt19937 rng(17);
  std::uniform_int_distribution<int> d(0, 255);
  const size_t count = static_cast<size_t>(planes * 64 * 64);
  std::vector<uint8_t> a(count), b(count);
  for (size_t i = 0; i < count; ++i) {
    a[i] = static_cast<uint8_t>(d(rng));
    b[i] = static_cast<uint8_t>(d(rng));
  }
  const std::vector<int64_t> shape{1, planes, 64, 64};
  auto run_add = [&](bool block, int threads) {
    CompileOptions o;
    o.threads = threads;
    SessionOptions so;
    so.check_memory = true;
    so.adapt_to_load = false;
    Session s(CompiledModel::compile(write_qdq_add(block, planes), o), so);
    s.set_input("a", kUint8, shape, a.data(), count);
    s.set_input("b", 3 /* int8 */, shape, b.data(), count);
    s.run();
    const auto* y = static_cast<const uint8_t*>(s.output("y").data);
    return std::vector<uint8_t>(y, y + count);
  };
  const std::vector<uint8_t> want = run_add(true, 1);
  for (int threads : {1, 2}) {
    INFO(threads << " threads");
    CHECK(run_add(false, threads) == want);
  }
}
