// --shape, --dim, --bound and --static: how the user fixes sizes the model leaves open.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "shapes/shape_inference.h"

namespace memplan::cli {

struct ShapeArgs {
  std::vector<std::string> shapes, dims, bounds;
  bool static_only = false;
};

void add_shape_options(CLI::App& sub, ShapeArgs& args);
ShapeOptions to_shape_options(const ShapeArgs& args);

}  // namespace memplan::cli
