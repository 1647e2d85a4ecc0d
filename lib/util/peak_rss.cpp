#include "util/peak_rss.h"

#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace memplan {

uint64_t process_peak_rss_bytes() {
  // VmHWM: the peak of this process image's own memory. getrusage's ru_maxrss keeps the high
  // mark across exec, so a memplan started by a large process (a test runner) would read that
  // process's peak; it is the fallback where /proc is not mounted.
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) {
      // "VmHWM:   1234 kB"; strtoull, not stoull: an odd line reads 0 (then getrusage) instead of
      // throwing after the run has succeeded.
      const unsigned long long kb = std::strtoull(line.c_str() + 6, nullptr, 10);
      if (kb > 0) return static_cast<uint64_t>(kb) * 1024;
    }
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0 || usage.ru_maxrss < 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux counts kilobytes
}

}  // namespace memplan
