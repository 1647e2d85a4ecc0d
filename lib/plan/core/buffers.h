// The planner's pure core: buffers in, offsets out. Nothing here knows about ONNX, oneDNN or the IR,
// so every strategy can be tested with buffers typed in by hand and exact expected offsets.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace memplan::plan {

// One buffer to place. It is live at every step in [first, last] (inclusive, first <= last); two
// buffers whose lifetimes share a step must not share a byte. Steps may be sparse, large or negative.
struct BufferRequest {
  uint64_t size;
  int32_t first;
  int32_t last;
};

// offsets[i] is the offset of request i inside the frame. frame_bytes = max(offset + aligned size):
// the bytes the whole list needs. Zero-size buffers get offset 0 and occupy nothing.
struct Placement {
  std::vector<uint64_t> offsets;
  uint64_t frame_bytes = 0;
};

// No placement can beat this: the largest sum of aligned sizes live at one step.
// Throws memplan::Error on an invalid align, a request with first > last, or a size overflow.
uint64_t lower_bound(std::span<const BufferRequest> requests, uint64_t align);

// Checks a placement without trusting whoever produced it. Returns a one-line description of the
// first violation found, or std::nullopt when the placement is valid. Violations, checked in this
// order: offsets.size() != requests.size(); an offset that is not a multiple of align; a buffer
// ending past frame_bytes; two non-empty buffers with overlapping lifetimes sharing a byte.
// Sizes are rounded up to align, as the planners do. Throws memplan::Error on invalid requests/align.
std::optional<std::string> find_placement_error(std::span<const BufferRequest> requests,
                                                const Placement& placement, uint64_t align);

// An ASCII picture of a placement for logs (like TensorFlow Lite Micro's PrintMemoryPlan): one row
// per step at which some buffer starts or ends, `width` columns spanning the frame, and a letter per
// buffer ('A'-'Z', 'a'-'z', '0'-'9', then '*'); '.' is free, '!' is a cell claimed by two buffers
// (an overlap, or neighbours smaller than one cell). Throws memplan::Error on mismatched sizes.
std::string ascii_timeline(std::span<const BufferRequest> requests, const Placement& placement,
                           int width = 60);

}  // namespace memplan::plan
