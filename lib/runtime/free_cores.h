// How many cores the machine's other processes leave this process, measured rather than guessed:
// the kernel's count of each CPU's busy time (/proc/stat, the CPUs this process may run on) less
// this process's own CPU time, over windows of at least kWindowNs. A session of several threads
// runs on one while fewer cores than its count are free (runtime/run_threads.h): oneDNN's OpenMP
// threads wait for each other after every primitive, so a thread whose core another process holds
// stalls the rest, and a waiting thread spins on the core the other process needs. With one core
// of two busy, that made two threads several times slower than one.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

namespace memplan {

// One reading of the counters.
struct CpuSample {
  int64_t wall_ns = 0;  // steady clock
  int64_t busy_ns = 0;  // summed over the CPUs this process may run on: all but idle and iowait time
  int64_t own_ns = 0;   // this process's CPU time, all its threads
  int cpus = 0;         // how many CPUs this process may run on
};

// Cores' worth of CPU time that other processes used between two readings; 0 when the readings
// are out of order or the counters' ticks make it come out below 0.
double others_busy_cores(const CpuSample& before, const CpuSample& after);

// Other processes' share of a core from which it counts as busy.
constexpr double kBusyCoreShare = 0.25;

// The threads one run should use: at most `full`, at least one, else one per core that other
// processes (`others_busy` cores, a core for each whole one and one for a remainder of
// kBusyCoreShare or more) and the other runs of this process in flight leave free
// (`runs_in_flight` counts this run too).
int threads_for_free_cores(int full, int cpus, double others_busy, int runs_in_flight);

// Reads the counters; nullopt where /proc/stat cannot be read (another OS, a sandbox).
std::optional<CpuSample> read_cpu_sample();

// The process's view of the other processes' load, shared by every session: the latest complete
// window's figure, renewed by the first run that finds the window over.
class FreeCores {
 public:
  static constexpr int64_t kWindowNs = 100'000'000;

  // The process's instance; its first window starts at the first call (compile calls it, so a
  // model's first runs already have a window behind them).
  static FreeCores& process();

  // The cores other processes used in the latest window, or nullopt when nothing is measured yet
  // (or cannot be). Reads a new sample when the window is over. `wait_for_first`: where no window
  // is complete yet, waits for the first to end (at most kWindowNs) rather than say nullopt.
  std::optional<double> others_busy(bool wait_for_first = false);
  int cpus() const { return cpus_; }

 private:
  FreeCores();
  std::mutex mutex_;
  std::optional<CpuSample> last_;
  std::optional<double> others_;
  int cpus_ = 0;
};

// The threads of `full` that the cores left free allow a run: the other processes' load
// (FreeCores::process()), shared among this process's runs in flight. `full` where the machine's
// counters cannot be read or (without `wait_for_first`, see FreeCores::others_busy) nothing is
// measured yet.
int threads_left_free(int full, bool wait_for_first = false);

// Counts a run in flight in this process for its scope (threads_for_free_cores shares the free
// cores among them).
class RunInFlight {
 public:
  RunInFlight();
  ~RunInFlight();
  RunInFlight(const RunInFlight&) = delete;
  RunInFlight& operator=(const RunInFlight&) = delete;
  static int count();
};

}  // namespace memplan
