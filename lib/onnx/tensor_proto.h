// Conversions between onnx::TensorProto and memplan::Tensor.
#pragma once

#include <filesystem>
#include <string>

#include "ir/tensor.h"

namespace onnx {
class TensorProto;
}

namespace memplan {

// `model_dir` resolves external data; only relative paths that stay inside it are accepted.
// `what` names the tensor in error messages.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::filesystem::path& model_dir,
                         const std::string& what);
void tensor_to_proto(const Tensor& t, onnx::TensorProto& proto);

}  // namespace memplan
