// Malformed nodes that ONNX 1.12's inference functions would index past (found by fuzzing):
// each gets one line naming the file and the node, never a crash inside libonnx.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "memplan/memplan.h"
#include "support/model_builder.h"

using namespace memplan;
using namespace memplan::test;

namespace {

// Compiling `b` fails with an invalid-input error holding every one of `says`.
// ctest runs each test case in its own process, in parallel: every model gets a file of its own.
void refused(const ModelBuilder& b, const std::vector<std::string>& says) {
  static int count = 0;
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("memplan_hostile_" + std::to_string(getpid()) + "_" + std::to_string(count++) + ".onnx"))
                               .string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  try {
    CompiledModel::compile(path, {});
    FAIL("compiled");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidInput);
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
    CHECK_THAT(e.what(), Catch::Contains(path));
    for (const auto& s : says) CHECK_THAT(e.what(), Catch::Contains(s));
  }
  std::filesystem::remove(path);
}

ModelBuilder conv(const std::string& op, std::vector<int64_t> weight_dims, std::vector<int64_t> input_dims) {
  ModelBuilder b("hostile", 13);
  auto& g = b.graph();
  Shape in;
  for (int64_t d : input_dims) in.push_back(D(d));
  add_input(g, "x", elem::kFloat, in);
  uint64_t n = 1;
  for (int64_t d : weight_dims) n *= static_cast<uint64_t>(d);
  add_initializer(g, tensor_f32("w", weight_dims, std::vector<float>(n, 1.f)));
  add_node(g, op, {"x", "w"}, {"y"}, "conv");
  add_output_unranked(g, "y", elem::kFloat);
  return b;
}

}  // namespace

TEST_CASE("hostile nodes: a Conv whose weight rank differs from its input's, with no kernel_shape", "[hostile]") {
  refused(conv("Conv", {1, 1, 3}, {1, 1, 8, 8}), {"Conv node 'conv'", "weight 'w' has rank 3", "input rank 4"});
}

TEST_CASE("hostile nodes: a ConvTranspose with a rank-2 weight", "[hostile]") {
  refused(conv("ConvTranspose", {1, 1}, {1, 1, 8, 8}), {"ConvTranspose node 'conv'", "weight 'w' has rank 2"});
}

TEST_CASE("hostile nodes: a Conv input of rank 2, and attribute lists of the wrong length", "[hostile]") {
  refused(conv("Conv", {1, 1}, {1, 8}), {"Conv node 'conv'", "rank 2", "at least 3"});
  ModelBuilder b = conv("Conv", {1, 1, 3, 3}, {1, 1, 8, 8});
  attr_ints(b.graph().mutable_node(0), "pads", {1, 1});
  refused(b, {"Conv node 'conv'", "pads has 2 values", "need 4"});
}

TEST_CASE("hostile nodes: a stride, dilation or kernel size below 1 (found by fuzz_onnx: a division by zero)",
          "[hostile]") {
  for (const char* attr : {"strides", "dilations", "kernel_shape"}) {
    ModelBuilder b = conv("Conv", {1, 1, 3, 3}, {1, 1, 8, 8});
    attr_ints(b.graph().mutable_node(0), attr, {0, 2});
    refused(b, {"Conv node 'conv'", std::string("attribute ") + attr + " holds 0", "at least 1"});
  }
  ModelBuilder pool("hostile", 13);
  add_input(pool.graph(), "x", elem::kFloat, {1, 1, 8, 8});
  auto* n = add_node(pool.graph(), "MaxPool", {"x"}, {"y"}, "pool");
  attr_ints(n, "kernel_shape", {2, 2});
  attr_ints(n, "strides", {-1, 1});
  add_output_unranked(pool.graph(), "y", elem::kFloat);
  refused(pool, {"MaxPool node 'pool'", "strides holds -1"});
}

TEST_CASE("hostile nodes: a Conv kernel larger than its padded input is invalid, not a dynamic shape", "[hostile]") {
  refused(conv("Conv", {1, 1, 5, 5}, {1, 1, 3, 3}), {"Conv node 'conv'", "would have size -1", "do not fit"});
}

TEST_CASE("hostile nodes: LayerNormalization with three outputs and an absurd axis", "[hostile]") {
  ModelBuilder b("hostile", 17);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {2, 3});
  add_initializer(g, tensor_f32("scale", {3}, {1, 1, 1}));
  auto* ln = add_node(g, "LayerNormalization", {"x", "scale"}, {"y", "mean", "inv_std"}, "ln");
  attr_int(ln, "axis", 1000000);
  add_output_unranked(g, "y", elem::kFloat);
  add_output_unranked(g, "mean", elem::kFloat);
  add_output_unranked(g, "inv_std", elem::kFloat);
  refused(b, {"LayerNormalization node 'ln'", "axis 1000000 is out of range", "rank 2"});
}

// Found by fuzz_onnx: ConstantOfShape of a run-time shape with 91 elements makes a dynamic tensor
// of rank 91. A Session refuses ranks above the runtime's limit, but it threw after allocating the
// arena, and the arena leaked (LeakSanitizer in the sanitizer build reports it at exit).
TEST_CASE("hostile nodes: a Session refusing a tensor of too high a rank frees its arena", "[hostile]") {
  ModelBuilder b("hostile", 13);
  auto& g = b.graph();
  add_input(g, "shape", elem::kInt64, {91});
  add_node(g, "ConstantOfShape", {"shape"}, {"y"}, "fill");
  add_output_unranked(g, "y", elem::kFloat);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("memplan_hostile_rank_" + std::to_string(getpid()) + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  auto model = CompiledModel::compile(path, {});
  std::filesystem::remove(path);
  try {
    Session session(model);
    FAIL("a session was made");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("tensor 'y' has rank 91"));
  }
}

TEST_CASE("hostile nodes: a Shape with two outputs (found by fuzz_onnx: folding indexed past its one result)", "[hostile]") {
  ModelBuilder b("hostile", 13);
  auto& g = b.graph();
  add_input(g, "x", elem::kFloat, {D(1), D(3)});
  add_node(g, "Shape", {"x"}, {"s", "t"}, "shape");
  add_output_unranked(g, "s", elem::kInt64);
  refused(b, {"Shape node 'shape'"});
}

namespace {

ModelBuilder stft(Shape signal, int64_t frame_step) {
  ModelBuilder b("hostile", 17);
  auto& g = b.graph();
  add_input(g, "signal", elem::kFloat, std::move(signal));
  add_input(g, "window", elem::kFloat, {16});
  add_initializer(g, tensor_i64("step", {}, {frame_step}));
  add_node(g, "STFT", {"signal", "step", "window"}, {"y"}, "stft");
  add_output_unranked(g, "y", elem::kFloat);
  return b;
}

}  // namespace

TEST_CASE("hostile nodes: an STFT signal of rank 1 (crashed libonnx 1.12 with a constant frame_step)", "[hostile]") {
  refused(stft({128}, 8), {"STFT node 'stft'", "signal 'signal' has rank 1"});
}

TEST_CASE("hostile nodes: an STFT frame_step of 0 (ONNX's inference divides by it)", "[hostile]") {
  refused(stft({1, 128, 1}, 0), {"STFT node 'stft'", "frame_step 0 must be at least 1"});
}
