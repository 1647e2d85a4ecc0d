// memplan's one exception type. Every user-facing failure is an Error with a one-line message that
// names the file, node, tensor or op at fault, and a kind that maps to the CLI's exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace memplan {

enum class ErrorKind {
  InvalidInput = 2,   // unreadable or malformed model, plan, npy; wrong input shape or dtype
  Unsupported = 3,    // an op, opset, dtype or feature memplan does not implement
  Verification = 4,   // a plan that overlaps, or a buffer clobbered at run time
  Internal = 70,      // a broken invariant inside memplan (a bug)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void fail(const std::string& message) { throw Error(ErrorKind::InvalidInput, message); }
[[noreturn]] inline void fail_unsupported(const std::string& message) {
  throw Error(ErrorKind::Unsupported, message);
}
[[noreturn]] inline void fail_internal(const std::string& message) {
  throw Error(ErrorKind::Internal, "internal error: " + message);
}

}  // namespace memplan
