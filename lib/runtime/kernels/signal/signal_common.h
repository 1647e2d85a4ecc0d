// What the DFT, STFT and MelWeightMatrix kernels share: scalar inputs read at run time, the bound
// of a length known only at run time, and an output shape the op decides from its inputs.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/kernels/common/shape_common.h"

namespace memplan::rt::signal {

// The one element of an int32/int64 input named `what` (of any rank); fails naming the node
// when it holds none or more than one.
int64_t scalar_int(const TensorView& t, const char* what, const std::string& where);

// The most dimension `axis` of `v` can hold at run time: its size when known, else the elements
// its buffer can hold over the product of its other known dims.
uint64_t dim_bound(const Value* v, int axis, const std::string& where);

// Sets the output's run-time shape; for an output of a fixed compile-time shape (`fixed`), checks
// that the shape the op gives is that one instead, naming the node when it is not.
void place_output(TensorView& out, int rank, const int64_t* dims, bool fixed, const std::string& where);

// Whether the output's shape is fixed at compile time: static and never smaller at run time.
inline bool output_fixed(const Value* v) { return !shape::shape_is_dynamic(v); }

}  // namespace memplan::rt::signal
