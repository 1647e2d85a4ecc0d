// Denormal floats while a session runs (runtime/denormals.h): flushed to zero by default, IEEE
// with SessionOptions::flush_denormals off; the calling thread's own setting comes back after the
// run either way.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "memplan/memplan.h"
#include "runtime/denormals.h"
#include "support/model_builder.h"
#include "support/temp_dir.h"

namespace {

constexpr int64_t kCount = 4096;  // large enough that a run's kernels use their threads

// y = x * 1e-20: with x = 1e-20 everywhere, 1e-40, a denormal.
std::string scale_model(const memplan::test::TempDir& dir) {
  namespace mt = memplan::test;
  mt::ModelBuilder mb;
  auto& g = mb.graph();
  mt::add_input(g, "x", mt::elem::kFloat, {1, kCount});
  mt::add_initializer(g, mt::tensor_f32("tiny", {1}, {1e-20f}));
  mt::add_node(g, "Mul", {"x", "tiny"}, {"y"}, "scale");
  mt::add_output(g, "y", mt::elem::kFloat, {1, kCount});
  const std::string path = dir / "scale.onnx";
  std::ofstream(path, std::ios::binary) << mb.bytes();
  return path;
}

std::vector<float> run(const std::string& model_path, bool flush, int threads) {
  memplan::CompileOptions c;
  c.threads = threads;
  auto model = memplan::CompiledModel::compile(model_path, c);
  memplan::SessionOptions o;
  o.flush_denormals = flush;
  o.threads = threads;
  o.adapt_to_load = false;
  memplan::Session s(model, o);
  const std::vector<float> x(kCount, 1e-20f);
  s.set_input("x", memplan::kFloat32, std::vector<int64_t>{1, kCount}, x.data(), x.size() * sizeof(float));
  const bool before = memplan::rt::flushes_denormals();
  s.run();
  CHECK(memplan::rt::flushes_denormals() == before);  // the caller's setting is back
  const auto* y = static_cast<const float*>(s.output("y").data);
  return std::vector<float>(y, y + kCount);
}

}  // namespace

TEST_CASE("a run flushes denormal results to zero by default, and keeps them with flush_denormals off",
          "[runtime][denormals]") {
  memplan::test::TempDir dir("denormals");
  const std::string path = scale_model(dir);
  const int threads = GENERATE(1, 2);
  INFO(threads << " thread(s)");
  REQUIRE_FALSE(memplan::rt::flushes_denormals());
  for (float v : run(path, true, threads)) REQUIRE(v == 0.f);
  for (float v : run(path, false, threads)) {
    REQUIRE(std::fpclassify(v) == FP_SUBNORMAL);
    REQUIRE(std::fabs(v - 1e-40f) <= 1e-44f);
  }
}
