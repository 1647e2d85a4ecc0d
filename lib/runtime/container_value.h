// A sequence's or an optional's contents in a session: its own copies of its tensors, outside the
// arena (ONNX's containers hold tensors whose sizes and number only the run decides). The element
// buffers outlive the elements: a list rebuilt on every run, or every iteration, allocates only
// until its largest form has been seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/kernel.h"

namespace memplan::rt {

class ContainerValue {
 public:
  // An optional's "holds a value"; a sequence, once made, always does.
  bool present = false;

  size_t size() const { return count_; }
  const TensorView& at(size_t i) const { return items_[i].view; }
  // Empties it (and marks it present: an empty sequence), keeping the buffers.
  void clear();
  // Copies `t` in before element `pos` (pos <= size()).
  void insert(size_t pos, const TensorView& t);
  void push_back(const TensorView& t) { insert(count_, t); }
  // A new last element shaped as `shape` (its data ignored), for the caller to fill.
  const TensorView& append_shaped(const TensorView& shape);
  // Removes element `pos` (< size()).
  void erase(size_t pos);
  // Becomes a copy of `other` (itself: unchanged).
  void assign(const ContainerValue& other);
  // Holds what `other` held and `other` what this did: a Loop's carried list handed on, no copy.
  void swap(ContainerValue& other) noexcept;
  // Bytes of element memory held (what the session reports as the container's use).
  uint64_t bytes_held() const;

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  struct Item {
    std::unique_ptr<std::byte, Free> data;
    uint64_t capacity = 0;
    TensorView view;
  };
  // Item `count_`, past the elements, with room for `t` and shaped as it; `copy`: holding its bytes.
  Item& fill_spare(const TensorView& t, bool copy);

  std::vector<Item> items_;  // the first count_ are the elements, the rest spare buffers
  size_t count_ = 0;
};

}  // namespace memplan::rt
