#include "profile_table.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>

#include "util/json.h"

namespace memplan::cli {

namespace {

struct OpTotal {
  std::string op;
  int nodes = 0;
  uint64_t calls = 0;
  double ms = 0;
};

std::vector<OpTotal> by_op(const std::vector<NodeProfile>& nodes) {
  std::map<std::string, OpTotal> totals;
  for (const NodeProfile& n : nodes) {
    OpTotal& t = totals[n.op_type];
    t.op = n.op_type;
    t.nodes += 1;
    t.calls += n.calls;
    t.ms += n.self_ms;
  }
  std::vector<OpTotal> out;
  for (auto& [op, t] : totals) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const OpTotal& a, const OpTotal& b) { return a.ms > b.ms; });
  return out;
}

std::vector<NodeProfile> slowest(std::vector<NodeProfile> nodes, size_t n) {
  std::stable_sort(nodes.begin(), nodes.end(), [](const NodeProfile& a, const NodeProfile& b) { return a.self_ms > b.self_ms; });
  if (nodes.size() > n) nodes.resize(n);
  return nodes;
}

double total_ms(const std::vector<NodeProfile>& nodes) {
  double t = 0;
  for (const NodeProfile& n : nodes) t += n.self_ms;
  return t;
}

// printf into a string. C varargs with the format attribute, so both GCC and clang check every call's
// arguments against its literal format (clang's -Wformat-security refuses a template forwarding fmt).
__attribute__((format(printf, 1, 2))) std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

}  // namespace

std::string profile_text(const std::vector<NodeProfile>& nodes, int runs, size_t top_nodes) {
  const double r = std::max(runs, 1), total = total_ms(nodes);
  std::string out = format("profile: %.3f ms per run in nodes, over %d run(s)\n", total / r, runs);
  out += format("  %-28s %6s %10s %12s %7s\n", "op type", "nodes", "calls/run", "ms/run", "share");
  for (const OpTotal& t : by_op(nodes))
    out += format("  %-28s %6d %10.1f %12.3f %6.1f%%\n", t.op.c_str(), t.nodes, static_cast<double>(t.calls) / r,
                  t.ms / r, total > 0 ? 100 * t.ms / total : 0.0);
  out += format("  slowest nodes:\n");
  for (const NodeProfile& n : slowest(nodes, top_nodes))
    out += format("  %-40s %-20s %12.3f ms/run  (%s)  %s\n", n.node.c_str(), n.op_type.c_str(), n.self_ms / r,
                  n.graph.c_str(), n.implementation.c_str());
  return out;
}

std::string profile_json(const std::vector<NodeProfile>& nodes, int runs) {
  const double r = std::max(runs, 1);
  std::string out = "\"profile\": {\"runs\": " + std::to_string(runs) + ", \"by_op\": [";
  bool first = true;
  for (const OpTotal& t : by_op(nodes)) {
    out += format("%s{\"op_type\": %s, \"nodes\": %d, \"calls_per_run\": %.3f, \"ms_per_run\": %.4f}",
                  first ? "" : ", ", json_string(t.op).c_str(), t.nodes, static_cast<double>(t.calls) / r, t.ms / r);
    first = false;
  }
  out += "], \"nodes\": [";
  first = true;
  for (const NodeProfile& n : nodes) {
    out += format("%s{\"node\": %s, \"op_type\": %s, \"graph\": %s, \"calls_per_run\": %.3f, \"ms_per_run\": %.4f, ",
                  first ? "" : ", ", json_string(n.node).c_str(), json_string(n.op_type).c_str(),
                  json_string(n.graph).c_str(), static_cast<double>(n.calls) / r, n.self_ms / r);
    out += "\"implementation\": " + json_string(n.implementation) + "}";
    first = false;
  }
  return out + "]}";
}

}  // namespace memplan::cli
