#include "plan/plan.h"

namespace memplan {

std::string PlannedBuffer::label() const {
  switch (kind) {
    case BufferKind::Region: return "region:" + name;
    case BufferKind::Scratchpad: return "scratchpad:" + name;
    case BufferKind::Tensor: break;
  }
  return name;
}

}  // namespace memplan
