// Kernels timed for speed (pipeline/lean_kernels' choose_faster_variants): a kernel that reorders
// its input and its output around oneDNN's blocked kernel gives way to its leaner variant on the
// plain tensors where that is clearly faster. Which way the timing goes depends on the machine;
// what must hold either way: the plan lists every swap, so that loading it runs the same kernels,
// and both give the convolution's numbers.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "memplan/memplan.h"
#include "pipeline/lean_kernels.h"
#include "runtime/compiled_model_impl.h"
#include "support/model_builder.h"
#include "support/numeric.h"
#include "support/temp_dir.h"

using namespace memplan::test;

TEST_CASE("a variant at most 0.9x the time of the kernel reordering both ways replaces it, one about as fast does not",
          "[lean-kernels]") {
  CHECK(memplan::faster_variant_wins({0.84, 0.01}));
  CHECK(memplan::faster_variant_wins({0.9, 0.01}));
  CHECK_FALSE(memplan::faster_variant_wins({0.95, 0.01}));
  CHECK_FALSE(memplan::faster_variant_wins({1.3, 0.01}));
  CHECK_FALSE(memplan::faster_variant_wins({std::numeric_limits<double>::infinity(), 0}));  // not timed
}

namespace {

constexpr int64_t kIn = 64, kOut = 64, kLength = 600, kWidth = 3;
constexpr int64_t kOutLength = kLength - kWidth + 1;

const memplan::NodeExec& conv_of(const memplan::CompiledModel& m) {
  for (const memplan::NodeExec& ne : m.impl().nodes)
    if (ne.node && ne.node->op_type == "Conv") return ne;
  FAIL("no Conv");
  throw;
}

std::vector<float> run(const std::shared_ptr<const memplan::CompiledModel>& m, const std::vector<float>& x) {
  memplan::SessionOptions guard;
  guard.check_memory = true;
  memplan::Session session(m, guard);
  session.set_input("x", memplan::kFloat32, std::vector<int64_t>{1, kIn, kLength}, x.data(), x.size() * sizeof(float));
  session.run();
  const memplan::TensorRef y = session.output("y");
  std::vector<float> out(y.bytes / sizeof(float));
  std::memcpy(out.data(), y.data, y.bytes);
  return out;
}

}  // namespace

TEST_CASE("a convolution between plain tensors runs the kernel its timing picked, and a saved plan runs the same one",
          "[lean-kernels][runtime]") {
  // x (a graph input, plain) -> 1-D Conv, 3 wide, + bias -> y (a graph output, plain): oneDNN's
  // blocked kernel reorders both ways (a wav2vec2 feature extractor's layer, smaller).
  const std::vector<float> w = random_floats(static_cast<size_t>(kOut * kIn * kWidth), 1), b = random_floats(kOut, 2),
                           x = random_floats(static_cast<size_t>(kIn * kLength), 3);
  ModelBuilder mb;
  add_input(mb.graph(), "x", elem::kFloat, {1, kIn, kLength});
  add_initializer(mb.graph(), tensor_f32("w", {kOut, kIn, kWidth}, w));
  add_initializer(mb.graph(), tensor_f32("b", {kOut}, b));
  add_node(mb.graph(), "Conv", {"x", "w", "b"}, {"y"}, "conv");
  add_output(mb.graph(), "y", elem::kFloat, {1, kOut, kOutLength});
  TempDir dir("faster_variants");
  const std::string path = dir / "m.onnx";
  std::ofstream(path, std::ios::binary) << mb.bytes();

  memplan::CompileOptions untimed;
  untimed.tuning_seconds = 0;
  const auto first = memplan::CompiledModel::compile(path, untimed);
  REQUIRE(conv_of(*first).kernel->reorders_both_ways());  // the kernel the pass times
  CHECK(first->impl().plan.graphs[0].leaner_kernels.empty());

  // Under speed nothing is timed: oneDNN's kernel.
  memplan::CompileOptions speed;
  speed.prefer = "speed";
  const auto fastest = memplan::CompiledModel::compile(path, speed);
  CHECK(fastest->impl().plan.graphs[0].leaner_kernels.empty());
  CHECK(conv_of(*fastest).kernel->implementation() == conv_of(*first).kernel->implementation());

  const auto compiled = memplan::CompiledModel::compile(path, {});  // balanced
  const memplan::NodeExec& conv = conv_of(*compiled);
  // The first kernel, or a variant the plan lists.
  if (compiled->impl().plan.graphs[0].leaner_kernels.empty())
    CHECK(conv.kernel->implementation() == conv_of(*first).kernel->implementation());
  compiled->save_plan(dir / "m.mplan");
  const auto loaded = memplan::CompiledModel::load(path, dir / "m.mplan");
  CHECK(conv_of(*loaded).kernel->implementation() == conv.kernel->implementation());

  std::vector<double> want(static_cast<size_t>(kOut * kOutLength));
  for (int64_t o = 0; o < kOut; ++o)
    for (int64_t p = 0; p < kOutLength; ++p) {
      double s = b[static_cast<size_t>(o)];
      for (int64_t i = 0; i < kIn; ++i)
        for (int64_t t = 0; t < kWidth; ++t)
          s += static_cast<double>(w[static_cast<size_t>((o * kIn + i) * kWidth + t)]) * x[static_cast<size_t>(i * kLength + p + t)];
      want[static_cast<size_t>(o * kOutLength + p)] = s;
    }
  require_close(run(compiled, x), want, scaled(1e-4));
  require_close(run(loaded, x), want, scaled(1e-4));
}
