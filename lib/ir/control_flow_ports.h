// How an If, Loop or Scan node's inputs and outputs meet its subgraphs' inputs and outputs, as
// ONNX defines them. Shapes, lifetimes, the planner, the verifier and the executor all ask this
// one place instead of each redoing the index arithmetic:
//
//   If    node outputs[k]          <- branch outputs[k]
//   Loop  node inputs  (M, cond, v_initial...)
//         body inputs  (iteration, cond, v...)       body outputs (cond, v..., scan elements...)
//         node outputs (v_final..., scan outputs...)
//   Scan  node inputs  ([sequence_lens,] states..., scan inputs...)      (sequence_lens: opset 8)
//         body inputs  (states..., scan elements...)  body outputs (states..., scan elements...)
//         node outputs (final states..., scan outputs...)
//
// A loop keeps what flows from one iteration to the next in slots: Loop slot 0 is the iteration
// counter, slot 1 the condition, slot 2 + j carried value j; Scan slot j is state j.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ir/graph.h"

namespace memplan {

struct Port {
  enum class Kind : uint8_t {
    Counter,    // Loop body input 0: the iteration number, written by the executor
    Condition,  // Loop body input 1 and output 0
    Carried,    // a Loop carried value or a Scan state
    Scan,       // a Scan input's element, or a Loop/Scan scan output's element
    Branch,     // an If branch output
  };
  Kind kind = Kind::Branch;
  size_t index = 0;        // Carried: the carried index j; Scan: the scan input or output index
  int32_t slot = -1;       // the loop slot it reads or writes; -1 for none
  int32_t node_port = -1;  // body input: the node input feeding it (-1: none);
                           // body output: the node output it becomes (-1: none)
};

class ControlFlowPorts {
 public:
  // `n` must be an If, Loop or Scan node; the counts come from its inputs and attributes, so
  // validate the subgraph's arity against them (body_inputs(), body_outputs()) before indexing.
  explicit ControlFlowPorts(const Node& n);

  bool is_loop() const { return op_ == Op::Loop; }
  bool is_scan() const { return op_ == Op::Scan; }

  size_t carried() const { return carried_; }          // Loop carried values / Scan states
  size_t scan_inputs() const { return scan_inputs_; }  // Scan only
  size_t first_carried_input() const { return first_input_; }  // node input of carried value 0
  size_t slots() const { return carried_ + slot_base(); }      // counter and condition included

  // The arity the ONNX spec requires of the body: the Loop's scan outputs are what the body
  // returns beyond its condition and carried values, so only their minimum is fixed.
  size_t body_inputs() const;
  size_t min_body_outputs() const;
  size_t scan_outputs(size_t body_outputs) const { return body_outputs - min_body_outputs(); }

  Port body_input(size_t k) const;
  Port body_output(size_t k) const;

  // The body input and output that use a slot (slot 0 of a Loop, the counter, has no output).
  size_t body_input_of_slot(int32_t slot) const { return static_cast<size_t>(slot); }
  int64_t body_output_of_slot(int32_t slot) const;
  int32_t slot_of_carried(size_t j) const { return static_cast<int32_t>(slot_base() + j); }
  // The node output of scan output i.
  size_t node_output_of_scan(size_t i) const { return carried_ + i; }
  // The body output that produces node output o.
  size_t body_output_of_node_output(size_t o) const { return o + (op_ == Op::Loop ? 1 : 0); }

 private:
  enum class Op : uint8_t { If, Loop, Scan };
  size_t slot_base() const { return op_ == Op::Loop ? 2 : 0; }

  Op op_ = Op::If;
  size_t first_input_ = 0;
  size_t carried_ = 0;
  size_t scan_inputs_ = 0;
};

}  // namespace memplan
