#include "runtime/free_cores.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

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

std::optional<CpuSample> read_cpu_sample() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return std::nullopt;
  const long ticks_per_s = sysconf(_SC_CLK_TCK);
  std::ifstream stat("/proc/stat");
  if (ticks_per_s <= 0 || !stat) return std::nullopt;
  CpuSample s;
  s.wall_ns = steady_ns();
  s.own_ns = process_cpu_ns();
  int64_t busy_ticks = 0;
  std::string line;
  // "cpu user nice system idle iowait irq softirq steal ..." sums the CPUs, then "cpuN ..." for
  // each; the lines after them (interrupt counts) are not read.
  while (std::getline(stat, line) && line.compare(0, 3, "cpu") == 0) {
    if (line.size() < 4 || line[3] == ' ') continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    int64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    fields >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;  // steal since Linux 2.6.11
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) continue;
    // Steal time is a virtual CPU's time the host gave to others: busy for this process too.
    busy_ticks += user + nice + system + irq + softirq + steal;
    ++s.cpus;
  }
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

std::optional<double> FreeCores::others_busy() {
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

RunInFlight::RunInFlight() { runs_in_flight.fetch_add(1, std::memory_order_relaxed); }
RunInFlight::~RunInFlight() { runs_in_flight.fetch_sub(1, std::memory_order_relaxed); }
int RunInFlight::count() { return runs_in_flight.load(std::memory_order_relaxed); }

}  // namespace memplan
