// Ops that do nothing, removed before layouts and planning: a Pad of zeros (PyTorch exports one
// before every AvgPool2d) would otherwise copy its input and, as a plain-layout reader, keep a
// whole chain of convolutions out of the fast blocked layout.
#pragma once

#include "ir/graph.h"

namespace memplan {

// Removes them in every graph; returns how many. Uses are rebuilt afterwards.
int drop_noops(Model& model);

}  // namespace memplan
