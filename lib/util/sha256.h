// SHA-256, so a plan can name the exact model file it was made for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace memplan {

// Incremental SHA-256, for data read in pieces (a model file too large to hold twice).
class Sha256 {
 public:
  Sha256();
  void update(std::string_view data);
  std::string hex();  // lower-case digest; call once, after the last update

 private:
  uint32_t h_[8];
  unsigned char buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0;
};

// Lower-case hex digest of `data`.
std::string sha256_hex(std::string_view data);

}  // namespace memplan
