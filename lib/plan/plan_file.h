// Reading and writing .mplan files: a magic line, the payload length, the protobuf payload
// (plan_file.proto, MemoryPlan field for field) and its SHA-256, so truncation and corruption are
// caught before anything is trusted.
#pragma once

#include <string>

#include "plan/plan.h"

namespace memplan {

// 2: buffers, slots and dynamic tensors name what they hold by index, not by name.
// 3: storage groups (buffers that share bytes on purpose). A version-2 plan has none and still loads.
// 4: loop state in place (a carried value's slot home and the body step that updates it). Older
//    plans have two slots per carried value and still load.
// 5: storage groups of an If branch in the bytes of an If output (PlannedBuffer::bound_output).
//    Older plans have none and still load.
// 6: external inputs (MemoryPlan::external_inputs, PlannedBuffer::external). Older plans have
//    their inputs in the arena and still load.
// 7: patch regions (MemoryPlan::patch_regions). Older plans have none and still load.
// 8: convolutions in Winograd's form (MemoryPlan::winograd_convs). Older plans have none and
//    still load, on the direct kernels they were made with.
// 9: plain layouts, chosen under --prefer memory (MemoryPlan::plain_layouts). Older plans had the
//    layouts and still load with them.
constexpr uint32_t kPlanFormatVersion = 9;
constexpr uint32_t kOldestPlanFormatVersion = 2;

// Writes atomically: a temporary file in the same folder, then rename.
void write_plan_file(const MemoryPlan& plan, const std::string& path);
// Throws memplan::Error naming the file: not a plan, truncated, corrupt, another format version, or
// structurally invalid (a parent that does not come first, an index out of range, a buffer, frame
// or slot outside what holds it), whatever its checksum says.
MemoryPlan read_plan_file(const std::string& path);

// Writes `contents` to `path` atomically (temporary name, then rename); nothing is left on failure.
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace memplan
