// The model file's large weights, read straight into memplan's tensors instead of through
// protobuf's strings: protobuf parses a copy of the file whose initializers and tensor attributes
// (Constant nodes' values, which Paddle2ONNX and tf2onnx write the weights as) point at their own
// bytes in the file (ONNX's external-data fields: location = the file itself, offset, length)
// instead of holding them (raw_data), and tensor_from_proto reads each into its tensor. Parsed as
// it was, a weight lived in protobuf's string and in its tensor at once while it was copied: a
// model whose weights are one large layer peaked at twice its weights, and one whose weights are
// Constants held them three times (the rewritten copy of the graph, the model's, protobuf's).
#pragma once

#include <istream>
#include <optional>
#include <string>

namespace memplan {

// Initializers with fewer bytes than this stay inline (one file read each would cost more).
inline constexpr uint64_t kOutOfLineBytes = 64 * 1024;

// The serialized ModelProto read from `in` (`size` bytes, read from its start), with the raw_data
// of each initializer and tensor attribute of kOutOfLineBytes or more, in the main graph and its
// subgraphs, replaced by an external-data reference to `file_name` (the model file's name in its
// folder). Nothing where the wire data is
// not the protobuf this expects (the caller then parses the file as it is, and protobuf's own
// error names what is wrong).
std::optional<std::string> out_of_line_weights(std::istream& in, uint64_t size, const std::string& file_name);

}  // namespace memplan
