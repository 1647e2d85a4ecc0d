// A JSON string literal for any text (names come from untrusted files): quotes, backslashes and
// control bytes escaped. The reports write their JSON by hand; this is the one escaping rule.
#pragma once

#include <cstdio>
#include <string>

namespace memplan {

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace memplan
