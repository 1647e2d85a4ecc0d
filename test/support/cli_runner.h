// Runs the memplan CLI as a child process (no shell), capturing its exit status and output.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace memplan::test {

namespace fs = std::filesystem;

struct Run {
  int exit_code = -1;    // valid when !signaled
  bool signaled = false;
  int signal = 0;
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs MEMPLAN_CLI with `args` (no shell), stdout and stderr captured through temp files.
inline Run run_cli(const std::vector<std::string>& args) {
  std::string tmpl = (fs::temp_directory_path() / "memplan_cli_test_XXXXXX").string();
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  const fs::path dir = tmpl;
  const std::string out_path = (dir / "stdout").string(), err_path = (dir / "stderr").string();

  std::vector<std::string> argv_s{MEMPLAN_CLI};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);

  Run r;
  if (WIFSIGNALED(status)) {
    r.signaled = true;
    r.signal = WTERMSIG(status);
  } else {
    r.exit_code = WEXITSTATUS(status);
  }
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return r;
}

}  // namespace memplan::test
