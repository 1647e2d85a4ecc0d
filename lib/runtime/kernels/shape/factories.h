// The factories of the shape family (shape/*.cpp), for shape/registration.cpp.
#pragma once

#include "runtime/kernels/common/shape_common.h"

namespace memplan::rt::shape {

// shape_views.cpp
Factory make_view(const Node& n, const KernelEnv& env);  // Reshape Flatten Squeeze Unsqueeze Identity Dropout
Factory make_shape_of(const Node& n, const KernelEnv& env);  // Shape
Factory make_size(const Node& n, const KernelEnv& env);      // Size
// shape_transpose_slice.cpp
Factory make_transpose(const Node& n, const KernelEnv& env);  // a channel shuffle goes to make_channel_shuffle
Factory make_slice(const Node& n, const KernelEnv& env);
// shape_gather_split.cpp
Factory make_gather(const Node& n, const KernelEnv& env);
Factory make_gather_elements(const Node& n, const KernelEnv& env);
Factory make_split(const Node& n, const KernelEnv& env);
// shape_gather_nd.cpp
Factory make_gather_nd(const Node& n, const KernelEnv& env);
// shape_scatter.cpp
Factory make_scatter_elements(const Node& n, const KernelEnv& env);  // ScatterElements Scatter
Factory make_scatter_nd(const Node& n, const KernelEnv& env);
// max_unpool.cpp
Factory make_max_unpool(const Node& n, const KernelEnv& env);
// shape_pad_tile_expand.cpp
Factory make_pad(const Node& n, const KernelEnv& env);
Factory make_tile(const Node& n, const KernelEnv& env);
Factory make_expand(const Node& n, const KernelEnv& env);
// shape_channel_shuffle.cpp
Factory make_channel_shuffle(const Node& n, const KernelEnv& env);  // Transpose with memplan_channel_shuffle
// shape_col2im_affine_grid.cpp (opsets 18 and 20)
Factory make_col2im(const Node& n, const KernelEnv& env);
Factory make_affine_grid(const Node& n, const KernelEnv& env);
// shape_space_depth.cpp
Factory make_space_depth(const Node& n, const KernelEnv& env);  // DepthToSpace SpaceToDepth
// shape_reverse_sequence.cpp
Factory make_reverse_sequence(const Node& n, const KernelEnv& env);
// shape_select.cpp (data-dependent output sizes)
Factory make_compress(const Node& n, const KernelEnv& env);
Factory make_nonzero(const Node& n, const KernelEnv& env);
// shape_unique.cpp
Factory make_unique_op(const Node& n, const KernelEnv& env);
// shape_onehot.cpp
Factory make_onehot(const Node& n, const KernelEnv& env);
// shape_cast_fill.cpp
Factory make_cast(const Node& n, const KernelEnv& env);  // Cast CastLike
Factory make_constant_of_shape(const Node& n, const KernelEnv& env);
Factory make_range(const Node& n, const KernelEnv& env);

}  // namespace memplan::rt::shape

namespace memplan::rt::elt {

// concat_kernels.cpp
std::unique_ptr<Kernel> make_concat(const Node& n, const KernelEnv& env);

}  // namespace memplan::rt::elt
