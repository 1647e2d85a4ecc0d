// Resize-18's keep_aspect_ratio_policy as version 13 runs it. The policy's output sizes are
// round(in * scale), while the resampling uses `scale` itself; version 13's scales would floor the
// size. Where the two differ, the opset adapter (onnx/opset_adapter.h) gives version 13 the
// policy's scales and records the rounded output shape in this attribute; shape inference
// (shapes/onnx_inference.cpp) and the Resize kernel take the shape from it.
#pragma once

namespace memplan {

inline constexpr const char* kResizeOutputShapeAttr = "memplan_resize_output_shape";

}  // namespace memplan
