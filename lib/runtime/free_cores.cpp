#include "runtime/free_cores.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

namespace memplan {

namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t process_cpu_ns() {
  timespec t{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

std::atomic<int> runs_in_flight{0};

}  // namespace

double others_busy_cores(const CpuSample& before, const CpuSample& after) {
  const int64_t wall = after.wall_ns - before.wall_ns;
  if (wall <= 0) return 0;
  const int64_t others = (after.busy_ns - before.busy_ns) - (after.own_ns - before.own_ns);
  return std::max(0.0, static_cast<double>(others) / static_cast<double>(wall));
}

int threads_for_free_cores(int full, int cpus, double others_busy, int runs_in_flight) {
  // A core counts as busy from a quarter of it on: a thread that loses its core that often
  // stalls the others at every barrier.
  const int busy = static_cast<int>(std::floor(std::max(others_busy, 0.0) + 1.0 - kBusyCoreShare));
  const int free = std::max(cpus - busy, 1) / std::max(runs_in_flight, 1);
  return std::clamp(free, 1, std::max(full, 1));
}

namespace {

// Adds a "cpuN user nice system idle iowait irq softirq steal ..." line's busy ticks to `s` when
// CPU N is one of `allowed`.
void add_cpu_line(const char* line, const cpu_set_t& allowed, int64_t& busy_ticks, CpuSample& s) {
  char* end = nullptr;
  const long cpu = std::strtol(line + 3, &end, 10);
  if (end == line + 3 || cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) return;
  int64_t field[8] = {};  // user nice system idle iowait irq softirq steal (steal since Linux 2.6.11)
  const char* at = end;
  for (int64_t& f : field) {
    f = std::strtoll(at, &end, 10);
    if (end == at) break;
    at = end;
  }
  // Steal time is a virtual CPU's time the host gave to others: busy for this process too.
  busy_ticks += field[0] + field[1] + field[2] + field[5] + field[6] + field[7];
  ++s.cpus;
}

}  // namespace

// Read with open/read into buffers on the stack: a run reads the counters when a window is over,
// and an inference allocates nothing.
std::optional<CpuSample> read_cpu_sample() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return std::nullopt;
  const long ticks_per_s = sysconf(_SC_CLK_TCK);
  if (ticks_per_s <= 0) return std::nullopt;
  const int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  CpuSample s;
  s.wall_ns = steady_ns();
  s.own_ns = process_cpu_ns();
  int64_t busy_ticks = 0;
  // "cpu ..." sums the CPUs, then "cpuN ..." for each; the lines after them (interrupt counts,
  // long) are not read. A CPU's line is well under kLine bytes.
  constexpr size_t kLine = 512;
  char chunk[4096], line[kLine];
  size_t len = 0;
  bool done = false;
  for (ssize_t got; !done && (got = read(fd, chunk, sizeof chunk)) > 0;) {
    for (ssize_t i = 0; i < got && !done; ++i) {
      if (chunk[i] != '\n') {
        if (len + 1 < kLine) line[len++] = chunk[i];
        continue;
      }
      line[len] = '\0';
      if (len < 4 || std::strncmp(line, "cpu", 3) != 0) done = true;
      else if (line[3] != ' ') add_cpu_line(line, allowed, busy_ticks, s);
      len = 0;
    }
  }
  close(fd);
  if (s.cpus == 0) return std::nullopt;
  s.busy_ns = busy_ticks * (1'000'000'000 / ticks_per_s);
  return s;
}

FreeCores& FreeCores::process() {
  static FreeCores instance;
  return instance;
}

FreeCores::FreeCores() : last_(read_cpu_sample()) {
  if (last_) cpus_ = last_->cpus;
}

std::optional<double> FreeCores::others_busy(bool wait_for_first) {
  if (wait_for_first) {
    int64_t left = 0;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (last_ && !others_) left = last_->wall_ns + kWindowNs - steady_ns();
    }
    // Unlocked: a session's run reading the load meanwhile is not held up.
    if (left > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(left));
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!last_) return std::nullopt;
  if (steady_ns() - last_->wall_ns >= kWindowNs) {
    const std::optional<CpuSample> now = read_cpu_sample();
    if (!now) return others_;
    others_ = others_busy_cores(*last_, *now);
    last_ = now;
    cpus_ = now->cpus;
  }
  return others_;
}

int threads_left_free(int full, bool wait_for_first) {
  FreeCores& cores = FreeCores::process();
  const std::optional<double> others = cores.others_busy(wait_for_first);
  return others ? threads_for_free_cores(full, cores.cpus(), *others, RunInFlight::count()) : full;
}

RunInFlight::RunInFlight() { runs_in_flight.fetch_add(1, std::memory_order_relaxed); }
RunInFlight::~RunInFlight() { runs_in_flight.fetch_sub(1, std::memory_order_relaxed); }
int RunInFlight::count() { return runs_in_flight.load(std::memory_order_relaxed); }

}  // namespace memplan
