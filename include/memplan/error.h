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

// Names in messages come from untrusted files: control bytes are escaped so a message stays one line.
inline std::string one_line(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(one_line(message)), kind_(kind) {}
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
