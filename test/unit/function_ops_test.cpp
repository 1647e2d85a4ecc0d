// Ops that ONNX 1.12 defines by a function body, through the public API: each is compiled and run
// on a tiny model and its outputs checked against values worked out by hand. Ops whose schema has
// no inference function of its own (GreaterOrEqual, LessOrEqual, MeanVarianceNormalization) are
// typed through their bodies; ops with no kernel that takes the node (Softmax on doubles,
// LayerNormalization on float16, ...) run as their expanded bodies.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "memplan/memplan.h"
#include "pipeline/compile_pipeline.h"
#include "support/model_builder.h"
#include "support/numeric.h"

using namespace memplan;
using namespace memplan::test;

namespace {

constexpr int32_t kF16 = onnx::TensorProto::FLOAT16;
constexpr int32_t kF64 = onnx::TensorProto::DOUBLE;
constexpr int32_t kU8 = onnx::TensorProto::UINT8;
using Doubles = std::vector<double>;
using Dims = std::vector<int64_t>;

struct Feed {
  std::string name;
  int32_t dtype;
  Dims dims;
  Doubles values;
};

std::string save(const ModelBuilder& mb, const std::string& name) {
  const std::string path = (std::filesystem::temp_directory_path() / ("memplan_function_" + name + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << mb.bytes();
  return path;
}

std::vector<std::byte> bytes_of(int32_t dtype, const Doubles& values) {
  const DType t = static_cast<DType>(dtype);
  std::vector<std::byte> out(values.size() * dtype_size(t));
  for (size_t i = 0; i < values.size(); ++i) store_number(out.data() + i * dtype_size(t), t, values[i]);
  return out;
}

Doubles values_of(const TensorRef& r) {
  Tensor t;
  t.dtype = static_cast<DType>(r.dtype);
  t.dims.assign(r.shape.begin(), r.shape.end());
  t.bytes.assign(static_cast<const std::byte*>(r.data), static_cast<const std::byte*>(r.data) + r.bytes);
  Doubles out;
  for (uint64_t i = 0; i < t.element_count(); ++i) out.push_back(t.float_at(i));
  return out;
}

// Compiles the model, runs it once (in guard mode) on `feeds` and returns the named outputs.
std::vector<Doubles> run(const std::string& path, const std::vector<Feed>& feeds,
                         const std::vector<std::string>& outputs, const std::vector<int32_t>& dtypes = {}) {
  CompileOptions options;
  for (const Feed& f : feeds) options.input_shapes[f.name] = f.dims;
  auto model = CompiledModel::compile(path, options);
  Session s(model, SessionOptions{true});
  for (const Feed& f : feeds) {
    const auto bytes = bytes_of(f.dtype, f.values);
    s.set_input(f.name, f.dtype, f.dims, bytes.data(), bytes.size());
  }
  s.run();
  std::vector<Doubles> out;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorRef r = s.output(outputs[i]);
    if (i < dtypes.size()) CHECK(r.dtype == dtypes[i]);
    out.push_back(values_of(r));
  }
  return out;
}

// |got - want| <= tolerance * (1 + |want|), element by element.
void require_near(const Doubles& got, const Doubles& want, double tolerance) {
  require_close(got, want, abs_rel(tolerance, tolerance));
}

// The op types of the main graph once shapes are fixed (expansions done, folded nodes gone).
// The main graph's ops once shapes are inferred with the pipeline's rewrites, without the kernel
// folding that prepare_model adds (it would fold a node of constant inputs whichever path it took).
std::vector<std::string> ops_after_shapes(const std::string& path, const ShapeOptions& shapes) {
  Model m = import_model(path);
  infer_shapes(m, shapes, {.evaluate = {}, .rewrite = pipeline_rewrites(m)});
  std::vector<std::string> ops;
  for (const auto& n : m.main->nodes) ops.push_back(n->op_type);
  return ops;
}

bool has_op(const std::vector<std::string>& ops, const std::string& op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// Compiling must fail with one line of `kind` that holds every one of `parts`.
void require_compile_error(const std::string& path, const CompileOptions& options, ErrorKind kind,
                           const std::vector<std::string>& parts) {
  try {
    CompiledModel::compile(path, options);
  } catch (const Error& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(e.kind() == kind);
    CHECK(msg.find('\n') == std::string::npos);
    for (const std::string& p : parts) CHECK(msg.find(p) != std::string::npos);
    return;
  }
  FAIL("the model compiled");
}

// x (float32 [3]) compared with y by `op` at `opset`; the bool result feeds a Cast, so its type
// must be inferred (it is no graph output): the PyTorch export that failed.
std::string compare_then_cast(const std::string& op, int64_t opset, int32_t elem, int32_t to) {
  ModelBuilder mb("compare_cast", opset);
  auto& g = mb.graph();
  add_input(g, "x", elem, {3});
  add_input(g, "y", elem, {3});
  add_node(g, op, {"x", "y"}, {"cmp"}, "cmp");
  attr_int(add_node(g, "Cast", {"cmp"}, {"z"}, "cast"), "to", to);
  add_output(g, "z", to, {3});
  return save(mb, op + "_" + std::to_string(opset) + "_" + std::to_string(elem));
}

}  // namespace

TEST_CASE("GreaterOrEqual (opset 13) feeding a Cast: the bool is typed through the function body",
          "[function_ops]") {
  const std::string path = compare_then_cast("GreaterOrEqual", 13, elem::kFloat, elem::kFloat);
  auto out = run(path, {{"x", kFloat32, {3}, {1, 2, 3}}, {"y", kFloat32, {3}, {2, 2, 2}}}, {"z"}, {kFloat32});
  require_near(out[0], {0, 1, 1}, 0);
  CHECK(has_op(ops_after_shapes(path, {{{"x", {3}}, {"y", {3}}}, {}, {}}), "GreaterOrEqual"));  // its own kernel
}

TEST_CASE("GreaterOrEqual (opset 16) on int64 feeding a Cast to int32", "[function_ops]") {
  const std::string path = compare_then_cast("GreaterOrEqual", 16, elem::kInt64, elem::kInt32);
  auto out = run(path, {{"x", kInt64, {3}, {-5, 7, 0}}, {"y", kInt64, {3}, {-6, 7, 1}}}, {"z"}, {kInt32});
  require_near(out[0], {1, 1, 0}, 0);
}

TEST_CASE("LessOrEqual (opset 13) feeding a Cast: the bool is typed through the function body", "[function_ops]") {
  const std::string path = compare_then_cast("LessOrEqual", 13, elem::kFloat, elem::kFloat);
  auto out = run(path, {{"x", kFloat32, {3}, {1, 2, 3}}, {"y", kFloat32, {3}, {2, 2, 2}}}, {"z"}, {kFloat32});
  require_near(out[0], {1, 1, 0}, 0);
}

TEST_CASE("LessOrEqual (opset 16) on int32 feeding a Cast to int64", "[function_ops]") {
  const std::string path = compare_then_cast("LessOrEqual", 16, elem::kInt32, elem::kInt64);
  auto out = run(path, {{"x", kInt32, {3}, {4, -1, 9}}, {"y", kInt32, {3}, {4, -2, 10}}}, {"z"}, {kInt64});
  require_near(out[0], {1, 0, 1}, 0);
}

TEST_CASE("MeanVarianceNormalization: typed through its body (no inference function), run by its kernel",
          "[function_ops]") {
  // Default axes {0, 2, 3}: each channel is normalized over N, H, W. Channel 0 holds 1, 3 (mean 2,
  // variance 1), channel 1 holds 2, 6 (mean 4, variance 4): both become -1, 1. The result feeds a
  // Mul, so it is not typed by a graph output's declaration.
  ModelBuilder mb("mvn", 13);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {1, 2, 1, 2});
  add_initializer(g, tensor_f32("two", {}, {2}));
  add_node(g, "MeanVarianceNormalization", {"x"}, {"n"}, "mvn");
  add_node(g, "Mul", {"n", "two"}, {"y"}, "double");
  add_output(g, "y", elem::kFloat, {1, 2, 1, 2});
  auto out = run(save(mb, "mvn"), {{"x", kFloat32, {1, 2, 1, 2}, {1, 3, 2, 6}}}, {"y"}, {kFloat32});
  require_near(out[0], {-2, 2, -2, 2}, 1e-6);
}

TEST_CASE("MeanVarianceNormalization (opset 9) with axes on float64", "[function_ops]") {
  // axes {1}: each row of [[1, 2, 3], [10, 10, 10]]: (x - mean) / (std + 1e-9); a constant row is 0.
  ModelBuilder mb("mvn9", 9);
  auto& g = mb.graph();
  add_input(g, "x", kF64, {2, 3});
  attr_ints(add_node(g, "MeanVarianceNormalization", {"x"}, {"n"}, "mvn"), "axes", {1});
  add_node(g, "Abs", {"n"}, {"y"}, "abs");
  add_output(g, "y", kF64, {2, 3});
  auto out = run(save(mb, "mvn9"), {{"x", kF64, {2, 3}, {1, 2, 3, 10, 10, 10}}}, {"y"}, {kF64});
  const double a = 1 / std::sqrt(2.0 / 3);
  require_near(out[0], {a, 0, a, 0, 0, 0}, 1e-6);
}

TEST_CASE("Celu runs on its kernel", "[function_ops]") {
  // celu(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), alpha 2.
  ModelBuilder mb("celu", 12);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {3});
  attr_float(add_node(g, "Celu", {"x"}, {"c"}, "celu"), "alpha", 2.f);
  add_node(g, "Neg", {"c"}, {"y"}, "neg");
  add_output(g, "y", elem::kFloat, {3});
  auto out = run(save(mb, "celu"), {{"x", kFloat32, {3}, {-1, 0, 2}}}, {"y"});
  require_near(out[0], {-2 * (std::exp(-0.5) - 1), 0, -2}, 1e-6);
}

TEST_CASE("HardSwish runs on its kernel", "[function_ops]") {
  // x * max(0, min(1, x / 6 + 1/2))
  ModelBuilder mb("hardswish", 14);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {5});
  add_node(g, "HardSwish", {"x"}, {"h"}, "hs");
  add_node(g, "Neg", {"h"}, {"y"}, "neg");
  add_output(g, "y", elem::kFloat, {5});
  auto out = run(save(mb, "hardswish"), {{"x", kFloat32, {5}, {-4, -1, 0, 1, 4}}}, {"y"});
  require_near(out[0], {0, 1.0 / 3, 0, -2.0 / 3, -4}, 1e-6);
}

TEST_CASE("Softmax (opset 13): float32 on its kernel, float64 as its context-dependent body", "[function_ops]") {
  // exp(0), exp(ln 2), exp(ln 5) are 1, 2, 5: the softmax is 1/8, 2/8, 5/8.
  const Doubles x = {0, std::log(2.0), std::log(5.0), 0, 0, 0};
  const Doubles want = {0.125, 0.25, 0.625, 1.0 / 3, 1.0 / 3, 1.0 / 3};
  for (int32_t elem : {elem::kFloat, kF64}) {
    DYNAMIC_SECTION("element type " << elem) {
      ModelBuilder mb("softmax", 13);
      auto& g = mb.graph();
      add_input(g, "x", elem, {2, 3});
      add_node(g, "Softmax", {"x"}, {"s"}, "softmax");
      add_node(g, "Identity", {"s"}, {"y"}, "id");
      add_output(g, "y", elem, {2, 3});
      const std::string path = save(mb, "softmax_" + std::to_string(elem));
      auto out = run(path, {{"x", elem, {2, 3}, x}}, {"y"}, {elem});
      require_near(out[0], want, elem == kF64 ? 1e-12 : 1e-6);
      const auto ops = ops_after_shapes(path, {{{"x", {2, 3}}}, {}, {}});
      CHECK(has_op(ops, "Softmax") == (elem == elem::kFloat));
      CHECK(has_op(ops, "ReduceMax") == (elem == kF64));
    }
  }
}

TEST_CASE("Softmax (opset 13) on a shape known only at run time runs as its body", "[function_ops]") {
  // NonZero of (0, 2, 0, 5) is [[1, 3]]: the oneDNN kernel needs a static shape, the body does not.
  // softmax(1, 3) = (1, e^2) / (1 + e^2).
  ModelBuilder mb("softmax_dynamic", 13);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {4});
  add_node(g, "NonZero", {"x"}, {"nz"}, "nonzero");
  attr_int(add_node(g, "Cast", {"nz"}, {"f"}, "cast"), "to", elem::kFloat);
  add_node(g, "Softmax", {"f"}, {"y"}, "softmax");
  add_output_unranked(g, "y", elem::kFloat);
  const double e2 = std::exp(2.0);
  auto out = run(save(mb, "softmax_dynamic"), {{"x", kFloat32, {4}, {0, 2, 0, 5}}}, {"y"}, {kFloat32});
  require_near(out[0], {1 / (1 + e2), e2 / (1 + e2)}, 1e-6);
}

TEST_CASE("LogSoftmax (opset 13) on float64 runs as its context-dependent body", "[function_ops]") {
  // x - ln(sum(exp(x))): the row (0, ln 2, ln 5) sums to 8.
  ModelBuilder mb("logsoftmax", 13);
  auto& g = mb.graph();
  add_input(g, "x", kF64, {1, 3});
  add_node(g, "LogSoftmax", {"x"}, {"s"}, "logsoftmax");
  add_node(g, "Neg", {"s"}, {"y"}, "neg");
  add_output(g, "y", kF64, {1, 3});
  const std::string path = save(mb, "logsoftmax");
  auto out = run(path, {{"x", kF64, {1, 3}, {0, std::log(2.0), std::log(5.0)}}}, {"y"}, {kF64});
  require_near(out[0], {std::log(8.0), std::log(4.0), std::log(8.0 / 5)}, 1e-12);
  CHECK_FALSE(has_op(ops_after_shapes(path, {{{"x", {1, 3}}}, {}, {}}), "LogSoftmax"));
}

TEST_CASE("LogSoftmax (opset 13) on float32 runs on its kernel", "[function_ops]") {
  ModelBuilder mb("logsoftmax32", 13);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {3});
  add_node(g, "LogSoftmax", {"x"}, {"y"}, "logsoftmax");
  add_output(g, "y", elem::kFloat, {3});
  auto out = run(save(mb, "logsoftmax32"), {{"x", kFloat32, {3}, {0, std::log(2.0), std::log(5.0)}}}, {"y"});
  require_near(out[0], {-std::log(8.0), -std::log(4.0), -std::log(8.0 / 5)}, 1e-5);
}

namespace {

// LayerNormalization over the last axis of [[1, 2, 3], [2, 4, 6]] with scale (1, 1, 2) and bias
// (0, 1, 0): both rows normalize to (-sqrt(3/2), 0, sqrt(3/2)) (epsilon 1e-5 aside).
std::string layer_norm_model(int32_t elem, bool with_stats) {
  ModelBuilder mb("layernorm", 17);
  auto& g = mb.graph();
  add_input(g, "x", elem, {2, 3});
  add_input(g, "scale", elem, {3});
  add_input(g, "b", elem, {3});
  std::vector<std::string> outs = {"n"};
  if (with_stats) outs = {"n", "mean", "inv_std"};
  add_node(g, "LayerNormalization", {"x", "scale", "b"}, outs, "ln");
  add_node(g, "Identity", {"n"}, {"y"}, "id");
  add_output(g, "y", elem, {2, 3});
  if (with_stats) {
    add_output(g, "mean", elem::kFloat, {2, 1});
    add_output(g, "inv_std", elem::kFloat, {2, 1});
  }
  return save(mb, "layernorm_" + std::to_string(elem) + (with_stats ? "_stats" : ""));
}

}  // namespace

TEST_CASE("LayerNormalization: float32 on its kernel, float16 as its context-dependent body", "[function_ops]") {
  const double r = std::sqrt(1.5);
  for (int32_t elem : {elem::kFloat, kF16}) {
    DYNAMIC_SECTION("element type " << elem) {
      const std::string path = layer_norm_model(elem, true);
      auto out = run(path,
                     {{"x", elem, {2, 3}, {1, 2, 3, 2, 4, 6}},
                      {"scale", elem, {3}, {1, 1, 2}},
                      {"b", elem, {3}, {0, 1, 0}}},
                     {"y", "mean", "inv_std"}, {elem, kFloat32, kFloat32});
      const double tol = elem == kF16 ? 2e-3 : 1e-4;
      require_near(out[0], {-r, 1, 2 * r, -r, 1, 2 * r}, tol);
      require_near(out[1], {2, 4}, tol);                                        // row means
      require_near(out[2], {1 / std::sqrt(2.0 / 3), 1 / std::sqrt(8.0 / 3)}, tol);  // 1 / sqrt(variance)
      const auto ops = ops_after_shapes(path, {{{"x", {2, 3}}, {"scale", {3}}, {"b", {3}}}, {}, {}});
      CHECK(has_op(ops, "LayerNormalization") == (elem == elem::kFloat));
    }
  }
}

TEST_CASE("LayerNormalization on float16 without its optional outputs runs as its body", "[function_ops]") {
  const double r = std::sqrt(1.5);
  auto out = run(layer_norm_model(kF16, false),
                 {{"x", kF16, {2, 3}, {1, 2, 3, 2, 4, 6}}, {"scale", kF16, {3}, {1, 1, 2}}, {"b", kF16, {3}, {0, 1, 0}}},
                 {"y"}, {kF16});
  require_near(out[0], {-r, 1, 2 * r, -r, 1, 2 * r}, 2e-3);
}

// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss have kernels for float32 and float64; on
// float16 they expand, but their bodies' reductions have no float16 kernel (docs/FUNCTION_OPS.md).
TEST_CASE("NegativeLogLikelihoodLoss runs on its kernel (float32, float64)", "[function_ops]") {
  // Log-probabilities ln(1/4, 1/4, 1/2) and ln(1/2, 1/4, 1/4), targets 2 and 1: the mean loss is
  // (ln 2 + ln 4) / 2.
  for (int32_t elem : {elem::kFloat, kF64}) {
    DYNAMIC_SECTION("element type " << elem) {
      ModelBuilder mb("nll", 13);
      auto& g = mb.graph();
      add_input(g, "p", elem, {2, 3});
      add_input(g, "t", elem::kInt64, {2});
      add_node(g, "NegativeLogLikelihoodLoss", {"p", "t"}, {"l"}, "nll");
      add_node(g, "Identity", {"l"}, {"loss"}, "id");
      add_output(g, "loss", elem, {});
      const Doubles p = {std::log(0.25), std::log(0.25), std::log(0.5), std::log(0.5), std::log(0.25), std::log(0.25)};
      auto out = run(save(mb, "nll_" + std::to_string(elem)), {{"p", elem, {2, 3}, p}, {"t", kInt64, {2}, {2, 1}}},
                     {"loss"}, {elem});
      require_near(out[0], {1.5 * std::log(2.0)}, 1e-6);
    }
  }
}

TEST_CASE("SoftmaxCrossEntropyLoss runs on its kernel (float32, float64)", "[function_ops]") {
  // Scores (0, ln 2, ln 5) and (ln 3, ln 3, ln 2) have softmaxes (1, 2, 5) / 8 and (3, 3, 2) / 8;
  // labels 2 and 0: losses ln(8/5) and ln(8/3), reduction sum.
  for (int32_t elem : {elem::kFloat, kF64}) {
    DYNAMIC_SECTION("element type " << elem) {
      ModelBuilder mb("sce", 13);
      auto& g = mb.graph();
      add_input(g, "s", elem, {2, 3});
      add_input(g, "t", elem::kInt64, {2});
      auto* n = add_node(g, "SoftmaxCrossEntropyLoss", {"s", "t"}, {"l"}, "sce");
      add_attr(n, "reduction", onnx::AttributeProto::STRING)->set_s("sum");
      add_node(g, "Identity", {"l"}, {"loss"}, "id");
      add_output(g, "loss", elem, {});
      const std::string path = save(mb, "sce_" + std::to_string(elem));
      const Doubles s = {0, std::log(2.0), std::log(5.0), std::log(3.0), std::log(3.0), std::log(2.0)};
      auto out = run(path, {{"s", elem, {2, 3}, s}, {"t", kInt64, {2}, {2, 0}}}, {"loss"}, {elem});
      require_near(out[0], {std::log(8.0 / 5) + std::log(8.0 / 3)}, 1e-6);
      CHECK(has_op(ops_after_shapes(path, {{{"s", {2, 3}}, {"t", {2}}}, {}, {}}), "SoftmaxCrossEntropyLoss"));
    }
  }
}

TEST_CASE("Range runs on its kernel", "[function_ops]") {
  ModelBuilder mb("range", 11);
  auto& g = mb.graph();
  add_input(g, "start", elem::kInt64, {});
  add_input(g, "limit", elem::kInt64, {});
  add_input(g, "delta", elem::kInt64, {});
  add_node(g, "Range", {"start", "limit", "delta"}, {"y"}, "range");
  add_output(g, "y", elem::kInt64, {3});
  auto out = run(save(mb, "range"),
                 {{"start", kInt64, {}, {1}}, {"limit", kInt64, {}, {10}}, {"delta", kInt64, {}, {3}}}, {"y"}, {kInt64});
  require_near(out[0], {1, 4, 7}, 0);
}

TEST_CASE("DynamicQuantizeLinear runs on its kernel", "[function_ops]") {
  // x = (0, 2, -3, 4): scale = (4 - (-3)) / 255, zero point = round(3 / scale) = 109,
  // y = clamp(round(x / scale) + 109): 109, 73 + 109, 0, 255.
  ModelBuilder mb("dql", 11);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {4});
  add_node(g, "DynamicQuantizeLinear", {"x"}, {"q", "scale", "zp"}, "dql");
  add_node(g, "Identity", {"q"}, {"y"}, "id");
  add_output(g, "y", kU8, {4});
  add_output(g, "scale", elem::kFloat, {});
  add_output(g, "zp", kU8, {});
  auto out = run(save(mb, "dql"), {{"x", kFloat32, {4}, {0, 2, -3, 4}}}, {"y", "scale", "zp"}, {kUint8, kFloat32, kUint8});
  require_near(out[0], {109, 182, 0, 255}, 0);
  require_near(out[1], {7.0 / 255}, 1e-6);
  require_near(out[2], {109}, 0);
}

namespace {

// The window's size is a constant, so its length is known at compile time.
std::string window_model(const std::string& op, int32_t out_type, int64_t periodic, int64_t size) {
  ModelBuilder mb("window", 17);
  auto& g = mb.graph();
  add_initializer(g, tensor_i64("n", {}, {size}));
  auto* w = add_node(g, op, {"n"}, {"w"}, "window");
  attr_int(w, "output_datatype", out_type);
  attr_int(w, "periodic", periodic);
  add_node(g, "Identity", {"w"}, {"y"}, "id");
  add_output_unranked(g, "y", out_type);
  return save(mb, op + "_" + std::to_string(out_type) + "_" + std::to_string(periodic));
}

}  // namespace

TEST_CASE("HannWindow: float32 on its kernel, float16 as its body", "[function_ops]") {
  // Periodic, N = 4: 0.5 - 0.5 cos(2 pi n / 4) = 0, 1/2, 1, 1/2.
  for (int32_t t : {elem::kFloat, kF16}) {
    DYNAMIC_SECTION("output type " << t) {
      const std::string path = window_model("HannWindow", t, 1, 4);
      auto out = run(path, {}, {"y"}, {t});
      require_near(out[0], {0, 0.5, 1, 0.5}, 1e-3);
      CHECK(has_op(ops_after_shapes(path, {}), "HannWindow") == (t == elem::kFloat));
    }
  }
}

TEST_CASE("HammingWindow (symmetric) runs on its kernel", "[function_ops]") {
  // Symmetric, N = 3 (the period is N - 1 = 2): alpha - beta cos(pi n), alpha 25/46, beta 21/46.
  auto out = run(window_model("HammingWindow", kF64, 0, 3), {}, {"y"}, {kF64});
  require_near(out[0], {4.0 / 46, 1, 4.0 / 46}, 1e-6);
}

TEST_CASE("BlackmanWindow: float64 on its kernel, float16 as its body", "[function_ops]") {
  // Periodic, N = 4: 0.42 - 0.5 cos(pi n / 2) + 0.08 cos(pi n) = 0, 0.34, 1, 0.34.
  for (int32_t t : {kF64, kF16}) {
    DYNAMIC_SECTION("output type " << t) {
      auto out = run(window_model("BlackmanWindow", t, 1, 4), {}, {"y"}, {t});
      require_near(out[0], {0, 0.34, 1, 0.34}, 1e-3);
    }
  }
}

TEST_CASE("CastLike runs on its kernel", "[function_ops]") {
  ModelBuilder mb("castlike", 15);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {3});
  add_input(g, "like", elem::kInt64, {1});
  add_node(g, "CastLike", {"x", "like"}, {"c"}, "castlike");
  add_node(g, "Neg", {"c"}, {"y"}, "neg");
  add_output(g, "y", elem::kInt64, {3});
  auto out = run(save(mb, "castlike"), {{"x", kFloat32, {3}, {3, -2, 0}}, {"like", kInt64, {1}, {0}}}, {"y"}, {kInt64});
  require_near(out[0], {-3, 2, 0}, 0);
}

TEST_CASE("Bernoulli has no kernel: it is expanded, and its RandomUniformLike is reported", "[function_ops]") {
  ModelBuilder mb("bernoulli", 15);
  auto& g = mb.graph();
  add_input(g, "p", elem::kFloat, {4});
  add_node(g, "Bernoulli", {"p"}, {"b"}, "coin");
  add_node(g, "Identity", {"b"}, {"y"}, "id");
  add_output(g, "y", elem::kFloat, {4});
  const std::string path = save(mb, "bernoulli");
  const auto ops = ops_after_shapes(path, {{{"p", {4}}}, {}, {}});
  CHECK_FALSE(has_op(ops, "Bernoulli"));
  CHECK(has_op(ops, "RandomUniformLike"));
  CHECK(has_op(ops, "Cast"));
  CompileOptions options;
  options.input_shapes["p"] = {4};
  require_compile_error(path, options, ErrorKind::Unsupported, {"RandomUniformLike", "coin/"});
}

TEST_CASE("SequenceMap is refused in one line: sequences are not supported", "[function_ops]") {
  ModelBuilder mb("sequence_map", 17);
  auto& g = mb.graph();
  auto* in = g.add_input();
  in->set_name("seq");
  in->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(elem::kFloat);
  onnx::GraphProto body;
  body.set_name("map_body");
  add_input(body, "t", elem::kFloat, {2});
  add_node(body, "Neg", {"t"}, {"u"}, "neg");
  add_output(body, "u", elem::kFloat, {2});
  attr_graph(add_node(g, "SequenceMap", {"seq"}, {"out"}, "map"), "body", body);
  *g.add_output() = *in;
  g.mutable_output(0)->set_name("out");
  require_compile_error(save(mb, "sequence_map"), {}, ErrorKind::Unsupported, {"seq", "sequence"});
}

TEST_CASE("a function body expands inside an If branch taken at run time", "[function_ops]") {
  // The then-branch takes the softmax of the outer x (float64: the body), the else-branch -x.
  IfModel mb("if_softmax", 13);
  mb.condition_input("c").input("x", kF64, {3});
  mb.then_node("Softmax", {"x"}, value_info("s", kF64, {3}), "softmax");
  mb.else_node("Neg", {"x"}, value_info("n", kF64, {3}), "neg");
  mb.add_if();
  add_output(mb.graph(), "y", kF64, {3});
  const std::string path = save(mb, "if_softmax");
  const Doubles x = {0, std::log(2.0), std::log(5.0)};
  require_near(run(path, {{"c", kBool, {}, {1}}, {"x", kF64, {3}, x}}, {"y"})[0], {0.125, 0.25, 0.625}, 1e-12);
  require_near(run(path, {{"c", kBool, {}, {0}}, {"x", kF64, {3}, x}}, {"y"})[0], {-x[0], -x[1], -x[2]}, 1e-12);
}

TEST_CASE("a function body expands inside a Loop body, and a GreaterOrEqual there is typed", "[function_ops]") {
  // Two trips of x <- softmax(x) on float64 (the body), scanning x_new >= x_old as float64.
  // From (0, ln 2, ln 5): softmax (1, 2, 5) / 8, then softmax of that.
  ModelBuilder mb("loop_softmax", 13);
  auto& g = mb.graph();
  add_input(g, "x", kF64, {3});
  add_initializer(g, tensor_i64("trips", {}, {2}));
  add_initializer(g, tensor_bool("go", {}, {1}));
  onnx::GraphProto body = loop_body_skeleton("body");
  add_input(body, "x_in", kF64, {3});
  add_node(body, "Softmax", {"x_in"}, {"x_out"}, "softmax");
  add_node(body, "GreaterOrEqual", {"x_out", "x_in"}, {"ge"}, "ge");
  attr_int(add_node(body, "Cast", {"ge"}, {"ge_f"}, "cast"), "to", kF64);
  add_output(body, "x_out", kF64, {3});
  add_output(body, "ge_f", kF64, {3});
  attr_graph(add_node(g, "Loop", {"trips", "go", "x"}, {"y", "scan"}, "loop"), "body", body);
  add_output(g, "y", kF64, {3});
  add_output(g, "scan", kF64, {2, 3});
  const Doubles s1 = {0.125, 0.25, 0.625};
  const double sum = std::exp(s1[0]) + std::exp(s1[1]) + std::exp(s1[2]);
  const Doubles s2 = {std::exp(s1[0]) / sum, std::exp(s1[1]) / sum, std::exp(s1[2]) / sum};
  auto out = run(save(mb, "loop_softmax"), {{"x", kF64, {3}, {0, std::log(2.0), std::log(5.0)}}}, {"y", "scan"});
  require_near(out[0], s2, 1e-12);
  // Trip 1: 1/8 >= 0, 1/4 < ln 2, 5/8 < ln 5. Trip 2: s2 is about (0.264, 0.300, 0.436) against
  // (0.125, 0.25, 0.625).
  require_near(out[1], {1, 0, 0, 1, 1, 0}, 0);
}

TEST_CASE("a function body ONNX rejects is reported in one line naming the file and node", "[function_ops]") {
  // Softmax on float64 runs as its body, whose ReduceMax gets axis 2 of a rank-2 input.
  ModelBuilder mb("bad_softmax", 13);
  auto& g = mb.graph();
  add_input(g, "x", kF64, {2, 3});
  attr_int(add_node(g, "Softmax", {"x"}, {"y"}, "bad_softmax"), "axis", 2);
  add_output(g, "y", kF64, {2, 3});
  const std::string path = save(mb, "bad_softmax");
  CompileOptions options;
  options.input_shapes["x"] = {2, 3};
  require_compile_error(path, options, ErrorKind::InvalidInput, {path, "bad_softmax"});
}

TEST_CASE("GreaterOrEqual on shapes that do not broadcast: the body's error, in one line", "[function_ops]") {
  ModelBuilder mb("bad_compare", 13);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {3});
  add_input(g, "y", elem::kFloat, {4});
  add_node(g, "GreaterOrEqual", {"x", "y"}, {"c"}, "bad_ge");
  attr_int(add_node(g, "Cast", {"c"}, {"z"}, "cast"), "to", elem::kFloat);
  add_output_unranked(g, "z", elem::kFloat);
  const std::string path = save(mb, "bad_compare");
  require_compile_error(path, {}, ErrorKind::InvalidInput, {path, "GreaterOrEqual node 'bad_ge'", "Incompatible dimensions"});
}

TEST_CASE("LessOrEqual missing an input is refused in one line, not a crash", "[function_ops]") {
  ModelBuilder mb("short_compare", 13);
  auto& g = mb.graph();
  add_input(g, "x", elem::kFloat, {3});
  add_node(g, "LessOrEqual", {"x"}, {"c"}, "short_le");
  attr_int(add_node(g, "Cast", {"c"}, {"z"}, "cast"), "to", elem::kFloat);
  add_output_unranked(g, "z", elem::kFloat);
  const std::string path = save(mb, "short_compare");
  require_compile_error(path, {}, ErrorKind::InvalidInput, {path, "LessOrEqual node 'short_le'", "has 1 inputs"});
}
