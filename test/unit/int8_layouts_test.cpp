// The layouts of 8-bit activations between QLinearConvs (passes/int8_layouts): which values leave
// plain NCHW on a tiny hand-built QDQ-style chain, and that the answers do not change with them.
// ctest runs this file again under DNNL_MAX_CPU_ISA=AVX2, where the layout is channel-blocked
// for oneDNN's float32 convolutions instead of channels-last for its int8 ones.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <random>

#include "memplan/memplan.h"
#include "passes/assign_layouts.h"
#include "pipeline/compile_pipeline.h"
#include "runtime/kernels/quantized/dnnl_qconv.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

using namespace memplan;
using namespace memplan::test;

namespace {

constexpr int64_t C = 16, H = 6;
constexpr int32_t kOnnxUint8 = onnx::TensorProto::UINT8;

// x -> QuantizeLinear -> q -> conv_a -> a -> conv_b (depthwise) -> b -> conv_c -> c -> DequantizeLinear -> y,
// and b also -> DequantizeLinear -> y_b. With `side_output`, a is a graph output too.
// `runtime_weights`: conv_c's weights are a graph input (no oneDNN kernel: memplan's loops).
std::string write_chain(const TempDir& dir, bool side_output, bool runtime_weights) {
  ModelBuilder m;
  auto& g = m.graph();
  add_input(g, "x", elem::kFloat, {1, C, H, H});
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> wd(-60, 60);
  auto weights = [&](const std::string& name, int64_t in_channels) {
    std::vector<int8_t> w(static_cast<size_t>(C * in_channels * 9));
    for (int8_t& v : w) v = static_cast<int8_t>(wd(rng));
    return raw_tensor(name, elem::kInt8, {C, in_channels, 3, 3}, w);
  };
  add_initializer(g, tensor_f32("s", {}, {0.05f}));
  add_initializer(g, raw_tensor("zp", kOnnxUint8, {}, std::vector<uint8_t>{128}));
  add_initializer(g, tensor_f32("ws", {}, {0.01f}));
  add_initializer(g, raw_tensor("wzp", elem::kInt8, {}, std::vector<int8_t>{0}));
  add_initializer(g, weights("wa", C));
  add_initializer(g, weights("wb", 1));
  if (runtime_weights) add_input(g, "wc", elem::kInt8, {C, C, 3, 3});
  else add_initializer(g, weights("wc", C));
  add_node(g, "QuantizeLinear", {"x", "s", "zp"}, {"q"}, "quantize");
  auto conv = [&](const std::string& name, const std::string& in, const std::string& w, const std::string& out,
                  int64_t group) {
    auto* n = add_node(g, "QLinearConv", {in, "s", "zp", w, "ws", "wzp", "s", "zp"}, {out}, name);
    attr_ints(n, "pads", {1, 1, 1, 1});
    attr_int(n, "group", group);
  };
  conv("conv_a", "q", "wa", "a", 1);
  conv("conv_b", "a", "wb", "b", C);
  conv("conv_c", "b", "wc", "c", 1);
  add_node(g, "DequantizeLinear", {"c", "s", "zp"}, {"y"}, "dequantize");
  add_node(g, "DequantizeLinear", {"b", "s", "zp"}, {"y_b"}, "dequantize_b");
  add_output(g, "y", elem::kFloat, {1, C, H, H});
  add_output(g, "y_b", elem::kFloat, {1, C, H, H});
  if (side_output) add_output(g, "a", kOnnxUint8, {1, C, H, H});
  const std::string path = dir / ("chain" + std::to_string(side_output) + std::to_string(runtime_weights) + ".onnx");
  std::ofstream(path, std::ios::binary) << m.bytes();
  return path;
}

int layout_of(const Model& m, const std::string& value) {
  for (const auto& v : m.main->values)
    if (v->name == value) return v->channel_block;
  FAIL("no value " << value);
  return -2;
}

// The layout oneDNN's kernels for this ISA read fastest.
int int8_layout() { return rt::quant::int8_products_exact() ? Value::kChannelsLast : preferred_channel_block(); }

std::vector<std::vector<float>> run(const std::string& path, const std::vector<float>& x, bool runtime_weights) {
  // No kernel timing: under load it may pick another (leaner) kernel for one of the two runs,
  // whose requantization rounds an element the other way, and the bits compared would differ.
  CompileOptions options;
  options.tuning_seconds = 0;
  auto model = CompiledModel::compile(path, options);
  Session s(model);
  s.set_input("x", kFloat32, std::vector<int64_t>{1, C, H, H}, x.data(), x.size() * sizeof(float));
  std::vector<int8_t> wc(static_cast<size_t>(C * C * 9));
  for (size_t i = 0; i < wc.size(); ++i) wc[i] = static_cast<int8_t>(static_cast<int>(i % 101) - 50);
  if (runtime_weights) s.set_input("wc", kInt8, std::vector<int64_t>{C, C, 3, 3}, wc.data(), wc.size());
  s.run();
  std::vector<std::vector<float>> out;
  for (const char* name : {"y", "y_b"}) {
    std::vector<float> v(static_cast<size_t>(C * H * H));
    std::memcpy(v.data(), s.output(name).data, v.size() * sizeof(float));
    out.push_back(v);
  }
  return out;
}

}  // namespace

TEST_CASE("int8 layouts: a value one QLinearConv writes and only QLinearConvs read leaves plain NCHW", "[layouts][quantized]") {
  TempDir dir("int8_layouts");
  const Model m = prepare_model(write_chain(dir, false, false), {});
  if (preferred_channel_block() == 0 && !rt::quant::int8_products_exact()) {
    CHECK(layout_of(m, "a") == 0);  // no oneDNN layout to prefer (below AVX2)
    return;
  }
  CHECK(layout_of(m, "a") == int8_layout());
  // b is also read by a DequantizeLinear, q is a QuantizeLinear's, c goes to one: all stay plain.
  CHECK(layout_of(m, "b") == 0);
  CHECK(layout_of(m, "q") == 0);
  CHECK(layout_of(m, "c") == 0);
}

TEST_CASE("int8 layouts: graph outputs and the neighbours of a QLinearConv on memplan's loops stay plain", "[layouts][quantized]") {
  TempDir dir("int8_layouts_plain");
  CHECK(layout_of(prepare_model(write_chain(dir, true, false), {}), "a") == 0);  // a graph output
  // conv_c's weights come at run time, so it runs memplan's loops, which read NCHW only; b is
  // plain anyway, and a (between two oneDNN kernels) still moves.
  const Model m = prepare_model(write_chain(dir, false, true), {});
  CHECK(layout_of(m, "b") == 0);
  if (preferred_channel_block() > 0 || rt::quant::int8_products_exact()) CHECK(layout_of(m, "a") == int8_layout());
}

TEST_CASE("int8 layouts: the chain gives the same bits as with every value plain", "[layouts][quantized]") {
  TempDir dir("int8_layouts_run");
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-3.f, 3.f);
  std::vector<float> x(static_cast<size_t>(C * H * H));
  for (float& v : x) v = d(rng);
  for (const bool runtime_weights : {false, true}) {
    INFO("conv_c's weights at run time: " << runtime_weights);
    // a as a graph output keeps every value plain: the reference.
    CHECK(run(write_chain(dir, false, runtime_weights), x, runtime_weights) ==
          run(write_chain(dir, true, runtime_weights), x, runtime_weights));
  }
}
