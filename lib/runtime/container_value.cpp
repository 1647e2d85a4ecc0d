#include "runtime/container_value.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "memplan/error.h"

namespace memplan::rt {

namespace {
constexpr uint64_t kAlignment = 64;  // what kernels reading an element (SequenceAt's copy) expect of any tensor
}

void ContainerValue::Free::operator()(std::byte* p) const { std::free(p); }

void ContainerValue::clear() {
  count_ = 0;
  present = true;
}

ContainerValue::Item& ContainerValue::fill_spare(const TensorView& t, bool copy) {
  if (items_.size() == count_) items_.emplace_back();
  Item& item = items_[count_];
  const uint64_t bytes = t.byte_size();
  if (bytes > item.capacity || !item.data) {
    const uint64_t want = std::max(bytes, item.capacity * 2);
    if (want > UINT64_MAX - kAlignment) fail("a sequence element of " + std::to_string(bytes) + " bytes");
    const uint64_t rounded = (std::max<uint64_t>(want, 1) + kAlignment - 1) / kAlignment * kAlignment;
    auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded));
    if (!p) fail("cannot allocate a sequence element of " + std::to_string(bytes) + " bytes");
    item.data.reset(p);
    item.capacity = rounded;
  }
  if (copy && bytes) std::memcpy(item.data.get(), t.data, bytes);
  item.view = t;
  item.view.data = item.data.get();
  item.view.capacity = item.capacity;
  return item;
}

void ContainerValue::insert(size_t pos, const TensorView& t) {
  if (pos > count_) fail_internal("sequence insert past its end");
  fill_spare(t, true);
  // The new element is last; rotating moves it to pos, and the elements after pos up by one.
  std::rotate(items_.begin() + static_cast<std::ptrdiff_t>(pos), items_.begin() + static_cast<std::ptrdiff_t>(count_),
              items_.begin() + static_cast<std::ptrdiff_t>(count_ + 1));
  ++count_;
  present = true;
}

const TensorView& ContainerValue::append_shaped(const TensorView& shape) {
  const Item& item = fill_spare(shape, false);
  ++count_;
  present = true;
  return item.view;
}

void ContainerValue::erase(size_t pos) {
  if (pos >= count_) fail_internal("sequence erase past its end");
  // The erased element's buffer becomes the first spare one.
  std::rotate(items_.begin() + static_cast<std::ptrdiff_t>(pos), items_.begin() + static_cast<std::ptrdiff_t>(pos + 1),
              items_.begin() + static_cast<std::ptrdiff_t>(count_));
  --count_;
}

void ContainerValue::assign(const ContainerValue& other) {
  if (&other == this) return;
  count_ = 0;
  for (size_t i = 0; i < other.count_; ++i) {
    fill_spare(other.items_[i].view, true);
    ++count_;
  }
  present = other.present;
}

void ContainerValue::swap(ContainerValue& other) noexcept {
  std::swap(items_, other.items_);
  std::swap(count_, other.count_);
  std::swap(present, other.present);
}

uint64_t ContainerValue::bytes_held() const {
  uint64_t total = 0;
  for (const Item& item : items_) total += item.capacity;
  return total;
}

}  // namespace memplan::rt
