// The shape family: plain C++ kernels that move, select or fill elements without arithmetic on
// them. Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) and Shape / Size;
// Transpose, Slice, Concat, Split, Pad, Tile, Expand, DepthToSpace / SpaceToDepth,
// ReverseSequence; indexing (Gather, GatherElements, GatherND, ScatterElements / Scatter,
// ScatterND, MaxUnpool, OneHot); data-dependent sizes (Compress, NonZero, Unique); Cast /
// CastLike and the fills ConstantOfShape and Range.
#include "runtime/kernel_registry.h"
#include "runtime/kernels/shape/factories.h"

namespace memplan::rt {

void register_shape_kernels(KernelRegistry& r) {
  using namespace shape;
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"}) r.add(op, make_view);
  r.add("Shape", make_shape_of);
  r.add("Size", make_size);
  r.add("Transpose", make_transpose);
  r.add("Slice", make_slice);
  r.add("Concat", elt::make_concat);
  r.add("Gather", make_gather);
  r.add("GatherElements", make_gather_elements);
  r.add("Split", make_split);
  r.add("Pad", make_pad);
  r.add("Tile", make_tile);
  r.add("Expand", make_expand);
  r.add("Cast", make_cast);
  r.add("CastLike", make_cast);
  r.add("ConstantOfShape", make_constant_of_shape);
  r.add("Range", make_range);
  r.add("GatherND", make_gather_nd);
  r.add("ScatterElements", make_scatter_elements);
  r.add("Scatter", make_scatter_elements);
  r.add("ScatterND", make_scatter_nd);
  r.add("MaxUnpool", make_max_unpool);
  r.add("OneHot", make_onehot);
  r.add("DepthToSpace", make_space_depth);
  r.add("SpaceToDepth", make_space_depth);
  r.add("ReverseSequence", make_reverse_sequence);
  r.add("Compress", make_compress);
  r.add("NonZero", make_nonzero);
  r.add("Unique", make_unique_op);
  r.add("Col2Im", make_col2im);
  r.add("AffineGrid", make_affine_grid);
}

}  // namespace memplan::rt
