// float16 models (passes/float16_in_float32.h): computed in float32 as ONNX Runtime's CPU provider
// computes them, their float16 interface kept, the rounding of their own Casts to float16 kept.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/float16.h"
#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

namespace {

constexpr int32_t kHalf = onnx::TensorProto::FLOAT16;

onnx::TensorProto tensor_f16(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& v) {
  std::vector<uint16_t> bits;
  for (float f : v) bits.push_back(half_from_double(f));
  return raw_tensor(name, kHalf, std::move(dims), bits);
}

std::string write(ModelBuilder& mb, const std::string& name) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  return path;
}

}  // namespace

TEST_CASE("a float16 Conv model runs in float32 behind its float16 inputs and outputs", "[passes][float16]") {
  // x (float16) -> Conv with float16 weights, pads 1 -> Relu -> y (float16); Cast(y) -> z (float32).
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", kHalf, {1, 2, 4, 4});
  std::vector<float> w(2 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.125f;
  add_initializer(g, tensor_f16("W", {2, 2, 3, 3}, w));
  attr_ints(add_node(g, "Conv", {"x", "W"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"c"}, {"y"}, "relu");
  attr_int(add_node(g, "Cast", {"y"}, {"z"}, "to_float"), "to", onnx::TensorProto::FLOAT);
  add_output(g, "y", kHalf, {1, 2, 4, 4});
  add_output(g, "z", elem::kFloat, {1, 2, 4, 4});
  const std::string path = write(mb, "memplan_float16_conv.onnx");

  Model m = prepare_model(path, {});
  const Node* conv = find_node(*m.main, "conv");
  REQUIRE(conv);
  CHECK(conv->inputs[0]->type.dtype == DType::Float32);
  CHECK(conv->inputs[1]->constant->dtype == DType::Float32);
  CHECK(m.main->inputs[0]->type.dtype == DType::Float16);
  CHECK(m.main->outputs[0]->type.dtype == DType::Float16);

  auto model = CompiledModel::compile(path, {});
  Session s(model);
  std::vector<float> xf(32);
  std::vector<uint16_t> x(32);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = half_from_double(static_cast<double>(i % 5) * 0.3 - 0.5);
    xf[i] = half_to_float(x[i]);
  }
  s.set_input("x", kFloat16, std::vector<int64_t>{1, 2, 4, 4}, x.data(), x.size() * 2);
  s.run();
  const auto* y = static_cast<const uint16_t*>(s.output("y").data);
  const auto* z = static_cast<const float*>(s.output("z").data);
  for (int o = 0; o < 2; ++o)
    for (int h = 0; h < 4; ++h)
      for (int col = 0; col < 4; ++col) {
        double acc = 0;
        for (int c = 0; c < 2; ++c)
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              const int ih = h + kh - 1, iw = col + kw - 1;
              if (ih < 0 || iw < 0 || ih >= 4 || iw >= 4) continue;
              acc += static_cast<double>(xf[static_cast<size_t>((c * 4 + ih) * 4 + iw)]) *
                     half_to_float(half_from_double(w[static_cast<size_t>(((o * 2 + c) * 3 + kh) * 3 + kw)]));
            }
        const size_t i = static_cast<size_t>((o * 4 + h) * 4 + col);
        INFO("output " << i);
        // Summed in float32, then rounded once to float16: within half an ulp of float16 of the sum.
        CHECK(half_to_float(y[i]) == Approx(std::max(acc, 0.0)).epsilon(1.0 / 1024).margin(1e-6));
        CHECK(z[i] == half_to_float(y[i]));  // the model's Cast of y
      }
}

TEST_CASE("a model's own Cast to float16 still rounds, between float32 nodes", "[passes][float16]") {
  // x (float32) -> Cast to float16 -> Cast to float32 -> Relu -> y: y is x rounded to float16.
  ModelBuilder mb;
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {3});
  attr_int(add_node(g, "Cast", {"x"}, {"h"}, "to_half"), "to", kHalf);
  attr_int(add_node(g, "Cast", {"h"}, {"f"}, "to_float"), "to", onnx::TensorProto::FLOAT);
  add_node(g, "Relu", {"f"}, {"y"}, "relu");
  add_output(g, "y", elem::kFloat, {3});
  const std::string path = write(mb, "memplan_float16_round.onnx");
  auto model = CompiledModel::compile(path, {});
  Session s(model);
  const std::vector<float> x{1.0001f, 65520.f, 0.1f};
  s.set_input("x", kFloat32, std::vector<int64_t>{3}, x.data(), 12);
  s.run();
  const auto* y = static_cast<const float*>(s.output("y").data);
  CHECK(y[0] == 1.f);
  CHECK(std::isinf(y[1]));  // past float16's largest finite value
  CHECK(y[2] == half_to_float(half_from_double(0.1)));
}

TEST_CASE("whole-array float16 conversions give the element-by-element values", "[float16]") {
  // Every float16 bit pattern to float32 (NaNs stay NaN), and floats around every float16 value
  // (the halfway points between neighbours, tiny subnormals, past the largest finite value) back,
  // in arrays long enough for the vector path and its scalar tail.
  std::vector<uint16_t> halves(65536 + 5);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
  std::vector<float> widened(halves.size());
  floats_from_halves(halves.data(), widened.data(), halves.size());
  size_t differ = 0;
  for (size_t i = 0; i < halves.size(); ++i) {
    const float want = half_to_float(halves[i]);
    differ += std::isnan(want) ? !std::isnan(widened[i]) : std::memcmp(&want, &widened[i], 4) != 0;
  }
  CHECK(differ == 0);

  std::vector<float> floats;
  for (uint32_t b = 0; b < 0x7c00; ++b) {
    const float v = half_to_float(static_cast<uint16_t>(b)), next = half_to_float(static_cast<uint16_t>(b + 1));
    for (const float f : {v, std::nextafter(v, next), (v + next) / 2, std::nextafter((v + next) / 2, next)}) {
      floats.push_back(f);
      floats.push_back(-f);
    }
  }
  for (const float f : {65520.f, 65519.f, 1e9f, 1e-9f, 3e-8f, INFINITY, -INFINITY}) floats.push_back(f);
  floats.push_back(NAN);
  floats.resize(floats.size() + 3, 0.5f);  // a scalar tail
  std::vector<uint16_t> narrowed(floats.size());
  halves_from_floats(floats.data(), narrowed.data(), floats.size());
  differ = 0;
  for (size_t i = 0; i < floats.size(); ++i) {
    const uint16_t want = half_from_double(floats[i]);
    const bool nan = (want & 0x7c00) == 0x7c00 && (want & 0x3ff) != 0;
    differ += nan ? !((narrowed[i] & 0x7c00) == 0x7c00 && (narrowed[i] & 0x3ff) != 0) : narrowed[i] != want;
  }
  CHECK(differ == 0);
}
