// Registers the plain C++ kernels for shape, indexing, comparison and logic ops (shape_*.cpp).
#include "runtime/kernel_registry.h"
#include "runtime/kernels/shape_common.h"

namespace memplan::rt {

void register_shape_kernels(KernelRegistry& r) {
  using namespace shape;
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"}) r.add(op, make_view);
  r.add("Shape", make_shape_of);
  r.add("Size", make_size);
  r.add("Transpose", make_transpose);
  r.add("Slice", make_slice);
  r.add("Gather", make_gather);
  r.add("GatherElements", make_gather_elements);
  r.add("Split", make_split);
  r.add("Pad", make_pad);
  r.add("Tile", make_tile);
  r.add("Expand", make_expand);
  for (const char* op : {"Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"}) r.add(op, make_compare);
  for (const char* op : {"Not", "And", "Or", "Xor"}) r.add(op, make_logic);
  r.add("Where", make_where);
  r.add("Cast", make_cast);
  r.add("CastLike", make_cast);
  r.add("ConstantOfShape", make_constant_of_shape);
  r.add("Range", make_range);
  r.add("Mod", make_mod);
  for (const char* op : {"Floor", "Ceil", "Round", "Sign"}) r.add(op, make_rounding);
  for (const char* op : {"IsNaN", "IsInf"}) r.add(op, make_float_class);
  r.add("CumSum", make_cumsum);
  r.add("ArgMax", make_arg);
  r.add("ArgMin", make_arg);
  r.add("Hardmax", make_hardmax);
  r.add("TopK", make_topk);
  r.add("GatherND", make_gather_nd);
  r.add("ScatterElements", make_scatter_elements);
  r.add("Scatter", make_scatter_elements);
  r.add("ScatterND", make_scatter_nd);
  r.add("OneHot", make_onehot);
  r.add("DepthToSpace", make_space_depth);
  r.add("SpaceToDepth", make_space_depth);
  r.add("ReverseSequence", make_reverse_sequence);
  r.add("Compress", make_compress);
  r.add("NonZero", make_nonzero);
  r.add("Unique", make_unique_op);
  r.add("NonMaxSuppression", make_non_max_suppression);
  r.add("GridSample", make_grid_sample);
  r.add("RoiAlign", make_roi_align);
  r.add("MaxUnpool", make_max_unpool);
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) r.add(op, make_window, window_accepts);
}

}  // namespace memplan::rt
