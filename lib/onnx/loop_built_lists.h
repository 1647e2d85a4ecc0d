// Python lists built in scripted loops, as torch.onnx exports them, become Loop scan outputs.
//
// `out = []; for i in range(n): out.append(f(i)); torch.stack(out)` exports as a Loop that carries
// an ONNX sequence (SequenceEmpty, then SequenceInsert in the body) read afterwards by
// ConcatFromSequence, SequenceLength or SequenceAt. Appending one tensor per iteration is what a
// Loop's scan output does, planned like any other (a bounded trip count in the arena, a run-time
// one as a dynamic tensor), so the file is rewritten before it is imported:
//   - the carried sequence goes; the body returns the appended tensor as a new scan output S;
//   - ConcatFromSequence(axis 0, new_axis 1) is S; (axis 0, new_axis 0) is S with its first two
//     axes merged (Shape, Slice, ReduceProd, Concat, Reshape); SequenceLength is S's first dim;
//     SequenceAt(i) is Gather(S, i).
// Only where every read of the list is one of these, wherever it is (If branches included), and
// the body appends at the end exactly once per iteration. A tensor split into a list
// (SplitToSequence, no sizes: `torch.unbind`, a list iterated in a loop) and then only indexed
// or counted is the tensor itself: SequenceAt is a Gather along the split axis, SequenceLength
// its size. Any other use of a sequence is left as it is (and refused at import, naming it).
#pragma once

namespace onnx {
class ModelProto;
}

namespace memplan {

// Rewrites every such list in the model's graphs, subgraphs included; returns how many.
int lower_loop_built_lists(onnx::ModelProto& model);

}  // namespace memplan
