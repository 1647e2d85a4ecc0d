#include "onnx/tensor_proto.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>

#include "memplan/error.h"
#include "onnx/onnx_pb.h"
#include "util/checked.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

// Resolves an external-data location, refusing anything that could leave the model's folder.
fs::path resolve_external(const fs::path& model_dir, const std::string& location, const std::string& what) {
  fs::path rel(location);
  if (location.empty() || rel.is_absolute() || rel.has_root_name())
    fail(what + ": external data location '" + location + "' must be a relative path inside the model's folder");
  for (const auto& part : rel)
    if (part == "..") fail(what + ": external data location '" + location + "' leaves the model's folder");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(model_dir.empty() ? fs::path(".") : model_dir, ec);
  fs::path full = fs::weakly_canonical(base / rel, ec);
  if (ec) fail(what + ": cannot resolve external data '" + location + "': " + ec.message());
  auto mismatch = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (mismatch.first != base.end())
    fail(what + ": external data location '" + location + "' resolves outside the model's folder (a link?)");
  return full;
}

std::vector<std::byte> read_external(const onnx::TensorProto& proto, const fs::path& model_dir,
                                     const std::string& what) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  auto parse_u64 = [&](const std::string& s, const char* key) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 19)
      fail(what + ": external data " + key + " '" + s + "' is not a valid number");
    return static_cast<uint64_t>(std::stoull(s));
  };
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parse_u64(kv.value(), "offset");
    else if (kv.key() == "length") length = parse_u64(kv.value(), "length");
  }
  const fs::path file = resolve_external(model_dir, location, what);
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) fail(what + ": cannot open external data file '" + file.string() + "'");
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  if (offset > file_size) fail(what + ": external data offset is past the end of '" + file.string() + "'");
  const uint64_t n = length ? *length : file_size - offset;
  if (checked_add(offset, n, what) > file_size)
    fail(what + ": external data '" + file.string() + "' is shorter than offset + length");
  std::vector<std::byte> bytes(n);
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(n));
  if (!in) fail(what + ": cannot read external data '" + file.string() + "'");
  return bytes;
}

template <typename Dst, typename Field>
void narrow_into(std::vector<std::byte>& out, const Field& field) {
  out.resize(static_cast<size_t>(field.size()) * sizeof(Dst));
  for (int i = 0; i < field.size(); ++i) {
    Dst v = static_cast<Dst>(field.Get(i));
    std::memcpy(out.data() + static_cast<size_t>(i) * sizeof(Dst), &v, sizeof(Dst));
  }
}

// The typed repeated fields, for writers that do not use raw_data.
std::vector<std::byte> typed_field_bytes(const onnx::TensorProto& p, DType dtype, const std::string& what) {
  std::vector<std::byte> out;
  switch (dtype) {
    case DType::Float32: case DType::Complex64: narrow_into<float>(out, p.float_data()); break;
    case DType::Float64: case DType::Complex128: narrow_into<double>(out, p.double_data()); break;
    case DType::Int64: narrow_into<int64_t>(out, p.int64_data()); break;
    case DType::Uint32: narrow_into<uint32_t>(out, p.uint64_data()); break;
    case DType::Uint64: narrow_into<uint64_t>(out, p.uint64_data()); break;
    case DType::Int32: narrow_into<int32_t>(out, p.int32_data()); break;
    case DType::Int16: narrow_into<int16_t>(out, p.int32_data()); break;
    case DType::Int8: narrow_into<int8_t>(out, p.int32_data()); break;
    case DType::Uint16: case DType::Float16: case DType::BFloat16: narrow_into<uint16_t>(out, p.int32_data()); break;
    case DType::Uint8: case DType::Bool: narrow_into<uint8_t>(out, p.int32_data()); break;
    default: fail_unsupported(what + ": " + dtype_name(dtype) + " tensors are not supported");
  }
  return out;
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const fs::path& model_dir, const std::string& what) {
  if (dtype_is_newer_than_onnx_1_12(proto.data_type()))
    fail_unsupported(what + ": element type " + dtype_name(static_cast<DType>(proto.data_type())) +
                     ", which no memplan kernel takes");
  if (!dtype_is_known(proto.data_type()) || proto.data_type() == 0)
    fail(what + ": unknown tensor data type " + std::to_string(proto.data_type()));
  Tensor t;
  t.dtype = static_cast<DType>(proto.data_type());
  if (dtype_size(t.dtype) == 0) fail_unsupported(what + ": " + dtype_name(t.dtype) + " tensors are not supported");
  t.dims.assign(proto.dims().begin(), proto.dims().end());
  const uint64_t count = checked_element_count(t.dims, what);
  const uint64_t expected = checked_mul(count, dtype_size(t.dtype), what);
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    t.bytes = read_external(proto, model_dir, what);
  } else if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    t.bytes.resize(raw.size());
    if (!raw.empty()) std::memcpy(t.bytes.data(), raw.data(), raw.size());
  } else {
    t.bytes = typed_field_bytes(proto, t.dtype, what);
  }
  if (t.bytes.size() != expected)
    fail(what + ": holds " + std::to_string(t.bytes.size()) + " bytes but its shape needs " +
         std::to_string(expected));
  return t;
}

void tensor_to_proto(const Tensor& t, onnx::TensorProto& proto) {
  proto.set_data_type(static_cast<int32_t>(t.dtype));
  proto.clear_dims();
  for (int64_t d : t.dims) proto.add_dims(d);
  const std::vector<std::byte> bytes = t.materialize();
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace memplan
