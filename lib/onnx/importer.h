// ONNX ModelProto -> IR.
#pragma once

#include <string>

#include "ir/graph.h"

namespace memplan {

// Subgraphs nested deeper than this are refused (and the protobuf parser is bounded to match),
// so hostile nesting cannot overflow the stack.
constexpr int kMaxGraphNesting = 64;
// Highest opset of the default domain that ONNX 1.12's schemas describe.
constexpr int64_t kMaxDefaultOpset = 17;
// Highest IR version ONNX 1.12 defines.
constexpr int64_t kMaxIrVersion = 8;

// Reads, validates and imports the model at `path`: every graph ordered topologically, every
// name resolved through its scopes, Constant nodes turned into constant values. Throws
// memplan::Error with a one-line message naming the file and what is wrong.
Model import_model(const std::string& path);

// The same, from bytes already in memory (`path` is used for messages and external data).
Model import_model_bytes(const std::string& bytes, const std::string& path);

}  // namespace memplan
