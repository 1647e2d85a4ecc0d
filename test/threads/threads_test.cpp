// The thread options are honored, seen from outside: which OS threads of this process spend CPU
// time while a session runs. Its own process, since OpenMP's worker threads live as long as the
// process does and other tests would leave theirs behind.
//
//  - a model compiled for 2 threads, run by a session of SessionOptions::threads = 1: the OpenMP
//    worker does (next to) nothing; by a session of 2 threads: it does a good share of the work;
//  - a small model is compiled for 1 thread by default, a large one for OpenMP's default;
//  - a session asking for more threads than the model was compiled for is refused;
//  - with another process busy on every other core, a session of 2 threads that adapts to the
//    load runs on one: its OpenMP worker does (next to) nothing, and it says so.
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <omp.h>

#include "memplan/memplan.h"

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}

// CPU time (user + system, in clock ticks) of every thread of this process, by thread id.
std::map<long, long> thread_ticks() {
  std::map<long, long> out;
  DIR* d = opendir("/proc/self/task");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/stat");
    std::string line;
    std::getline(f, line);
    // Fields after the command name (which may hold spaces) in ")": state is field 3, utime 14, stime 15.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::vector<std::string> fields;
    for (std::string x; rest >> x;) fields.push_back(x);
    if (fields.size() > 12) out[std::atol(e->d_name)] = std::atol(fields[11].c_str()) + std::atol(fields[12].c_str());
  }
  closedir(d);
  return out;
}

struct Share {
  long main = 0, others = 0;  // ticks of this thread and of every other thread during the runs
};

// Runs `runs` inferences of `s` on zeros and reports who did the work.
Share run_and_measure(memplan::Session& s, const memplan::CompiledModel& model, int runs) {
  const long self = static_cast<long>(gettid());
  std::vector<std::vector<unsigned char>> zeros;
  for (const auto& in : model.inputs()) zeros.emplace_back(in.capacity_bytes);
  auto feed = [&] {
    for (size_t i = 0; i < zeros.size(); ++i) {
      const auto& in = model.inputs()[i];
      s.set_input(in.name, in.dtype, in.shape, zeros[i].data(), zeros[i].size());
    }
  };
  feed();
  s.run();      // warm-up
  usleep(100000);  // a worker still spinning after the last parallel region settles
  const auto before = thread_ticks();
  for (int r = 0; r < runs; ++r) {
    feed();
    s.run();
  }
  const auto after = thread_ticks();
  Share share;
  for (const auto& [tid, ticks] : after) {
    const auto it = before.find(tid);
    const long delta = ticks - (it == before.end() ? 0 : it->second);
    (tid == self ? share.main : share.others) += delta;
  }
  return share;
}

// A busy loop in a child process on each of `n` cores, for the scope: other processes' load.
class BusyCores {
 public:
  explicit BusyCores(int n) {
    for (int k = 0; k < n; ++k) {
      const pid_t p = fork();
      if (p == 0) {
        volatile unsigned long spin = 0;
        for (;;) spin = spin + 1;
      }
      if (p > 0) pids_.push_back(p);
    }
  }
  ~BusyCores() {
    for (pid_t p : pids_) kill(p, SIGKILL);
    for (pid_t p : pids_) waitpid(p, nullptr, 0);
  }
  size_t count() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

int allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

}  // namespace

int main() {
  const std::string real = std::string(MEMPLAN_SOURCE_DIR) + "/models/real/";
  using memplan::CompiledModel;
  using memplan::Session;

  // light_resnet50: about 8 GFLOP per inference; models/tiny_mlp: a few thousand FLOP.
  const auto small = CompiledModel::compile(std::string(MEMPLAN_SOURCE_DIR) + "/models/tiny_mlp/model.onnx", {});
  check(small->threads() == 1, "a small model is compiled for 1 thread (got " + std::to_string(small->threads()) + ")");
  const auto big_default = CompiledModel::compile(real + "light_resnet50/model.onnx", {});
  check(big_default->threads() == omp_get_max_threads(),
        "a large model is compiled for OpenMP's default, " + std::to_string(omp_get_max_threads()) + " (got " +
            std::to_string(big_default->threads()) + ")");

  memplan::CompileOptions two;
  two.threads = 2;
  const auto big = CompiledModel::compile(real + "light_resnet50/model.onnx", two);
  check(big->threads() == 2, "CompileOptions::threads = 2 is kept (got " + std::to_string(big->threads()) + ")");

  {
    Session one(big, memplan::SessionOptions{false, false, 1});
    const Share s = run_and_measure(one, *big, 8);
    // Two threads would split the work about evenly; a fifth leaves room for reorders and the
    // OpenMP pool's spinning under a sanitizer on a busy machine (a tenth failed there once: 38/4).
    check(s.main > 20 && s.others * 5 <= s.main,
          "SessionOptions::threads = 1: the other threads did at most a fifth of the work (main " +
              std::to_string(s.main) + " ticks, others " + std::to_string(s.others) + ")");
  }
  {
    // Not adapting to load: other processes on this machine could make it run on one thread.
    Session both(big, memplan::SessionOptions{false, false, 2, false});
    const Share s = run_and_measure(both, *big, 8);
    check(s.others * 4 >= s.main,
          "SessionOptions::threads = 2: another thread did at least a quarter as much as this one (main " +
              std::to_string(s.main) + " ticks, others " + std::to_string(s.others) + ")");
  }
  {
    const int cpus = allowed_cpus();
    BusyCores busy(cpus - 1);
    check(busy.count() == static_cast<size_t>(cpus - 1), "a busy process started on each of the other cores");
    Session adapting(big, memplan::SessionOptions{false, false, 2, true});
    // Runs for a while first: the session reads the machine's load over windows of 100 ms.
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(400)) run_and_measure(adapting, *big, 1);
    const std::vector<uint64_t> before = adapting.runs_by_threads();
    const Share s = run_and_measure(adapting, *big, 8);
    const std::vector<uint64_t> after = adapting.runs_by_threads();
    check(after.size() == 3 && after[2] == before[2] && after[1] >= before[1] + 8,
          "with the other cores busy, an adapting session of 2 threads ran its runs on one (runs on 2 threads: " +
              std::to_string(after.size() == 3 ? after[2] - before[2] : 0) + " of 8)");
    check(s.main > 20 && s.others * 5 <= s.main,
          "with the other cores busy, the other threads did at most a fifth of the work (main " +
              std::to_string(s.main) + " ticks, others " + std::to_string(s.others) + ")");
  }
  bool refused = false;
  try {
    Session too_many(big, memplan::SessionOptions{false, false, 3});
  } catch (const memplan::Error& e) {
    refused = std::string(e.what()).find("compiled for 2") != std::string::npos;
  }
  check(refused, "a session of more threads than the model was compiled for is refused, saying why");
  bool negative = false;
  try {
    memplan::CompileOptions bad;
    bad.threads = -1;
    CompiledModel::compile(real + "wonnx_opt_mnist/model.onnx", bad);
  } catch (const memplan::Error&) {
    negative = true;
  }
  check(negative, "CompileOptions::threads = -1 is refused");
  std::printf("%s\n", failures ? "threads test FAILED" : "threads test passed");
  return failures ? 1 : 0;
}
