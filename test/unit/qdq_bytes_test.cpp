// QDQ MaxPool and Concat on bytes (passes/fuse_quantized): DequantizeLinear -> MaxPool ->
// QuantizeLinear and DequantizeLinear... -> Concat -> QuantizeLinear run on the 8-bit tensors,
// an input quantized unlike the Concat's output requantized; the answers are the float path's bit
// for bit; and int8_layouts carries channels-last through them. Tagged [quantized]: ctest runs it
// again under DNNL_MAX_CPU_ISA=AVX2 (oneDNN's float32 form of QLinearConv, blocked layouts).
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <random>

#include "memplan/memplan.h"
#include "ir/fused_dequantize.h"
#include "pipeline/compile_pipeline.h"
#include "runtime/kernels/quantized/dnnl_qconv.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

using namespace memplan;
using namespace memplan::test;

namespace {

constexpr int64_t C = 16, H = 6;
constexpr int32_t kOnnxUint8 = onnx::TensorProto::UINT8;

struct Variant {
  bool float_outputs = false;   // cat and pool are graph outputs too: no fusion (the reference)
  float concat_scale = 0.08f;   // the Concat's QuantizeLinear (and conv_a's output) scale
};

// x -> Q(s) -> q -> conv_a (out scale sa) -> a -> DQ -> da,
//            q -> conv_b (out scale 0.05) -> b -> DQ -> db -> Concat -> cat -> Q(sa) -> DQ
//   -> MaxPool 2x2 -> pool -> Q(sa) -> qpool -> conv_c -> c -> DQ -> y
std::string write_fire(const TempDir& dir, const Variant& v, const std::string& name) {
  ModelBuilder m;
  auto& g = m.graph();
  add_input(g, "x", elem::kFloat, {1, C, H, H});
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> wd(-40, 40);
  auto weights = [&](const std::string& w, int64_t out, int64_t in) {
    std::vector<int8_t> data(static_cast<size_t>(out * in * 9));
    for (int8_t& e : data) e = static_cast<int8_t>(wd(rng));
    return raw_tensor(w, elem::kInt8, {out, in, 3, 3}, data);
  };
  add_initializer(g, tensor_f32("s", {}, {0.05f}));
  add_initializer(g, tensor_f32("sa", {}, {v.concat_scale}));
  add_initializer(g, tensor_f32("sb", {}, {0.05f}));
  add_initializer(g, raw_tensor("zp", kOnnxUint8, {}, std::vector<uint8_t>{128}));
  add_initializer(g, tensor_f32("ws", {}, {0.01f}));
  add_initializer(g, raw_tensor("wzp", elem::kInt8, {}, std::vector<int8_t>{0}));
  add_initializer(g, weights("wa", C, C));
  add_initializer(g, weights("wb", C, C));
  add_initializer(g, weights("wc", C, 2 * C));
  add_node(g, "QuantizeLinear", {"x", "s", "zp"}, {"q"}, "quantize");
  auto conv = [&](const std::string& n, const std::string& in, const std::string& in_scale, const std::string& w,
                  const std::string& out_scale, const std::string& out) {
    auto* node = add_node(g, "QLinearConv", {in, in_scale, "zp", w, "ws", "wzp", out_scale, "zp"}, {out}, n);
    attr_ints(node, "pads", {1, 1, 1, 1});
  };
  conv("conv_a", "q", "s", "wa", "sa", "a");
  conv("conv_b", "q", "s", "wb", "sb", "b");
  add_node(g, "DequantizeLinear", {"a", "sa", "zp"}, {"da"}, "dq_a");
  add_node(g, "DequantizeLinear", {"b", "sb", "zp"}, {"db"}, "dq_b");
  attr_int(add_node(g, "Concat", {"da", "db"}, {"cat"}, "concat"), "axis", 1);
  add_node(g, "QuantizeLinear", {"cat", "sa", "zp"}, {"qcat"}, "q_cat");
  add_node(g, "DequantizeLinear", {"qcat", "sa", "zp"}, {"dcat"}, "dq_cat");
  auto* pool = add_node(g, "MaxPool", {"dcat"}, {"pool"}, "pool");
  attr_ints(pool, "kernel_shape", {2, 2});
  attr_ints(pool, "strides", {2, 2});
  add_node(g, "QuantizeLinear", {"pool", "sa", "zp"}, {"qpool"}, "q_pool");
  conv("conv_c", "qpool", "sa", "wc", "s", "c");
  add_node(g, "DequantizeLinear", {"c", "s", "zp"}, {"y"}, "dq_y");
  add_output(g, "y", elem::kFloat, {1, C, H / 2, H / 2});
  if (v.float_outputs) {
    add_output(g, "cat", elem::kFloat, {1, 2 * C, H, H});
    add_output(g, "pool", elem::kFloat, {1, 2 * C, H / 2, H / 2});
  }
  const std::string path = dir / (name + ".onnx");
  std::ofstream(path, std::ios::binary) << m.bytes();
  return path;
}

const Node* node_named(const Model& m, const std::string& name) {
  for (const auto& n : m.main->nodes)
    if (n->name == name) return n.get();
  return nullptr;
}

std::vector<float> run(const std::string& path, const std::vector<float>& x) {
  auto model = CompiledModel::compile(path, {});
  Session s(model);
  s.set_input("x", kFloat32, std::vector<int64_t>{1, C, H, H}, x.data(), x.size() * sizeof(float));
  s.run();
  std::vector<float> y(static_cast<size_t>(C * (H / 2) * (H / 2)));
  std::memcpy(y.data(), s.output("y").data, y.size() * sizeof(float));
  return y;
}

}  // namespace

TEST_CASE("a QDQ Concat and MaxPool run on the bytes, the input quantized unlike the output requantized",
          "[quantized][layouts]") {
  TempDir dir("qdq_bytes");
  const Model m = prepare_model(write_fire(dir, {}, "fire"), {});
  const Node* concat = node_named(m, "concat");
  const Node* pool = node_named(m, "pool");
  REQUIRE(concat);
  REQUIRE(pool);
  CHECK(concat->outputs[0]->type.dtype == DType::Uint8);
  REQUIRE(concat->inputs.size() == 2);
  CHECK(concat->inputs[0]->name == "a");  // conv_a's output is quantized as the Concat's: as it is
  const Node* requantize = concat->inputs[1]->producer;
  REQUIRE(requantize);
  CHECK(requantize->op_type == "QuantizeLinear");
  CHECK(requantize->attr_int(kRequantizeAttr, 0) == 1);
  CHECK(requantize->inputs[0]->name == "b");
  CHECK(pool->inputs[0] == concat->outputs[0]);
  CHECK(pool->outputs[0]->type.dtype == DType::Uint8);
  int dequantize = 0;
  for (const auto& n : m.main->nodes) dequantize += n->op_type == "DequantizeLinear";
  CHECK(dequantize == 1);  // the graph output's only
  if (rt::quant::int8_products_exact()) {
    // Between oneDNN's int8 convolutions, through the requantizer, the Concat and the MaxPool.
    CHECK(concat->inputs[0]->channel_block == Value::kChannelsLast);
    CHECK(requantize->inputs[0]->channel_block == Value::kChannelsLast);
    CHECK(concat->inputs[1]->channel_block == Value::kChannelsLast);
    CHECK(concat->outputs[0]->channel_block == Value::kChannelsLast);
    CHECK(pool->outputs[0]->channel_block == Value::kChannelsLast);
  }
}

TEST_CASE("a QDQ Concat and MaxPool on bytes give the float path's bits", "[quantized][layouts]") {
  TempDir dir("qdq_bytes_run");
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-4.f, 4.f);
  std::vector<float> x(static_cast<size_t>(C * H * H));
  for (float& e : x) e = d(rng);
  Variant reference;
  reference.float_outputs = true;
  const Model ref = prepare_model(write_fire(dir, reference, "reference"), {});
  CHECK(node_named(ref, "concat")->outputs[0]->type.dtype == DType::Float32);  // the reference is unfused
  CHECK(node_named(ref, "pool")->outputs[0]->type.dtype == DType::Float32);
  CHECK(run(write_fire(dir, {}, "fire"), x) == run(write_fire(dir, reference, "reference"), x));
}

TEST_CASE("a QDQ Concat quantized with a subnormal scale stays float", "[quantized]") {
  TempDir dir("qdq_bytes_subnormal");
  Variant v;
  v.concat_scale = 1e-40f;  // (q - z) * s / s need not give q - z back
  const Model m = prepare_model(write_fire(dir, v, "subnormal"), {});
  CHECK(node_named(m, "concat")->outputs[0]->type.dtype == DType::Float32);
  CHECK(node_named(m, "pool")->outputs[0]->type.dtype == DType::Float32);
}
