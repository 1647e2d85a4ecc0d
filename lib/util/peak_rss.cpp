#include "util/peak_rss.h"

#include <sys/resource.h>

#include <fstream>
#include <string>

namespace memplan {

uint64_t process_peak_rss_bytes() {
  // VmHWM: the peak of this process image's own memory. getrusage's ru_maxrss keeps the high
  // mark across exec, so a memplan started by a large process (a test runner) would read that
  // process's peak; it is the fallback where /proc is not mounted.
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "VmHWM:   1234 kB"
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0 || usage.ru_maxrss < 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux counts kilobytes
}

}  // namespace memplan
