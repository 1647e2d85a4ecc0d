// The process's peak resident memory so far (VmHWM), as `/usr/bin/time -f %M` reads it when the
// process ends: what a user of memplan measures, the weights, the arena, the compile's working
// memory and the code pages touched together.
#pragma once

#include <cstdint>

namespace memplan {

uint64_t process_peak_rss_bytes();

}  // namespace memplan
