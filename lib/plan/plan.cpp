#include "plan/plan.h"

#include <cctype>

namespace memplan {

std::string PlannedBuffer::label() const {
  switch (kind) {
    case BufferKind::Region: return "region:" + name;
    case BufferKind::Scratchpad: return "scratchpad:" + name;
    case BufferKind::Tensor: break;
  }
  return name;
}

bool is_reference_implementation(const std::string& implementation) {
  // Kernel::implementation() lists oneDNN's names after the start, a space, or "; ": "ref:any",
  // "ref_int8:any", and with the primitive's name first, "lrn_ref:any" (LRN of any size but 5).
  // oneDNN 2.6's RNN primitive names its gemm-based implementation (jit gemm, jit cells) plain
  // "ref", with no colon: that one is not its unvectorized fallback.
  for (size_t at = implementation.find("ref"); at != std::string::npos; at = implementation.find("ref", at + 1)) {
    if (at != 0 && implementation[at - 1] != ' ' && implementation[at - 1] != '_') continue;
    size_t end = at + 3;
    while (end < implementation.size() && (std::isalnum(static_cast<unsigned char>(implementation[end])) || implementation[end] == '_'))
      ++end;
    if (end < implementation.size() && implementation[end] == ':') return true;
  }
  return false;
}

std::vector<const KernelImplementation*> reference_kernels(const MemoryPlan& plan) {
  std::vector<const KernelImplementation*> out;
  for (const KernelImplementation& k : plan.kernels)
    if (is_reference_implementation(k.implementation)) out.push_back(&k);
  return out;
}

}  // namespace memplan
