// Patch regions (passes/patch_regions, runtime/kernels/dnnl/patch_chain.h, pipeline/patch_search):
// hand-built chains of a CNN's first layers run tile by tile must give the whole-tensor plan's
// numbers, at 1 and 2 threads, in guard mode, in a smaller arena; a budget only patches reach is
// met through the public interface, and its plan file loads; runs patches cannot carry are
// refused with the node and the reason.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "memplan/memplan.h"
#include "passes/patch_regions.h"
#include "pipeline/compile_pipeline.h"
#include "plan/plan_file.h"
#include "runtime/compiled_model_impl.h"
#include "runtime/kernels/dnnl/patch_chain.h"
#include "support/model_builder.h"
#include "support/numeric.h"
#include "support/temp_dir.h"

namespace {

using memplan::test::D;
using memplan::test::Shape;
using Floats = std::vector<float>;
using memplan::test::elem::kFloat;

// A model of Conv and MaxPool layers written one call each, with random weights.
class Chain {
 public:
  Chain(const std::string& input, const Shape& shape) { memplan::test::add_input(b_.graph(), input, kFloat, shape); }

  struct Conv {
    int64_t in_ch, out_ch, k = 3, stride = 1, pad = 1, dilation = 1, group = 1;
    bool relu = false;
  };
  // out = [Relu](Conv(in)), `add`: + that tensor (fused into the Conv as its addend).
  void conv(const std::string& name, const std::string& in, const std::string& out, const Conv& c,
            const std::string& add = "") {
    const std::string w = name + "_w", bias = name + "_b";
    memplan::test::add_initializer(
        b_.graph(), memplan::test::tensor_f32(w, {c.out_ch, c.in_ch / c.group, c.k, c.k},
                                              memplan::test::random_floats(static_cast<size_t>(c.out_ch * c.in_ch / c.group * c.k * c.k), seed_++,
                                                                           -0.3f, 0.3f)));
    memplan::test::add_initializer(b_.graph(), memplan::test::tensor_f32(bias, {c.out_ch}, memplan::test::random_floats(static_cast<size_t>(c.out_ch), seed_++)));
    std::string y = add.empty() && !c.relu ? out : name + "_y";
    auto* n = memplan::test::add_node(b_.graph(), "Conv", {in, w, bias}, {y}, name);
    memplan::test::attr_ints(n, "strides", {c.stride, c.stride});
    memplan::test::attr_ints(n, "pads", {c.pad, c.pad, c.pad, c.pad});
    memplan::test::attr_ints(n, "dilations", {c.dilation, c.dilation});
    memplan::test::attr_int(n, "group", c.group);
    if (!add.empty()) {
      const std::string s = c.relu ? name + "_sum" : out;
      memplan::test::add_node(b_.graph(), "Add", {y, add}, {s}, name + "_add");
      y = s;
    }
    if (c.relu) memplan::test::add_node(b_.graph(), "Relu", {y}, {out}, name + "_relu");
  }
  void max_pool(const std::string& name, const std::string& in, const std::string& out, int64_t k, int64_t stride, int64_t pad) {
    auto* n = memplan::test::add_node(b_.graph(), "MaxPool", {in}, {out}, name);
    memplan::test::attr_ints(n, "kernel_shape", {k, k});
    memplan::test::attr_ints(n, "strides", {stride, stride});
    memplan::test::attr_ints(n, "pads", {pad, pad, pad, pad});
  }
  void constant(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    memplan::test::add_initializer(b_.graph(), memplan::test::tensor_f32(name, std::move(dims), values));
  }
  void node(const std::string& op, const std::vector<std::string>& in, const std::string& out, const std::string& name) {
    memplan::test::add_node(b_.graph(), op, in, {out}, name);
  }
  onnx::GraphProto& graph() { return b_.graph(); }
  std::string write(const memplan::test::TempDir& dir, const std::string& output, const Shape& shape) {
    memplan::test::add_output(b_.graph(), output, kFloat, shape);
    const std::string path = dir / "m.onnx";
    std::ofstream(path, std::ios::binary) << b_.bytes();
    return path;
  }

 private:
  memplan::test::ModelBuilder b_;
  uint32_t seed_ = 11;
};

std::shared_ptr<const memplan::CompiledModel> compile(const std::string& path, std::vector<memplan::PatchRegion> regions = {}) {
  memplan::PlanOptions planning;
  planning.patch_regions = std::move(regions);
  return memplan::finish_compilation(memplan::compile_model(path, {}, planning));
}

// The model's one output, on the same random input, in guard mode at `threads` threads.
Floats run(const std::shared_ptr<const memplan::CompiledModel>& m, int threads) {
  memplan::SessionOptions o;
  o.check_memory = true;
  o.threads = std::min(threads, m->threads());
  o.adapt_to_load = false;
  memplan::Session session(m, o);
  const memplan::TensorInfo& in = m->inputs().front();
  const Floats x = memplan::test::random_floats(in.capacity_bytes / sizeof(float), 5);
  session.set_input(in.name, in.dtype, in.shape, x.data(), x.size() * sizeof(float));
  session.run();
  const memplan::TensorRef y = session.output(m->outputs().front().name);
  Floats out(y.bytes / sizeof(float));
  std::memcpy(out.data(), y.data, y.bytes);
  return out;
}

const memplan::rt::Kernel* patch_kernel(const memplan::CompiledModel& m) {
  for (const memplan::NodeExec& ne : m.impl().nodes)
    if (ne.node->op_type == memplan::rt::dnnl_kernels::kPatchChainOp) return ne.kernel.get();
  return nullptr;
}

// The chain run in tiles of r.tile_rows gives the whole plan's numbers at 1 and 2 threads, in a
// smaller arena, computing halos again and keeping rows; returns the patched model (halos again).
std::shared_ptr<const memplan::CompiledModel> require_same_as_whole(const std::string& path, memplan::PatchRegion r) {
  const auto whole = compile(path);
  std::shared_ptr<const memplan::CompiledModel> first;
  for (bool keep : {false, true}) {
    r.keep_rows = keep;
    const auto tiled = compile(path, {r});
    const memplan::rt::Kernel* k = patch_kernel(*tiled);
    REQUIRE(k != nullptr);
    INFO(k->implementation());
    CHECK(tiled->arena_bytes() < whole->arena_bytes());
    REQUIRE(tiled->impl().plan.patch_regions.size() == 1);
    CHECK(tiled->impl().plan.patch_regions[0].tile_rows == r.tile_rows);
    CHECK(tiled->impl().plan.patch_regions[0].keep_rows == keep);
    if (keep) CHECK(tiled->impl().plan.patch_regions[0].recomputed_macs == 0);
    for (int threads : {1, 2}) {
      INFO("threads " << threads);
      memplan::test::require_close(run(tiled, threads), run(whole, threads), memplan::test::abs_rel(1e-4, 1e-4));
    }
    if (!first) first = tiled;
  }
  return first;
}

}  // namespace

TEST_CASE("a chain with stride 2 and padding, whose last tile is short, gives the whole plan's numbers",
          "[patches][runtime]") {
  memplan::test::TempDir dir("patch_stride");
  Chain c("x", {1, 3, 93, 61});
  c.conv("c0", "x", "a", {3, 16, 3, 2, 1, 1, 1, true});  // 47 x 31
  c.conv("c1", "a", "b", {16, 16, 3, 1, 1, 1, 1, true});
  c.conv("c2", "b", "y", {16, 8, 1, 1, 0});
  const std::string path = c.write(dir, "y", {1, 8, 47, 31});
  // 47 rows in tiles of 5: the last has 2.
  const auto m = require_same_as_whole(path, {"c0", "c2", 5});
  CHECK(patch_kernel(*m)->implementation().find("in 10 tiles of 5 rows") != std::string::npos);
}

TEST_CASE("a chain with a dilated Conv and a depthwise Conv gives the whole plan's numbers", "[patches][runtime]") {
  memplan::test::TempDir dir("patch_dilated");
  Chain c("x", {1, 8, 64, 40});
  c.conv("dil", "x", "a", {8, 16, 3, 1, 2, 2, 1, true});
  c.conv("dw", "a", "b", {16, 16, 3, 1, 1, 1, 16, true});
  c.conv("pw", "b", "y", {16, 8, 1, 1, 0});
  const std::string path = c.write(dir, "y", {1, 8, 64, 40});
  require_same_as_whole(path, {"dil", "pw", 6});
}

TEST_CASE("a residual Add inside the chain, fused into its Conv, gives the whole plan's numbers", "[patches][runtime]") {
  memplan::test::TempDir dir("patch_residual");
  Chain c("x", {1, 8, 33, 20});
  c.conv("expand", "x", "a", {8, 16, 1, 1, 0, 1, 1, true});
  c.conv("mix", "a", "b", {16, 16, 3, 1, 1, 1, 1, true}, "a");  // Relu(Conv(a) + a)
  c.conv("down", "b", "y", {16, 24, 3, 2, 1});
  const std::string path = c.write(dir, "y", {1, 24, 17, 10});
  const auto m = require_same_as_whole(path, {"expand", "down", 4});
  // The Add is the Conv's now: three layers.
  CHECK(m->impl().plan.patch_regions[0].layers == 3);
}

TEST_CASE("a ResNet stem, Conv then MaxPool then a residual block, gives the whole plan's numbers", "[patches][runtime]") {
  memplan::test::TempDir dir("patch_stem");
  Chain c("x", {1, 3, 64, 48});
  c.conv("stem", "x", "a", {3, 16, 7, 2, 3, 1, 1, true});  // 32 x 24
  c.max_pool("pool", "a", "p", 3, 2, 1);                   // 16 x 12
  c.conv("b1", "p", "q", {16, 16, 3, 1, 1, 1, 1, true});
  c.conv("b2", "q", "y", {16, 16, 3, 1, 1, 1, 1, true}, "p");
  const std::string path = c.write(dir, "y", {1, 16, 16, 12});
  const auto m = require_same_as_whole(path, {"stem", "b2", 3});
  CHECK(m->impl().plan.patch_regions[0].recomputed_macs > 0);  // the halos of tiles of 3 rows
  // One tile as tall as the output recomputes nothing.
  const auto once = compile(path, {{"stem", "b2", 16}});
  CHECK(once->impl().plan.patch_regions[0].tiles == 1);
  CHECK(once->impl().plan.patch_regions[0].recomputed_macs == 0);
}

TEST_CASE("pointwise layers between the convolutions, and an input's normalization, run in the chain",
          "[patches][runtime]") {
  memplan::test::TempDir dir("patch_pointwise");
  Chain c("x", {1, 3, 96, 80});
  c.constant("mean", {1, 3, 1, 1}, {0.4f, 0.5f, 0.6f});
  c.constant("std", {3, 1, 1}, {0.2f, 0.25f, 0.3f});
  c.constant("slope", {16, 1, 1}, memplan::test::random_floats(16, 21, 0.f, 0.5f));
  c.constant("one", {}, {1.f});
  c.node("Sub", {"x", "mean"}, "centred", "norm_sub");
  c.node("Div", {"centred", "std"}, "normed", "norm_div");
  c.conv("c0", "normed", "a", {3, 16, 3, 2, 1});  // 48 x 40
  c.node("PRelu", {"a", "slope"}, "p", "prelu");
  c.conv("c1", "p", "b", {16, 16, 3, 1, 1});
  c.node("Sigmoid", {"b"}, "g", "gate");
  c.node("Mul", {"p", "g"}, "gated", "gated");  // two tensors of the chain
  c.node("Sub", {"one", "gated"}, "flipped", "flip");  // a constant first
  c.conv("c2", "flipped", "y", {16, 8, 1, 1, 0});
  const std::string path = c.write(dir, "y", {1, 8, 48, 40});
  const auto m = require_same_as_whole(path, {"norm_sub", "c2", 3});
  std::vector<std::string> ops;
  for (const auto& n : m->impl().model.main->nodes)
    if (n->fused_chain)
      for (const auto& layer : n->fused_chain->nodes) ops.push_back(layer->op_type);
  // The Sigmoid is c1's fused activation; the rest run as layers of their own.
  CHECK(ops == std::vector<std::string>{"Sub", "Div", "Conv", "PRelu", "Conv", "Mul", "Sub", "Conv"});
  CHECK(patch_kernel(*m)->implementation().find("memplan's pointwise loop") != std::string::npos);
}

TEST_CASE("activations and a value divided by the tensor run in the chain as the whole plan computes them",
          "[patches][runtime]") {
  memplan::test::TempDir dir("patch_activations");
  Chain c("x", {1, 3, 64, 48});
  c.constant("slope", {}, {0.25f});
  c.constant("lo", {}, {-0.5f});
  c.constant("hi", {}, {0.5f});
  c.constant("shift", {}, {1.5f});
  c.constant("two", {}, {2.f});
  c.conv("c0", "x", "a", {3, 16, 3, 2, 1});  // 32 x 24
  // After a PRelu nothing fuses into a Conv: each op below is a layer of the chain of its own.
  c.node("PRelu", {"a", "slope"}, "p", "prelu");
  c.node("Tanh", {"p"}, "t", "tanh");
  c.node("HardSigmoid", {"t"}, "h", "hard_sigmoid");
  c.node("Mul", {"p", "h"}, "m", "gate");
  c.node("Clip", {"m", "lo", "hi"}, "k", "clip");
  c.node("Add", {"k", "shift"}, "s", "shift");
  c.node("Div", {"two", "s"}, "d", "reciprocal");  // a value divided by the tensor (in [1, 2])
  c.node("LeakyRelu", {"d"}, "l", "leaky");
  c.conv("c1", "l", "y", {16, 8, 3, 1, 1});
  const std::string path = c.write(dir, "y", {1, 8, 32, 24});
  const auto m = require_same_as_whole(path, {"c0", "c1", 4});
  std::vector<std::string> ops;
  for (const auto& n : m->impl().model.main->nodes)
    if (n->fused_chain)
      for (const auto& layer : n->fused_chain->nodes) ops.push_back(layer->op_type);
  CHECK(ops == std::vector<std::string>{"Conv", "PRelu", "Tanh", "HardSigmoid", "Mul", "Clip", "Add", "Div", "LeakyRelu",
                                        "Conv"});
}

TEST_CASE("a budget only a patch region reaches is met through the public interface, and its plan file loads",
          "[patches][pipeline]") {
  memplan::test::TempDir dir("patch_budget");
  Chain c("x", {1, 3, 96, 96});
  c.conv("c0", "x", "a", {3, 32, 3, 1, 1, 1, 1, true});
  c.conv("c1", "a", "b", {32, 32, 3, 2, 1, 1, 1, true});
  c.conv("c2", "b", "z", {32, 16, 3, 2, 1, 1, 1, true});
  c.node("GlobalAveragePool", {"z"}, "y", "gap");
  const std::string path = c.write(dir, "y", {1, 16, 1, 1});
  const auto whole = memplan::CompiledModel::compile(path, {});
  memplan::CompileOptions o;
  o.max_arena = whole->arena_bytes() / 2;
  const auto tiled = memplan::CompiledModel::compile(path, o);
  CHECK(tiled->arena_bytes() <= o.max_arena);
  CHECK(tiled->report_text().find("patch regions (layers run tile by tile") != std::string::npos);
  CHECK(tiled->report_json().find("\"patch_regions\": [{\"first\": \"c0\"") != std::string::npos);
  memplan::test::require_close(run(tiled, 1), run(whole, 1), memplan::test::abs_rel(1e-4, 1e-4));

  const std::string plan = dir / "m.mplan";
  tiled->save_plan(plan);
  const auto loaded = memplan::CompiledModel::load(path, plan);
  CHECK(loaded->arena_bytes() == tiled->arena_bytes());
  CHECK(loaded->impl().plan.patch_regions == tiled->impl().plan.patch_regions);
  memplan::test::require_close(run(loaded, 2), run(whole, 2), memplan::test::abs_rel(1e-4, 1e-4));

  // Below what any region reaches: the error names the smallest arena and the region that made it.
  o.max_arena = 1000;
  CHECK_THROWS_WITH(memplan::CompiledModel::compile(path, o),
                    Catch::Contains("the smallest arena memplan can plan is") && Catch::Contains("with the patch region c0 .. "));
}

TEST_CASE("a run ends where a tensor it makes is read after it, or at a node patches cannot carry", "[patches][passes]") {
  memplan::test::TempDir dir("patch_candidates");
  Chain c("x", {1, 4, 16, 16});
  c.node("Softmax", {"x"}, "s", "pre");  // before the run: not patched, not in the way
  c.conv("c0", "s", "a", {4, 8, 3, 1, 1});
  c.conv("c1", "a", "b", {8, 8, 3, 1, 1});
  c.conv("c2", "b", "d", {8, 8, 3, 1, 1});
  c.node("Add", {"d", "a"}, "e", "late_add");  // a is read after c1 and c2: the run cannot end there
  c.node("Resize", {"e"}, "y", "resize");
  const std::string path = c.write(dir, "y", {1, 8, 16, 16});
  memplan::Model m = memplan::prepare_model(path, {});
  const memplan::PatchCandidates k = memplan::find_patch_candidates(*m.main);
  REQUIRE(k.first < m.main->nodes.size());
  CHECK(m.main->nodes[k.first]->name == "c0");
  std::vector<std::string> ends;
  for (size_t e : k.ends) ends.push_back(m.main->nodes[e]->name);
  // c2 takes the Add (a as its addend): the run may end after c0, or after c2.
  CHECK(ends == std::vector<std::string>{"c0", "c2"});
  CHECK(k.stop == "the run stops at Resize node 'resize', a Resize (only Conv, MaxPool and pointwise ops run in patches)");

  // A run of pointwise ops alone (an NHWC input scaled before its Transpose) is passed over.
  memplan::test::TempDir dir2("patch_candidates_nhwc");
  Chain t("x", {1, 16, 16, 4});
  t.constant("scale", {}, {0.5f});
  t.node("Mul", {"x", "scale"}, "scaled", "scale");
  auto* tr = memplan::test::add_node(t.graph(), "Transpose", {"scaled"}, {"nchw"}, "to_nchw");
  memplan::test::attr_ints(tr, "perm", {0, 3, 1, 2});
  t.conv("t0", "nchw", "y", {4, 8, 3, 1, 1});
  memplan::Model nhwc = memplan::prepare_model(t.write(dir2, "y", {1, 8, 16, 16}), {});
  const memplan::PatchCandidates kt = memplan::find_patch_candidates(*nhwc.main);
  REQUIRE(kt.first < nhwc.main->nodes.size());
  CHECK(nhwc.main->nodes[kt.first]->name == "t0");

  CHECK_THROWS_WITH(memplan::prepare_model(path, {}, {{"c0", "c1", 4}}),
                    Catch::Contains("patch region 'c0' .. 'c1' is not a run patches can carry"));
  CHECK_THROWS_WITH(memplan::prepare_model(path, {}, {{"c0", "nowhere", 4}}), Catch::Contains("the main graph has no node 'nowhere'"));
  CHECK_THROWS_WITH(memplan::prepare_model(path, {}, {{"c0", "c2", 0}}), Catch::Contains("tiles of 0 rows"));
}

TEST_CASE("a plan whose patch region the model does not have, and a model holding memplan's own op, are refused",
          "[patches][hostile]") {
  memplan::test::TempDir dir("patch_hostile");
  Chain c("x", {1, 3, 32, 32});
  c.conv("c0", "x", "a", {3, 8, 3, 2, 1});
  c.conv("c1", "a", "y", {8, 8, 3, 1, 1});
  const std::string path = c.write(dir, "y", {1, 8, 16, 16});
  const std::string plan = dir / "m.mplan";
  compile(path, {{"c0", "c1", 4}})->save_plan(plan);
  memplan::MemoryPlan p = memplan::read_plan_file(plan);
  p.patch_regions[0].last = "c9";
  memplan::write_plan_file(p, plan);
  CHECK_THROWS_WITH(memplan::CompiledModel::load(path, plan), Catch::Contains("patch region 'c0' .. 'c9'"));

  memplan::test::TempDir dir2("patch_own_op");
  Chain own("x", {1, 3, 8, 8});
  own.node(memplan::rt::dnnl_kernels::kPatchChainOp, {"x"}, "y", "fake");
  const std::string fake = own.write(dir2, "y", {1, 3, 8, 8});
  CHECK_THROWS(memplan::CompiledModel::compile(fake, {}));
}
