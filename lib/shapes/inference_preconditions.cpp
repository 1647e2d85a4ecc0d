#include "shapes/inference_preconditions.h"

#include "memplan/error.h"

namespace memplan {
namespace {

const Value* input(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : nullptr; }

bool ranked(const Value* v) { return v && v->type.has_rank; }

int64_t rank(const Value* v) { return static_cast<int64_t>(v->type.dims.size()); }

// Convolutions and pools: their spatial attributes are read as lists of (rank - 2) values, and a
// convolution's weight shape as one of the input's rank.
void check_conv_pool(const Node& n, const std::string& where, size_t weight_index, bool has_weight) {
  // ONNX's inference divides by the strides and multiplies by the dilations (found by fuzz_onnx:
  // a stride of 0 was a division by zero inside libonnx).
  for (const char* attr : {"kernel_shape", "strides", "dilations"})
    if (const Attribute* a = n.attr(attr))
      for (int64_t v : a->ints)
        if (v < 1) fail(where + ": attribute " + attr + " holds " + std::to_string(v) + "; every value must be at least 1");
  const Value* x = input(n, 0);
  if (!ranked(x)) return;
  const int64_t r = rank(x);
  if (r < 3) fail(where + ": input '" + x->name + "' has rank " + std::to_string(r) + ", at least 3 (N, C, spatial...) is needed");
  const auto spatial = static_cast<size_t>(r - 2);
  if (has_weight) {
    const Value* w = input(n, weight_index);
    if (ranked(w) && rank(w) != r)
      fail(where + ": weight '" + w->name + "' has rank " + std::to_string(rank(w)) + ", the input rank " + std::to_string(r));
  }
  auto check_length = [&](const char* attr, size_t want) {
    const Attribute* a = n.attr(attr);
    if (a && a->ints.size() != want)
      fail(where + ": attribute " + attr + " has " + std::to_string(a->ints.size()) + " values, the input's " +
           std::to_string(spatial) + " spatial axes need " + std::to_string(want));
  };
  check_length("kernel_shape", spatial);
  check_length("strides", spatial);
  check_length("dilations", spatial);
  check_length("pads", 2 * spatial);
  if (n.op_type == "ConvTranspose") {
    check_length("output_padding", spatial);
    check_length("output_shape", spatial);
  }
  if (n.attr("group") && n.attr_int("group", 1) < 1) fail(where + ": group must be at least 1");
}

// STFT's inference reads dim 1 of the signal (a rank-1 signal crashed libonnx) and divides by
// a constant frame_step, which it reads as one element.
void check_stft(const Node& n, const std::string& where) {
  const Value* signal = input(n, 0);
  if (ranked(signal) && rank(signal) != 3)
    fail(where + ": signal '" + signal->name + "' has rank " + std::to_string(rank(signal)) +
         "; STFT takes [batch, length, 1 or 2]");
  const Value* step = input(n, 1);
  if (!step || !step->constant) return;
  if (step->constant->element_count() != 1)
    fail(where + ": frame_step '" + step->name + "' must hold one value, it holds " +
         std::to_string(step->constant->element_count()));
  if (step->constant->int_at(0) < 1)
    fail(where + ": frame_step " + std::to_string(step->constant->int_at(0)) + " must be at least 1");
}

}  // namespace

void check_inference_preconditions(const Node& n, const std::string& file) {
  if (!n.domain.empty()) return;
  const std::string where = file + ": " + n.graph->path() + ": " + n.describe();
  const std::string& op = n.op_type;
  if (op == "Conv" || op == "ConvInteger" || op == "ConvTranspose") check_conv_pool(n, where, 1, true);
  else if (op == "QLinearConv") check_conv_pool(n, where, 3, true);
  else if (op == "MaxPool" || op == "AveragePool" || op == "LpPool") check_conv_pool(n, where, 0, false);
  else if (op == "STFT") check_stft(n, where);
  else if (op == "LayerNormalization") {
    const Value* x = input(n, 0);
    const int64_t axis = n.attr_int("axis", -1);
    if (ranked(x) && (axis < -rank(x) || axis >= rank(x)))
      fail(where + ": axis " + std::to_string(axis) + " is out of range for input '" + x->name + "' of rank " +
           std::to_string(rank(x)));
  }
}

}  // namespace memplan
