// ONNX ModelProto -> IR.
#pragma once

#include <string>

#include "ir/graph.h"

namespace memplan {

// Subgraphs nested deeper than this are refused (and the protobuf parser is bounded to match),
// so hostile nesting cannot overflow the stack.
constexpr int kMaxGraphNesting = 64;
// Highest opset of the default domain memplan reads: ONNX 1.12's schemas describe up to 17, the
// opset adapter (onnx/opset_adapter.h) maps 18-23 onto them.
constexpr int64_t kMaxDefaultOpset = 23;
// Highest IR version memplan reads (ONNX 1.16's, with opset 23). IR 9-11 added element types
// (float8, int4, float4), refused by name, and fields protobuf keeps as unknown.
constexpr int64_t kMaxIrVersion = 11;

// Reads, validates and imports the model at `path`: every graph ordered topologically, every
// name resolved through its scopes, Constant nodes turned into constant values. Throws
// memplan::Error with a one-line message naming the file and what is wrong.
Model import_model(const std::string& path);

// The same, from bytes already in memory (`path` is used for messages and external data).
Model import_model_bytes(const std::string& bytes, const std::string& path);

}  // namespace memplan
