// Nodes that need no op of their own, removed before layouts and planning: a Pad of zeros
// (PyTorch exports one before every AvgPool2d), a zero-filling spatial Pad before a Conv or an
// AveragePool that counts padding (folded into its pads), and a Dropout in inference mode whose
// mask nothing reads (Caffe2's and older exporters' classifiers). Each would otherwise copy its
// input or, as a plain-layout reader, keep a whole chain of convolutions out of the blocked layout.
#pragma once

#include "ir/graph.h"

namespace memplan {

// Removes them in every graph; returns how many. Uses are rebuilt afterwards.
int drop_noops(Model& model);

}  // namespace memplan
