#include "shape_options.h"

#include "memplan/error.h"

namespace memplan::cli {
namespace {

std::pair<std::string, std::string> split_assignment(const std::string& text, const std::string& option) {
  auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) fail(option + " " + text + ": expected NAME=VALUE");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace

void add_shape_options(CLI::App& sub, ShapeArgs& args) {
  sub.add_option("--shape", args.shapes, "Fix an input's shape: NAME=1x3x224x224 (repeatable)")->allow_extra_args(false);
  sub.add_option("--dim", args.dims, "Fix a symbolic dimension: NAME=VALUE (repeatable)")->allow_extra_args(false);
  sub.add_option("--bound", args.bounds,
                 "Largest shape of a tensor whose size is only known at run time: NAME=DIMS (repeatable)")
      ->allow_extra_args(false);
  sub.add_flag("--static", args.static_only,
               "Refuse dynamic tensors (sizes only the run decides) instead of allocating them outside the arena");
}

ShapeOptions to_shape_options(const ShapeArgs& args) {
  ShapeOptions o;
  o.static_only = args.static_only;
  for (const auto& s : args.shapes) {
    auto [name, dims] = split_assignment(s, "--shape");
    o.input_shapes[name] = parse_dims(dims, "--shape " + name);
  }
  for (const auto& s : args.dims) {
    auto [name, value] = split_assignment(s, "--dim");
    auto dims = parse_dims(value, "--dim " + name);
    if (dims.size() != 1) fail("--dim " + s + ": expected NAME=VALUE with one non-negative integer");
    o.dims[name] = dims[0];
  }
  for (const auto& s : args.bounds) {
    auto [name, dims] = split_assignment(s, "--bound");
    o.bounds[name] = parse_dims(dims, "--bound " + name);
  }
  return o;
}

}  // namespace memplan::cli
