// The channel shuffle that passes/channel_shuffle folds into a Transpose (ir/channel_shuffle.h):
// each output channel is one input channel moved whole, in whichever layout the tensors are
// stored (plain, channel-blocked or channels-last; the layout pass gives input and output one).
#include <algorithm>
#include <vector>

#include "ir/channel_shuffle.h"
#include "runtime/kernels/common/parallel_chunks.h"
#include "runtime/kernels/common/shape_common.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt::shape {
namespace {

// Where channel c of image n starts and how far apart its pixels are, in elements, for each
// stored layout of an [N, C, H, W] tensor.
struct ChannelAddressing {
  int64_t channels, pixels;
  int layout;  // 0 plain, a channel block, or Value::kChannelsLast

  int64_t pixel_stride() const { return layout == 0 ? 1 : layout == Value::kChannelsLast ? channels : layout; }
  int64_t start(int64_t c) const {
    if (layout == 0) return c * pixels;
    if (layout == Value::kChannelsLast) return c;
    return (c / layout) * pixels * layout + c % layout;
  }
};

// Channels-last: each pixel's [G, C/G] channels transposed to [C/G, G], written in order.
template <typename T, int64_t G>
void shuffle_pixels(const T* x, T* y, int64_t pixels, int64_t groups, int64_t per_group) {
  const int64_t g_count = G ? G : groups, channels = g_count * per_group;
  for (int64_t p = 0; p < pixels; ++p, x += channels, y += channels)
    for (int64_t j = 0; j < per_group; ++j)
      for (int64_t g = 0; g < g_count; ++g) y[j * g_count + g] = x[g * per_group + j];
}

// The shuffle of items [begin, end) of the images: (image, channel) pairs when the tensors are
// plain, whole planes copied; (image, pixel) pairs otherwise, where a pixel's channels lie
// together (channels-last) or a block apart (blocked).
template <size_t N>
void shuffle(const std::byte* in, std::byte* out, const std::vector<int64_t>& source_start,
             const std::vector<int64_t>& dest_start, const ChannelAddressing& at, int64_t groups, uint64_t begin,
             uint64_t end) {
  using T = uint_of_size<N>;
  const auto channels = static_cast<int64_t>(source_start.size());
  const int64_t stride = at.pixel_stride(), image_elems = at.channels * at.pixels;
  const int64_t per_image = stride == 1 ? channels : at.pixels;
  for (auto item = static_cast<int64_t>(begin); item < static_cast<int64_t>(end);) {
    const int64_t n = item / per_image, first = item % per_image;
    const int64_t last = std::min<int64_t>(per_image, first + static_cast<int64_t>(end) - item);
    item += last - first;
    const T* x = reinterpret_cast<const T*>(in) + n * image_elems;
    T* y = reinterpret_cast<T*>(out) + n * image_elems;
    if (stride == 1) {
      for (int64_t c = first; c < last; ++c) std::copy_n(x + source_start[c], at.pixels, y + dest_start[c]);
    } else if (at.layout == Value::kChannelsLast) {  // the group counts of ShuffleNet v1 and v2 unrolled
      const int64_t per_group = at.channels / groups, count = last - first;
      x += first * channels;
      y += first * channels;
      if (groups == 2) shuffle_pixels<T, 2>(x, y, count, groups, per_group);
      else if (groups == 3) shuffle_pixels<T, 3>(x, y, count, groups, per_group);
      else if (groups == 4) shuffle_pixels<T, 4>(x, y, count, groups, per_group);
      else if (groups == 8) shuffle_pixels<T, 8>(x, y, count, groups, per_group);
      else shuffle_pixels<T, 0>(x, y, count, groups, per_group);
    } else {
      for (int64_t p = first; p < last; ++p)
        for (int64_t c = 0; c < channels; ++c) y[dest_start[c] + p * stride] = x[source_start[c] + p * stride];
    }
  }
}

class ChannelShuffleKernel final : public Kernel {
 public:
  ChannelShuffleKernel(const std::string& where, const Node& n, int64_t groups, uint32_t elem) : elem_(elem) {
    const TensorView x = static_view(n.inputs[0], where);
    if (x.rank != 4 || groups < 1 || x.dims[1] % groups != 0)
      fail_internal(where + ": a channel shuffle of " + std::to_string(groups) + " groups on a tensor of rank " + std::to_string(x.rank));
    const int layout = n.inputs[0]->channel_block;
    if (layout != n.outputs[0]->channel_block) fail_internal(where + ": the input and the output are stored in different layouts");
    at_ = ChannelAddressing{x.dims[1], x.dims[2] * x.dims[3], layout};
    groups_ = groups;
    images_ = x.dims[0];
    const int64_t per_group = at_.channels / groups;
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t j = 0; j < per_group; ++j) {
        dest_start_.push_back(at_.start(j * groups + g));
        source_start_.push_back(at_.start(g * per_group + j));
      }
  }
  void run(const KernelArgs& a) override {
    // Items are channels (plain: a plane each) or pixels (the others: a pixel's channels each).
    const bool plain = at_.pixel_stride() == 1;
    const auto items = static_cast<uint64_t>(images_ * (plain ? at_.channels : at_.pixels));
    const auto item_bytes = static_cast<uint64_t>(plain ? at_.pixels : at_.channels) * elem_;
    parallel_chunks(items, std::max<uint64_t>(kParallelChunkBytes / std::max<uint64_t>(item_bytes, 1), 1), [&](uint64_t b, uint64_t e) {
      dispatch_size(elem_, [&](auto es) {
        shuffle<decltype(es)::value>(a.inputs[0].data, a.outputs[0].data, source_start_, dest_start_, at_, groups_, b, e);
      });
    });
  }
  std::string implementation() const override { return "memplan channel shuffle"; }

 private:
  uint32_t elem_;
  ChannelAddressing at_{};
  int64_t groups_ = 1, images_ = 0;
  std::vector<int64_t> source_start_, dest_start_;  // per output channel, in elements
};

}  // namespace

Factory make_channel_shuffle(const Node& n, const KernelEnv& env) {
  std::string where = check_arity(n, env, 1, 1);
  if (any_dynamic(n)) fail_internal(where + ": a channel shuffle of run-time shapes");
  return std::make_unique<ChannelShuffleKernel>(where, n, n.attr_int(kChannelShuffleAttr, 0),
                                                movable_size(n.inputs[0]->type.dtype, where));
}

}  // namespace memplan::rt::shape
