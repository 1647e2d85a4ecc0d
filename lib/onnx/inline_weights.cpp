#include "onnx/inline_weights.h"

#include <cstdint>
#include <vector>

namespace memplan {
namespace {

// Field numbers of onnx.proto3 that the rewrite walks through or writes.
constexpr uint32_t kModelGraph = 7;         // ModelProto.graph
constexpr uint32_t kGraphNode = 1;          // GraphProto.node
constexpr uint32_t kGraphInitializer = 5;   // GraphProto.initializer
constexpr uint32_t kNodeAttribute = 5;      // NodeProto.attribute
constexpr uint32_t kAttributeTensor = 5;    // AttributeProto.t (a Constant's value)
constexpr uint32_t kAttributeGraph = 6;     // AttributeProto.g (If's, Loop's, Scan's bodies)
constexpr uint32_t kAttributeTensors = 10;  // AttributeProto.tensors
constexpr uint32_t kAttributeGraphs = 11;   // AttributeProto.graphs
constexpr uint32_t kTensorRawData = 9;      // TensorProto.raw_data
constexpr uint32_t kTensorExternal = 13;    // TensorProto.external_data (StringStringEntryProto)
constexpr uint32_t kTensorLocation = 14;    // TensorProto.data_location
constexpr uint32_t kEntryKey = 1, kEntryValue = 2;
constexpr uint64_t kExternal = 1;           // TensorProto.DataLocation.EXTERNAL
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5;

struct Malformed {};

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_bytes_field(std::string& out, uint32_t field, const std::string& payload) {
  put_varint(out, (uint64_t{field} << 3) | kLength);
  put_varint(out, payload.size());
  out += payload;
}

// The file read forward, with its position; every length is checked against where the message
// that holds it ends.
class Wire {
 public:
  explicit Wire(std::istream& in) : in_(in) {}
  uint64_t pos() const { return pos_; }
  uint64_t varint(uint64_t end) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= end) throw Malformed{};
      const int c = in_.get();
      if (c == std::char_traits<char>::eof()) throw Malformed{};
      ++pos_;
      v |= static_cast<uint64_t>(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    throw Malformed{};
  }
  void copy(std::string& out, uint64_t n, uint64_t end) {
    if (n > end - pos_) throw Malformed{};
    const size_t at = out.size();
    out.resize(at + static_cast<size_t>(n));
    if (n && !in_.read(out.data() + at, static_cast<std::streamsize>(n))) throw Malformed{};
    pos_ += n;
  }
  void skip(uint64_t n, uint64_t end) {
    if (n > end - pos_) throw Malformed{};
    in_.seekg(static_cast<std::streamoff>(pos_ + n));
    if (!in_) throw Malformed{};
    pos_ += n;
  }
 private:
  std::istream& in_;
  uint64_t pos_ = 0;
};

enum class Kind { Model, Graph, Node, Attribute, Tensor, Other };

// The kind of message field `field` of a `kind` holds, where the rewrite walks into it; Other
// where it copies the field's bytes as they are.
Kind inner(Kind kind, uint32_t field) {
  switch (kind) {
    case Kind::Model: return field == kModelGraph ? Kind::Graph : Kind::Other;
    case Kind::Graph: return field == kGraphInitializer ? Kind::Tensor : field == kGraphNode ? Kind::Node : Kind::Other;
    case Kind::Node: return field == kNodeAttribute ? Kind::Attribute : Kind::Other;
    case Kind::Attribute:
      if (field == kAttributeTensor || field == kAttributeTensors) return Kind::Tensor;
      return field == kAttributeGraph || field == kAttributeGraphs ? Kind::Graph : Kind::Other;
    default: return Kind::Other;
  }
}

// Graphs nest in attributes: deeper than this, the file is left to protobuf's parse (whose own
// recursion limit then refuses it) rather than this rewrite's stack.
constexpr int kMaxDepth = 256;

// The message from the current position to `end`, rewritten.
std::string message(Wire& w, uint64_t end, Kind kind, const std::string& file_name, int depth = 0) {
  if (depth > kMaxDepth) throw Malformed{};
  std::string out;
  std::optional<std::pair<uint64_t, uint64_t>> raw;  // offset, length in the file
  while (w.pos() < end) {
    const uint64_t tag = w.varint(end);
    const auto field = static_cast<uint32_t>(tag >> 3), type = static_cast<uint32_t>(tag & 7);
    if (field == 0) throw Malformed{};
    if (type == kLength) {
      const uint64_t n = w.varint(end);
      if (n > end - w.pos()) throw Malformed{};
      const uint64_t stop = w.pos() + n;
      if (const Kind in = inner(kind, field); in != Kind::Other) {
        put_bytes_field(out, field, message(w, stop, in, file_name, depth + 1));
      } else if (kind == Kind::Tensor && field == kTensorRawData && n >= kOutOfLineBytes && !raw) {
        raw.emplace(w.pos(), n);
        w.skip(n, end);
      } else {
        put_varint(out, tag);
        put_varint(out, n);
        w.copy(out, n, end);
      }
      continue;
    }
    put_varint(out, tag);
    if (type == kVarint) put_varint(out, w.varint(end));
    else if (type == kFixed64) w.copy(out, 8, end);
    else if (type == kFixed32) w.copy(out, 4, end);
    else throw Malformed{};  // groups: not in onnx.proto
  }
  if (raw) {
    put_varint(out, (uint64_t{kTensorLocation} << 3) | kVarint);
    put_varint(out, kExternal);
    for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", file_name},
                                     {"offset", std::to_string(raw->first)},
                                     {"length", std::to_string(raw->second)}}) {
      std::string entry;
      put_bytes_field(entry, kEntryKey, key);
      put_bytes_field(entry, kEntryValue, value);
      put_bytes_field(out, kTensorExternal, entry);
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> out_of_line_weights(std::istream& in, uint64_t size, const std::string& file_name) {
  try {
    Wire w(in);
    return message(w, size, Kind::Model, file_name);
  } catch (const Malformed&) {
    return std::nullopt;
  }
}

}  // namespace memplan
