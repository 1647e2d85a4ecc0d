#include "runtime/kernels/dnnl/patch_chain.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "ir/fused_activation.h"
#include "runtime/kernels/common/dnnl_common.h"
#include "runtime/kernels/dnnl/patch_pointwise.h"
#include "runtime/kernels/dnnl/row_bands.h"

namespace memplan::rt::dnnl_kernels {

namespace {

constexpr size_t kMaxLayerInputs = 4;  // a Conv's x, weights, bias and fused addend

bool float32_4d(const Value* v) {
  return v && !v->dynamic && v->type.dtype == DType::Float32 && !v->type.is_container() && v->type.is_static() &&
         v->type.dims.size() == 4;
}

// The layer's window as the node's attributes give it, pads resolved against its input.
Window layer_window(const Node& n, const std::string& at) {
  const Dims x = dims_of(n.inputs[0]);
  Dims kernel;
  if (n.op_type == "Conv") {
    const Dims w = dims_of(n.inputs[1]);
    if (w.size() != 4) fail(at + ": weights of rank " + std::to_string(w.size()));
    kernel = {w[2], w[3]};
  }
  Window w = read_window(n, at, 2, kernel);
  resolve_forward_pads(w, {x[2], x[3]});
  return w;
}

// A MaxPool on one band of rows of channels-last tensors (a tile buffer's rows: [rows][W][C]):
// memplan's loop, the window clipped to the real rows and columns (pooling ignores padding), the
// channels innermost.
class RowsMaxPool final : public Kernel {
 public:
  struct Geometry {
    int64_t channels = 1, in_rows = 0, in_cols = 0, out_rows = 0, out_cols = 0;
    int64_t pad_top = 0, pad_left = 0;
    int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  };
  explicit RowsMaxPool(Geometry g) : g_(g) {}

  void run(const KernelArgs& args) override {
    const float* x = args.inputs[0].as<const float>();
    float* y = args.outputs[0].as<float>();
    const Geometry g = g_;
    const int64_t c = g.channels;
#pragma omp parallel for schedule(static) if (g.out_rows * g.out_cols * c > (1 << 14))
    for (int64_t oh = 0; oh < g.out_rows; ++oh) {
      for (int64_t ow = 0; ow < g.out_cols; ++ow) {
        float* out = y + (oh * g.out_cols + ow) * c;
        std::fill(out, out + c, -std::numeric_limits<float>::infinity());
        for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
          const int64_t r = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
          if (r < 0 || r >= g.in_rows) continue;
          for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
            const int64_t col = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
            if (col < 0 || col >= g.in_cols) continue;
            const float* in = x + (r * g.in_cols + col) * c;
#pragma omp simd
            for (int64_t k = 0; k < c; ++k) out[k] = std::max(out[k], in[k]);
          }
        }
      }
    }
  }
  std::string implementation() const override { return "memplan's max pool loop"; }

 private:
  Geometry g_;
};

// A tensor's tile buffer: rows of [W][C] floats (channels last, one image), room for `capacity`
// of them at `offset` in the frame. A band of its rows is then a dense NHWC tensor of its own.
struct TileBuffer {
  uint64_t offset = 0;
  int64_t channels = 1, height = 0, width = 0, capacity = 0;
  uint64_t row_bytes() const { return static_cast<uint64_t>(width * channels) * sizeof(float); }
  uint64_t bytes() const { return static_cast<uint64_t>(capacity) * row_bytes(); }
};

// Rows [row, row + count) of a whole plain [1, C, H, W] tensor into a tile buffer's first rows
// (`in`), or the tile buffer's first rows into them.
void copy_rows(float* whole, float* tile, const TileBuffer& b, int64_t row, int64_t count, bool in) {
  const int64_t c = b.channels, w = b.width, plane = b.height * w;
#pragma omp parallel for schedule(static) if (count * w * c > (1 << 15))
  for (int64_t r = 0; r < count; ++r)
    for (int64_t k = 0; k < c; ++k) {
      float* t = tile + r * w * c + k;
      float* p = whole + k * plane + (row + r) * w;
      if (in)
        for (int64_t i = 0; i < w; ++i) t[i * c] = p[i];
      else
        for (int64_t i = 0; i < w; ++i) p[i] = t[i * c];
    }
}

// How a layer's kernel is called: with its node's inputs (a pointwise layer: its tensor and the
// other), and whether the addend is read from the output's bytes (a Conv's fused Add: its rows
// are copied there first) or is input 1 (a pointwise layer's other tensor).
struct LayerCall {
  size_t inputs = 1;
  bool addend_in_output = false;
};

// What tells one band of a layer from another: its input rows, its padding rows, its output rows.
using BandKey = std::tuple<int64_t, int64_t, int64_t, int64_t>;
BandKey band_key(const plan::LayerRows& r, const plan::RowRange& out) { return {r.in.size(), r.pad_top, r.pad_bottom, out.size()}; }

class PatchChainKernel final : public Kernel {
 public:
  // parts[i]: a kernel for one band of a layer; part_at[t][l]: layer l's in tile t (chosen at load,
  // so that a run only indexes).
  PatchChainKernel(std::string where, plan::PatchChainShape shape, plan::PatchSchedule schedule,
                   std::vector<TileBuffer> buffers, std::vector<LayerCall> calls,
                   std::vector<std::unique_ptr<Kernel>> parts, std::vector<std::vector<size_t>> part_at)
      : where_(std::move(where)), shape_(std::move(shape)), schedule_(std::move(schedule)), buffers_(std::move(buffers)),
        calls_(std::move(calls)), parts_(std::move(parts)), part_at_(std::move(part_at)) {
    inner_offset_ = (schedule_.frame.frame_bytes + 63) / 64 * 64;
    for (const auto& p : parts_) inner_bytes_ = std::max(inner_bytes_, p->scratchpad_bytes());
  }

  struct State final : KernelState {
    std::vector<std::unique_ptr<KernelState>> parts;
  };

  std::unique_ptr<KernelState> make_state() const override {
    auto s = std::make_unique<State>();
    for (const auto& p : parts_) s->parts.push_back(p->make_state());
    return s;
  }
  uint64_t scratchpad_bytes() const override { return inner_offset_ + inner_bytes_; }
  bool reads_at_run_time(size_t input) const override { return input == 0; }  // the layers copied their weights

  std::string implementation() const override {
    std::string out = "patch chain of " + std::to_string(shape_.layers.size()) + " layers in " +
                      std::to_string(schedule_.tiles.size()) + " tiles of " + std::to_string(schedule_.tile_rows) +
                      (schedule_.keep_rows ? " rows, rows kept: " : " rows: ");
    std::vector<std::string> names;
    for (const auto& p : parts_)
      if (std::string n = p->implementation(); std::find(names.begin(), names.end(), n) == names.end())
        names.push_back(std::move(n));
    for (size_t i = 0; i < names.size(); ++i) out += (i ? "; " : "") + names[i];
    return out;
  }

  void run(const KernelArgs& args) override {
    auto* s = dynamic_cast<State*>(args.state);
    if (!s || s->parts.size() != parts_.size()) fail_internal(where_ + ": run without the session's kernel state");
    if (args.inputs.empty() || args.outputs.size() != 1) fail_internal(where_ + ": the executor passed the wrong number of tensors");
    const TileBuffer& in = buffers_.front();
    const TileBuffer& out = buffers_.back();
    const auto whole = [](const TileBuffer& b) { return static_cast<uint64_t>(b.height) * b.row_bytes(); };
    if (args.inputs[0].byte_size() != whole(in) || args.outputs[0].byte_size() != whole(out))
      fail(where_ + ": the run-time shapes differ from the compile-time shapes");
    const int output = shape_.layers.back().output;
    for (size_t t = 0; t < schedule_.tiles.size(); ++t) {
      const std::vector<plan::RowRange>& rows = schedule_.tiles[t];
      const std::vector<plan::RowRange>& made = schedule_.computed[t];
      if (t > 0) keep_rows(schedule_.tiles[t - 1], rows, made, args);
      copy_rows(args.inputs[0].as<float>(), tile(args, 0, rows[0].lo, made[0].lo), in, made[0].lo, made[0].size(), true);
      for (size_t l = 0; l < shape_.layers.size(); ++l) run_layer(l, part_at_[t][l], rows, made, *s, args);
      const plan::RowRange own = rows[static_cast<size_t>(output)];
      copy_rows(args.outputs[0].as<float>(), tile(args, output, own.lo, own.lo), out, own.lo, own.size(), false);
    }
  }

 private:
  // Row `row` of tensor k in its tile buffer, which holds its rows from `first` on.
  float* tile(const KernelArgs& args, int k, int64_t first, int64_t row) const {
    const TileBuffer& b = buffers_[static_cast<size_t>(k)];
    return reinterpret_cast<float*>(args.scratchpad + b.offset + static_cast<uint64_t>(row - first) * b.row_bytes());
  }

  // Keeping rows: the rows a tile holds and does not compute move to the top of their buffers
  // (channels last, they are one run of bytes), where the tile before held them lower.
  void keep_rows(const std::vector<plan::RowRange>& before, const std::vector<plan::RowRange>& rows,
                 const std::vector<plan::RowRange>& made, const KernelArgs& args) const {
    for (size_t k = 0; k < rows.size(); ++k) {
      const int64_t kept = made[k].lo - rows[k].lo;
      if (kept <= 0 || rows[k].lo == before[k].lo) continue;
      const auto kk = static_cast<int>(k);
      std::memmove(tile(args, kk, 0, 0), tile(args, kk, before[k].lo, rows[k].lo),
                   static_cast<size_t>(kept) * buffers_[k].row_bytes());
    }
  }

  // Tensor k's rows from `row` on, in this tile (whose rows of k start at `first`), as a view.
  TensorView rows_view(const KernelArgs& args, int k, int64_t first, int64_t row, int64_t count) const {
    const TileBuffer& b = buffers_[static_cast<size_t>(k)];
    TensorView v;
    v.data = reinterpret_cast<std::byte*>(tile(args, k, first, row));
    v.dtype = DType::Float32;
    v.rank = 4;
    v.dims = {1, b.channels, count, b.width};
    v.capacity = static_cast<uint64_t>(count) * b.row_bytes();
    return v;
  }

  // Layer l in a tile: the output rows it computes (`made`), into its buffer of `rows`. A Conv's
  // fused Add's addend rows are copied into the output's rows first, and the convolution adds
  // into them (ConvKernel's addend at the output's bytes: nothing to copy); a pointwise layer
  // reads its other tensor as input 1.
  void run_layer(size_t l, size_t part, const std::vector<plan::RowRange>& rows, const std::vector<plan::RowRange>& made,
                 State& s, const KernelArgs& args) const {
    const plan::PatchLayer& layer = shape_.layers[l];
    const auto o = static_cast<size_t>(layer.output);
    const plan::RowRange out_rows = made[o];
    if (out_rows.size() <= 0) return;
    const plan::LayerRows r = plan::layer_rows(shape_, l, out_rows);
    std::array<TensorView, kMaxLayerInputs> in{};
    std::array<TensorView, 1> out{rows_view(args, layer.output, rows[o].lo, out_rows.lo, out_rows.size())};
    in[0] = rows_view(args, layer.input, rows[static_cast<size_t>(layer.input)].lo, r.in.lo, r.in.size());
    if (layer.addend >= 0) {
      const TensorView a = rows_view(args, layer.addend, rows[static_cast<size_t>(layer.addend)].lo, out_rows.lo, out_rows.size());
      if (calls_[l].addend_in_output) {  // a Conv's fused Add
        std::memcpy(out[0].data, a.data, a.capacity);
        in[3] = out[0];
      } else {  // a pointwise layer's other tensor
        in[1] = a;
      }
    }
    parts_[part]->run({std::span<const TensorView>(in.data(), calls_[l].inputs), out, args.scratchpad + inner_offset_,
                       s.parts[part].get(), args.stream});
  }

  std::string where_;
  plan::PatchChainShape shape_;
  plan::PatchSchedule schedule_;
  std::vector<TileBuffer> buffers_;
  std::vector<LayerCall> calls_;
  std::vector<std::unique_ptr<Kernel>> parts_;
  std::vector<std::vector<size_t>> part_at_;
  uint64_t inner_offset_ = 0, inner_bytes_ = 0;
};

}  // namespace

std::optional<std::string> patch_refusal(const Node& n) {
  if (!n.domain.empty()) return "an op of domain '" + n.domain + "'";
  if (n.is_control_flow()) return "a control-flow node";
  if (n.outputs.empty() || !float32_4d(n.outputs[0])) return "a node whose output is not a static float32 image";
  if (n.outputs[0]->type.dims[0].value != 1) return "a node on a batch of " + std::to_string(n.outputs[0]->type.dims[0].value) + " images";
  if (n.outputs.size() > 1 && std::any_of(n.outputs.begin() + 1, n.outputs.end(), [](const Value* v) { return v; }))
    return "a node with a second output";
  if (n.op_type != "Conv" && n.op_type != "MaxPool") {
    std::string why;
    if (pointwise_layer(n, why)) return std::nullopt;
    return why;
  }
  if (n.inputs.empty() || !float32_4d(n.inputs[0])) return "a node whose input is not a static float32 image";
  if (n.op_type == "MaxPool") {
    if (n.inputs.size() > 1) return "a MaxPool of " + std::to_string(n.inputs.size()) + " inputs";
    return std::nullopt;
  }
  if (n.inputs.size() < 2 || n.inputs.size() > kMaxLayerInputs) return "a Conv of " + std::to_string(n.inputs.size()) + " inputs";
  if (!n.inputs[1] || !n.inputs[1]->is_constant() || n.inputs[1]->type.dims.size() != 4) return "a Conv whose weights are not constant";
  if (n.inputs.size() > 2 && n.inputs[2] && !n.inputs[2]->is_constant()) return "a Conv whose bias is not constant";
  if (n.inputs.size() > 3 && n.inputs[3] && !float32_4d(n.inputs[3])) return "a Conv whose addend is not a static float32 image";
  if (pre_activation(n)) return "a pre-activated Conv";
  return std::nullopt;
}

const Value* patch_input(const Node& n) {
  std::string why;
  if (n.op_type == "Conv" || n.op_type == "MaxPool") return n.inputs.empty() ? nullptr : n.inputs[0];
  const std::optional<PointwiseLayer> p = pointwise_layer(n, why);
  return p ? n.inputs[p->activation] : nullptr;
}

PatchChainLayers describe_patch_chain(std::span<const Node* const> nodes, const std::string& where) {
  PatchChainLayers d;
  if (nodes.empty()) fail(where + ": a patch chain of no nodes");
  std::unordered_map<const Value*, int> index;
  const auto add_tensor = [&](const Value* v) {
    const Dims dims = dims_of(v);
    uint64_t row_bytes = sizeof(float);
    for (size_t i : {size_t{0}, size_t{1}, size_t{3}})
      if (dims[i] < 0 || __builtin_mul_overflow(row_bytes, static_cast<uint64_t>(dims[i]), &row_bytes))
        fail(where + ": the rows of '" + v->name + "' overflow");
    index[v] = static_cast<int>(d.tensors.size());
    d.tensors.push_back(v);
    d.shape.rows.push_back(dims[2]);
    d.shape.row_bytes.push_back(row_bytes);
  };
  const auto tensor = [&](const Node& n, const Value* v) {
    auto it = index.find(v);
    if (it == index.end()) fail(where + ": " + n.describe() + " reads '" + v->name + "', which the chain does not make");
    return it->second;
  };
  const Value* x = patch_input(*nodes.front());
  if (!x) fail(where + ": " + nodes.front()->describe() + " cannot start a patch chain");
  add_tensor(x);
  for (const Node* n : nodes) {
    if (auto why = patch_refusal(*n)) fail(where + ": " + n->describe() + " cannot run in patches: it is " + *why);
    const std::string at = where + ": " + n->describe();
    plan::PatchLayer layer;
    std::string why;
    if (const std::optional<PointwiseLayer> p = pointwise_layer(*n, why)) {  // one row of the input per row
      layer.input = tensor(*n, n->inputs[p->activation]);
      if (p->operand >= 0) layer.addend = tensor(*n, n->inputs[static_cast<size_t>(p->operand)]);
    } else {
      const Window w = layer_window(*n, at);
      layer.input = tensor(*n, n->inputs[0]);
      if (n->inputs.size() > 3 && n->inputs[3]) layer.addend = tensor(*n, n->inputs[3]);
      layer.extent = effective_kernel(w, 0);
      layer.stride = w.strides[0];
      layer.pad_top = w.pads_begin[0];
    }
    add_tensor(n->outputs[0]);
    layer.output = static_cast<int>(d.tensors.size() - 1);
    d.shape.layers.push_back(layer);
  }
  return d;
}

namespace {

std::vector<const Node*> chain_nodes(const Node& node, const std::string& at) {
  const Graph* chain = node.fused_chain.get();
  if (!chain || chain->nodes.empty()) fail(at + ": a patch chain without its layers (memplan's own op, which models do not hold)");
  std::vector<const Node*> nodes;
  for (const auto& n : chain->nodes) nodes.push_back(n.get());
  return nodes;
}

// A layer's multiply-adds per output row: a Conv's; none for a pool.
uint64_t macs_per_row(const Node& n) {
  if (n.op_type != "Conv") return 0;
  const Dims w = dims_of(n.inputs[1]), y = dims_of(n.outputs[0]);
  return static_cast<uint64_t>(y[1] * y[3] * w[1] * w[2] * w[3]);
}

}  // namespace

PatchRegion patch_region_cost(const Node& node, PatchRegion r, const std::string& where) {
  const std::vector<const Node*> nodes = chain_nodes(node, where);
  const PatchChainLayers d = describe_patch_chain(nodes, where);
  const plan::PatchSchedule s =
      plan::schedule_patches(d.shape, node.attr_int(kTileRowsAttr, 0), node.attr_int(kKeepRowsAttr, 0) != 0);
  r.layers = static_cast<int32_t>(nodes.size());
  r.tiles = static_cast<int32_t>(s.tiles.size());
  r.input_rows = s.capacity.front();
  r.tile_frame_bytes = s.frame.frame_bytes;
  const std::vector<int64_t> again = plan::recomputed_rows(d.shape, s);
  r.macs = r.recomputed_macs = 0;
  for (size_t l = 0; l < nodes.size(); ++l) {
    const auto rows = static_cast<uint64_t>(d.shape.rows[static_cast<size_t>(d.shape.layers[l].output)]);
    r.macs += rows * macs_per_row(*nodes[l]);
    r.recomputed_macs += static_cast<uint64_t>(again[l]) * macs_per_row(*nodes[l]);
  }
  return r;
}

std::unique_ptr<Kernel> make_patch_chain(const Node& node, const KernelEnv& env) {
  const std::string at = check_arity(node, env, 1, SIZE_MAX, 1);
  const std::vector<const Node*> nodes = chain_nodes(node, at);
  PatchChainLayers d = describe_patch_chain(nodes, at);
  if (d.tensors.front() != node.inputs[0] || d.tensors.back() != node.outputs[0])
    fail_internal(at + ": the chain's first input and last output are not the node's");
  for (const Value* v : {d.tensors.front(), d.tensors.back()})
    if (v->channel_block != 0) fail_internal(at + ": '" + v->name + "' is not a plain tensor");
  plan::PatchSchedule schedule =
      plan::schedule_patches(d.shape, node.attr_int(kTileRowsAttr, 0), node.attr_int(kKeepRowsAttr, 0) != 0);
  if (auto e = plan::check_patch_schedule(d.shape, schedule)) fail_internal(at + ": " + *e);

  std::vector<TileBuffer> buffers;
  for (size_t k = 0; k < d.tensors.size(); ++k) {
    const Dims x = dims_of(d.tensors[k]);
    buffers.push_back({schedule.frame.offsets[k], x[1], x[2], x[3], schedule.capacity[k]});
  }
  const auto rows_md = [&](int k, int64_t rows) {
    const TileBuffer& b = buffers[static_cast<size_t>(k)];
    return dnnl::memory::desc({1, b.channels, rows, b.width}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nhwc);
  };
  std::vector<std::unique_ptr<Kernel>> parts;
  std::vector<std::map<BandKey, size_t>> part_of(nodes.size());  // each layer's parts, by band
  std::vector<std::vector<size_t>> part_at(schedule.computed.size(), std::vector<size_t>(nodes.size(), SIZE_MAX));
  std::vector<LayerCall> calls;
  for (const Node* n : nodes) {
    const bool windowed = n->op_type == "Conv" || n->op_type == "MaxPool";
    calls.push_back({windowed ? n->inputs.size() : 2, n->op_type == "Conv"});
  }
  for (size_t t = 0; t < schedule.computed.size(); ++t)
    for (size_t l = 0; l < nodes.size(); ++l) {
      const plan::PatchLayer& layer = d.shape.layers[l];
      const plan::RowRange out = schedule.computed[t][static_cast<size_t>(layer.output)];
      if (out.size() <= 0) continue;
      const plan::LayerRows r = plan::layer_rows(d.shape, l, out);
      const auto [known, added] = part_of[l].emplace(band_key(r, out), parts.size());
      part_at[t][l] = known->second;
      if (!added) continue;
      const Node& n = *nodes[l];
      std::unique_ptr<Kernel> k;
      if (n.op_type == "Conv") {
        const BandViews views{{r.in.size(), r.pad_top, r.pad_bottom, out.size()}, rows_md(layer.input, r.in.size()),
                              rows_md(layer.output, out.size())};
        k = make_conv_rows(n, env, views);
        if (!k)
          fail_unsupported(at + ": " + n.describe() + " has no fast oneDNN kernel for a band of " + std::to_string(out.size()) + " rows");
      } else if (std::string why; const std::optional<PointwiseLayer> p = pointwise_layer(n, why)) {
        k = make_rows_pointwise(n, *p, buffers[static_cast<size_t>(layer.output)].channels, at + ": " + n.describe());
      } else {
        const Window w = layer_window(n, at + ": " + n.describe());
        const TileBuffer& bi = buffers[static_cast<size_t>(layer.input)];
        k = std::make_unique<RowsMaxPool>(RowsMaxPool::Geometry{
            bi.channels, r.in.size(), bi.width, out.size(), buffers[static_cast<size_t>(layer.output)].width, r.pad_top,
            w.pads_begin[1], w.kernel[0], w.kernel[1], w.strides[0], w.strides[1], w.dilations[0], w.dilations[1]});
      }
      parts.push_back(std::move(k));
    }
  return std::make_unique<PatchChainKernel>(at, std::move(d.shape), std::move(schedule), std::move(buffers),
                                            std::move(calls), std::move(parts), std::move(part_at));
}

}  // namespace memplan::rt::dnnl_kernels
