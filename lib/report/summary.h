// The model summary `memplan compile` prints: graphs and nesting, op counts, captures, tensors.
#pragma once

#include <string>

#include "ir/graph.h"

namespace memplan {

std::string model_summary(const Model& model);

}  // namespace memplan
