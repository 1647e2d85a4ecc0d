// ONNX's container types around a tensor type: optional(T), sequence(T), optional(sequence(T)).
#pragma once

#include "ir/graph.h"
#include "onnx/onnx_pb.h"

namespace memplan {

// The type inside `tp`'s containers (tp itself for a tensor), and which container they make.
inline const onnx::TypeProto& container_element(const onnx::TypeProto& tp, Container& container) {
  const onnx::TypeProto* element = &tp;
  container = Container::None;
  if (element->has_optional_type()) {
    container = Container::Optional;
    element = &element->optional_type().elem_type();
  }
  if (element->has_sequence_type()) {
    container = container == Container::Optional ? Container::OptionalSequence : Container::Sequence;
    element = &element->sequence_type().elem_type();
  }
  return *element;
}

}  // namespace memplan
