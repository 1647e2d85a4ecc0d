// Activation layouts, after fusion and before kernel selection: chains of convolutions, pools,
// batch norms and elementwise ops keep their tensors channel-blocked (oneDNN's nChw16c/nChw8c),
// where oneDNN's direct convolutions are several times faster than on plain NCHW. Everything
// else (graph inputs and outputs, subgraphs, shape ops, any op that indexes its data) sees plain
// row-major tensors.
//
// A value is blocked only when its block divides its channel count, so a blocked tensor is
// exactly as large as a plain one: the planner, the verifier and the memory guard do not change,
// and elementwise ops and channel Concat give the same bytes in either layout. Where the CPU's
// block does not divide the channels, the chain is stored channels-last (NHWC) instead, as
// large as plain too, and 8-blocked only where a node cannot take channels-last. A tensor read by
// a Transpose to NHWC, or written by one from NHWC (ir/layout_transpose.h), is stored
// channels-last too, where that Transpose then copies nothing.
#pragma once

#include "ir/graph.h"

namespace memplan {

// Sets Value::channel_block on main-graph values (a block, or Value::kChannelsLast);
// `preferred_block` is 16 (AVX-512), 8 (AVX2) or 0 (keep everything plain). Returns how many
// values are not plain.
int assign_layouts(Model& model, int preferred_block);

// 16 where oneDNN runs AVX-512 (DNNL_MAX_CPU_ISA may lower it), 8 with AVX2, else 0; the environment variable
// MEMPLAN_CHANNEL_BLOCK=0|8|16 overrides it (0 keeps every tensor plain, to compare).
int preferred_channel_block();

}  // namespace memplan
