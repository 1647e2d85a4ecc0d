// SHA-256, so a plan can name the exact model file it was made for.
#pragma once

#include <string>
#include <string_view>

namespace memplan {

// Lower-case hex digest of `data`.
std::string sha256_hex(std::string_view data);

}  // namespace memplan
