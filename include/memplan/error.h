// memplan's one exception type. Every user-facing failure is an Error with a one-line message that
// names the file, node, tensor or op at fault, and a kind that maps to the CLI's exit code.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

// An option that would fix an error. The library does not know how its caller spells options:
// Error::what() names them as CompileOptions does, and the CLI prints its own flags instead
// (Error::message() and remedies()).
struct Remedy {
  enum class Option { InputShapes, Dims, Bounds, StaticOnly };
  Option option;
  std::string name;   // the input, dim or tensor it is for ("" for StaticOnly)
  std::string value;  // "<dims>", "<value>"
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, std::vector<Remedy> remedies = {})
      : std::runtime_error(one_line(message) + api_remedies(remedies)),
        kind_(kind),
        message_(one_line(message)),
        remedies_(std::move(remedies)) {}
  ErrorKind kind() const noexcept { return kind_; }
  // what() without the remedies.
  const std::string& message() const noexcept { return message_; }
  const std::vector<Remedy>& remedies() const noexcept { return remedies_; }

  // " (set bounds[y] = <dims>, or static_only = false)" as the C++ and Python APIs spell them.
  static std::string api_remedies(const std::vector<Remedy>& remedies) {
    std::string out;
    for (const Remedy& r : remedies) {
      out += out.empty() ? " (set " : ", or ";
      switch (r.option) {
        case Remedy::Option::InputShapes: out += "input_shapes[" + one_line(r.name) + "] = " + r.value; break;
        case Remedy::Option::Dims: out += "dims[" + one_line(r.name) + "] = " + r.value; break;
        case Remedy::Option::Bounds: out += "bounds[" + one_line(r.name) + "] = " + r.value; break;
        case Remedy::Option::StaticOnly: out += "static_only = false"; break;
      }
    }
    return out.empty() ? out : out + ")";
  }

 private:
  ErrorKind kind_;
  std::string message_;
  std::vector<Remedy> remedies_;
};

[[noreturn]] inline void fail(const std::string& message, std::vector<Remedy> remedies = {}) {
  throw Error(ErrorKind::InvalidInput, message, std::move(remedies));
}
[[noreturn]] inline void fail_unsupported(const std::string& message, std::vector<Remedy> remedies = {}) {
  throw Error(ErrorKind::Unsupported, message, std::move(remedies));
}
[[noreturn]] inline void fail_internal(const std::string& message) {
  throw Error(ErrorKind::Internal, "internal error: " + message);
}

}  // namespace memplan
