#include "report/plan_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string_view>
#include <vector>

#include "report/plan_report.h"

namespace memplan {
namespace {

constexpr double kWidth = 1200, kLeft = 90, kRight = 20, kTop = 62;
constexpr double kPlotW = kWidth - kLeft - kRight;
constexpr double kRowPx = 24, kMinPlotH = 240, kMaxPlotH = 1400;  // height follows peak concurrency
constexpr double kMinRect = 1.5;                                  // px: every buffer stays visible
constexpr double kCharW = 6.0, kFont = 10;                        // monospace 10px: 0.6em a glyph
constexpr int kMaxDepth = 32, kMaxSteps = 1 << 20;                // bounds against a corrupt plan

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  static constexpr std::string_view kSpecial = "&<>\"'";
  static constexpr std::string_view kEntity[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
  for (char c : s) {
    if (const size_t k = kSpecial.find(c); k != std::string_view::npos)
      out += kEntity[k];
    else  // control characters are not allowed in XML 1.0, not even as references
      out += (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') ? '?' : c;
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string human(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string out = buf;
  if (out.size() > 2 && out.compare(out.size() - 2, 2, ".0") == 0) out.resize(out.size() - 2);
  return out + " " + units[u];
}

size_t glyphs(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// Deterministic per name: FNV-1a -> hue, pastel enough for black text.
std::string color(std::string_view name) {
  uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  const double hue = h % 360, s = 0.55 + (h >> 9) % 20 / 100.0, l = 0.70 + (h >> 17) % 10 / 100.0;
  const double c = (1 - std::fabs(2 * l - 1)) * s, x = c * (1 - std::fabs(std::fmod(hue / 60, 2) - 1));
  const double m = l - c / 2;
  const double rgb[6][3] = {{c, x, 0}, {x, c, 0}, {0, c, x}, {0, x, c}, {x, 0, c}, {c, 0, x}};
  const double* p = rgb[std::min(static_cast<int>(hue / 60), 5)];
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround((p[0] + m) * 255)),
                static_cast<int>(std::lround((p[1] + m) * 255)), static_cast<int>(std::lround((p[2] + m) * 255)));
  return buf;
}

// 1, 2 or 5 times a power of ten, at least raw.
double nice(double raw) {
  const double mag = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double f : {1.0, 2.0, 5.0})
    if (f * mag >= raw) return f * mag;
  return 10 * mag;
}

int steps_of(const GraphPlan& g) {
  int steps = std::max(g.num_steps, 1);
  for (const PlannedBuffer& b : g.buffers) steps = std::max(steps, std::min(b.last, kMaxSteps - 1) + 1);
  return steps;
}

std::string graph_name(const GraphPlan& g) {
  if (!g.path.empty()) return g.path;
  return g.owner_node.empty() ? std::string("main") : g.owner_node + "." + g.owner_attribute;
}

class Painter {
 public:
  explicit Painter(const MemoryPlan& plan) : plan_(plan) {}

  std::string render() {
    const GraphPlan empty;
    const GraphPlan& main = plan_.graphs.size() > 0 ? plan_.graphs[0] : empty;
    const int steps = steps_of(main);
    uint64_t bytes = std::max<uint64_t>(plan_.arena_bytes, 1);
    std::vector<int> live(static_cast<size_t>(steps) + 1, 0);
    for (const PlannedBuffer& b : main.buffers) {
      bytes = std::max(bytes, main.base_offset + b.offset + b.size);
      ++live[static_cast<size_t>(std::clamp(b.first, 0, steps))];
      --live[static_cast<size_t>(std::clamp(std::max(b.first, b.last) + 1, 0, steps))];
    }
    int peak = 0;
    for (int i = 0, cur = 0; i < steps; ++i) peak = std::max(peak, cur += live[static_cast<size_t>(i)]);
    const double plot_h = std::clamp(peak * kRowPx, kMinPlotH, kMaxPlotH);
    yscale_ = plot_h / static_cast<double>(bytes);
    const double height = kTop + plot_h + 96;

    out_ += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
            num(kWidth) + "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) +
            "\" font-family=\"monospace\" font-size=\"" + num(kFont) + "\">\n";
    out_ +=
        "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#e4e4e4\"/><line x1=\"0\" "
        "y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#666\" stroke-width=\"2\"/></pattern></defs>\n";
    out_ += "<rect class=\"bg\" width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";

    const std::string strategy = plan_.chosen_strategy.empty() ? plan_.strategy : plan_.chosen_strategy;
    text(10, 20, "memplan plan: " + (plan_.model_path.empty() ? std::string("(model)") : plan_.model_path),
         "font-size=\"14\" font-weight=\"bold\"");
    std::string header = "arena " + std::to_string(plan_.arena_bytes) + " bytes (" + human(plan_.arena_bytes) +
                         ") | lower bound " + std::to_string(plan_.lower_bound_bytes) + " bytes | strategy " +
                         (strategy.empty() ? std::string("?") : strategy);
    if (!plan_.strategy.empty() && plan_.strategy != strategy) header += " (asked " + plan_.strategy + ")";
    header += " | " + std::to_string(plan_.graphs.size()) + " graphs, " + std::to_string(steps) + " steps";
    text(10, 38, header, "font-size=\"11\"");

    // Grid and axes: y = byte offset (0 at top), x = step.
    double unit = 1;  // ticks at round numbers of B, KiB, MiB or GiB
    while (unit < 1024.0 * 1024 * 1024 && static_cast<double>(bytes) / unit >= 4096) unit *= 1024;
    const double ystep = unit * nice(static_cast<double>(bytes) / unit / std::max(2.0, std::min(10.0, plot_h / 40)));
    for (double v = 0; v <= static_cast<double>(bytes) + 0.5; v += ystep) {
      const double y = kTop + v * yscale_;
      out_ += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(y) + "\" x2=\"" + num(kLeft + kPlotW) + "\" y2=\"" +
              num(y) + "\" stroke=\"#eee\"/>\n";
      text(kLeft - 5, y + 3.5, human(static_cast<uint64_t>(v)), "text-anchor=\"end\" fill=\"#555\"");
    }
    const double sx = kPlotW / steps;
    const int xstride = std::max(1, static_cast<int>(nice(36 / sx)));
    for (int s = 0; s < steps; s += xstride) {
      const double x = kLeft + s * sx;
      out_ += "<line x1=\"" + num(x) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(x) + "\" y2=\"" + num(kTop + plot_h) +
              "\" stroke=\"#eee\"/>\n";
      text(x + (xstride == 1 ? sx / 2 : 0), kTop + plot_h + 14, std::to_string(s),
           "text-anchor=\"middle\" fill=\"#555\"");
    }
    text(kLeft + kPlotW / 2, kTop + plot_h + 30, "step (execution order)", "text-anchor=\"middle\"");
    text(14, kTop + plot_h / 2, "byte offset (0 at top)",
         "text-anchor=\"middle\" transform=\"rotate(-90 14 " + num(kTop + plot_h / 2) + ")\"");

    if (plan_.graphs.size() > 0) draw_graph(main, kLeft, kLeft + kPlotW, main.base_offset, 0, 0);
    out_ += "<rect class=\"plot\" x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(kPlotW) +
            "\" height=\"" + num(plot_h) + "\" fill=\"none\" stroke=\"#999\"/>\n";
    legend(kTop + plot_h + 56);
    out_ += "</svg>\n";
    return std::move(out_);
  }

 private:
  double y_of(uint64_t abs) const { return kTop + static_cast<double>(abs) * yscale_; }

  void text(double x, double y, std::string_view s, std::string_view attrs = "") {
    out_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" + (attrs.empty() ? "" : " ") + std::string(attrs) + ">" +
            esc(s) + "</text>\n";
  }

  void rect(double x, double y, double w, double h, std::string_view attrs, std::string_view title = "") {
    out_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(w, kMinRect)) + "\" height=\"" +
            num(std::max(h, kMinRect)) + "\" " + std::string(attrs);
    out_ += title.empty() ? "/>\n" : "><title>" + esc(title) + "</title></rect>\n";
  }

  // A centered label when one of the candidates fits the box below `floor` (a caption's strip).
  void label(double x, double y, double w, double h, const std::vector<std::string>& candidates, double floor) {
    if (y < floor) h -= floor - y, y = floor;
    if (h < kFont + 2) return;
    for (const std::string& s : candidates)
      if (static_cast<double>(glyphs(s)) * kCharW + 4 <= w)
        return text(x + w / 2, y + h / 2 + 3.5, s, "text-anchor=\"middle\"");
  }

  // A label on a white tag, for text drawn over other shapes (branch names, slots).
  void tag(double x, double y, double max_w, double max_h, const std::vector<std::string>& candidates, bool center) {
    if (max_h < kFont + 2) return;
    for (const std::string& s : candidates) {
      const double tw = static_cast<double>(glyphs(s)) * kCharW + 4;
      if (tw > max_w) continue;
      const double tx = center ? x + (max_w - tw) / 2 : x;
      rect(tx, y, tw, kFont + 2, "class=\"tag\" fill=\"#fff\" fill-opacity=\"0.85\"");
      return text(tx + 2, y + kFont, s, "font-weight=\"bold\"");
    }
  }

  // g's frame: its steps spread over [x0, x1), its bytes from absolute offset `base`.
  // Labels stay below `floor`, where the enclosing captions are.
  void draw_graph(const GraphPlan& g, double x0, double x1, uint64_t base, int depth, double floor) {
    const double sx = (x1 - x0) / steps_of(g);
    const std::string where = graph_name(g);
    // A storage group: its members drawn over the root's bytes in the root's color, then one
    // outline around all of them (the bytes the planner placed for the group).
    auto root_of = [&](const PlannedBuffer& b) -> const PlannedBuffer* {
      return b.group >= 0 && static_cast<size_t>(b.group) < g.buffers.size() ? &g.buffers[static_cast<size_t>(b.group)] : nullptr;
    };
    for (size_t i = 0; i < g.buffers.size(); ++i) {
      const PlannedBuffer& b = g.buffers[i];
      if (!b.in_frame()) continue;  // in the If output's bytes (drawn with the parent) or the caller's
      const PlannedBuffer* root = root_of(b);
      const int first = std::max(b.first, 0), last = std::max(b.last, first);
      const double x = x0 + first * sx, w = std::max((last + 1 - first) * sx, kMinRect);
      const double y = y_of(base + b.offset), h = std::max(static_cast<double>(b.size) * yscale_, kMinRect);
      const char* kind = b.kind == BufferKind::Region       ? "region"
                         : b.kind == BufferKind::Scratchpad ? "scratchpad"
                                                          : "tensor";
      const std::string title = b.label() + "\n" + std::to_string(b.size) + " bytes" +
                                (b.upper_bound ? " (upper bound)" : "") + ", " + kind + "\noffset " +
                                std::to_string(base + b.offset) + " (frame +" + std::to_string(b.offset) +
                                ")\nsteps " + std::to_string(first) + ".." + std::to_string(last) + " of " + where;
      if (b.kind != BufferKind::Region) {
        const bool scratch = b.kind == BufferKind::Scratchpad;
        rect(x, y, w, h,
             std::string("class=\"buf\" fill=\"") + color(root ? root->label() : b.label()) +
                 "\" stroke=\"#333\" stroke-width=\"0.5\"" + (scratch ? " stroke-dasharray=\"3 2\"" : "") +
                 (root ? " data-group=\"" + esc(root->label()) + "\"" : std::string()),
             root ? title + "\nshares the bytes of " + root->label() + " (" + alias_name(b.alias) + ")" : title);
        label(x, y, w, h, {b.label() + " (" + human(b.size) + ")", b.label()}, floor);
        continue;
      }
      rect(x, y, w, h, "class=\"region\" fill=\"#f6f6f6\" stroke=\"none\"", title);
      for (const Region& r : g.regions)
        if (r.buffer == static_cast<int32_t>(i) && depth < kMaxDepth) draw_region(r, g, x, w, base + b.offset, h, depth, floor);
      rect(x, y, w, h, "class=\"outline\" fill=\"none\" stroke=\"#000\" stroke-width=\"1.5\"");
    }
    draw_groups(g, x0, sx, base, root_of);
  }

  template <typename RootOf>
  void draw_groups(const GraphPlan& g, double x0, double sx, uint64_t base, const RootOf& root_of) {
    struct Span {
      int first, last;
      std::string members;
    };
    std::map<const PlannedBuffer*, Span> groups;
    for (const PlannedBuffer& b : g.buffers)
      if (const PlannedBuffer* root = root_of(b); root && root->in_frame()) {
        Span& sp = groups.try_emplace(root, Span{std::max(root->first, 0), std::max(root->last, root->first), ""}).first->second;
        sp.first = std::min(sp.first, std::max(b.first, 0));
        sp.last = std::max(sp.last, b.last);
        sp.members += (sp.members.empty() ? "" : ", ") + b.label() + " (" + alias_name(b.alias) + ")";
      }
    for (const auto& [root, sp] : groups) {
      const double x = x0 + sp.first * sx, w = std::max((sp.last + 1 - sp.first) * sx, kMinRect);
      rect(x, y_of(base + root->offset), w, std::max(static_cast<double>(root->size) * yscale_, kMinRect),
           "class=\"group\" fill=\"none\" stroke=\"#1f4fbf\" stroke-width=\"1.5\"",
           "storage group of " + root->label() + "\n" + std::to_string(root->size) + " bytes, steps " +
               std::to_string(sp.first) + ".." + std::to_string(sp.last) + "\nshared with " + sp.members);
    }
  }

  void draw_region(const Region& r, const GraphPlan& parent, double x, double w, uint64_t base, double h, int depth,
                   double floor) {
    std::vector<const GraphPlan*> subs;
    for (int32_t gi : r.subgraphs) {
      const auto at = static_cast<size_t>(gi);
      if (gi > 0 && at < plan_.graphs.size() && &plan_.graphs[at] != &parent) subs.push_back(&plan_.graphs[at]);
    }
    const bool is_if = subs.size() == 2 || r.op_type == "If";
    if (is_if)  // then on the left, else on the right, whatever order the subgraphs were planned in
      std::stable_sort(subs.begin(), subs.end(), [](const GraphPlan* a, const GraphPlan* b) {
        return a->owner_attribute == "then_branch" && b->owner_attribute != "then_branch";
      });
    const size_t n = subs.size();
    const double cw = w / static_cast<double>(std::max<size_t>(n, 1)), inset = cw > 8 ? 1 : 0, tag_h = kFont + 2;
    struct Caption {
      double x, y, w, h;
      std::vector<std::string> text;
    };
    std::vector<Caption> captions;  // drawn last, over everything in the region
    for (size_t k = 0; k < n; ++k) {
      const GraphPlan& sub = *subs[k];
      const double cx = x + static_cast<double>(k) * cw;
      const std::string& attr = sub.owner_attribute;
      const std::string role = attr == "then_branch" || (attr.empty() && is_if && n == 2 && k == 0) ? "then"
                               : attr == "else_branch" || (attr.empty() && is_if && n == 2)         ? "else"
                               : attr.empty() ? "graph " + std::to_string(k)
                                              : attr;
      const std::string caption = role + " " + human(sub.frame_bytes);
      const double fh = static_cast<double>(sub.frame_bytes) * yscale_;
      rect(cx, y_of(base), cw, fh, "class=\"frame\" fill=\"none\" stroke=\"#555\" stroke-dasharray=\"4 2\"",
           caption + "\n" + graph_name(sub) + " of " + r.node + " (" + r.op_type + ")\nframe " +
               std::to_string(sub.frame_bytes) + " bytes at offset " + std::to_string(base) + ", " +
               std::to_string(steps_of(sub)) + " steps");
      // The caption goes under the frame when the region has free room there (no slots), else on top.
      const bool below = r.carried.size() == 0 && fh + tag_h + 4 <= h && y_of(base) + fh + 2 >= floor;
      const double tag_y = below ? y_of(base) + fh + 2 : std::max(y_of(base), floor) + 2;
      draw_graph(sub, cx + inset, cx + cw - inset, base, depth + 1, below ? floor : tag_y + tag_h);
      if (k > 0)
        out_ += "<line x1=\"" + num(cx) + "\" y1=\"" + num(y_of(base)) + "\" x2=\"" + num(cx) + "\" y2=\"" +
                num(y_of(base) + h) + "\" stroke=\"#000\" stroke-width=\"1\"/>\n";
      captions.push_back({cx + 2, tag_y, cw - 4, y_of(base) + h - tag_y, {caption, role}});
    }
    for (const auto& c : r.carried) {
      if (!in_region(c.home)) continue;  // no bytes of the region: the Loop's output, or the session's
      const bool shared = c.home == SlotHome::OneSlot;
      for (int s = 0; s < (shared ? 1 : 2); ++s) {
        const uint64_t rel = s == 0 ? c.slot0 : c.slot1;
        // std::string(...) + ...: `"literal" + std::string&&` trips GCC 12's -Wrestrict (a false positive).
        const std::string slot = shared ? std::string("slot0=1") : std::string("slot") + std::to_string(s);
        const std::string name = slot + " " + c.name;
        const std::string brief = (shared ? std::string("s0=1") : std::string("s") + std::to_string(s)) + " " + c.name;
        const double y = y_of(base + rel), sh = std::max(static_cast<double>(c.size) * yscale_, kMinRect);
        rect(x, y, w, sh, "class=\"slot\" fill=\"url(#hatch)\" stroke=\"#333\" stroke-width=\"0.5\"",
             name + "\n" + std::to_string(c.size) + " bytes at offset " + std::to_string(base + rel) + " (region +" +
                 std::to_string(rel) + ")\ncarried value of " + r.node +
                 (shared ? std::string(": one slot (the counter, or updated in place)") : std::string(": iteration k writes slot k%2")));
        tag(x, y + (sh - tag_h) / 2, w, sh, {name, brief, slot}, true);
      }
    }
    for (const Caption& c : captions) tag(c.x, c.y, c.w, c.h, c.text, false);
  }

  void legend(double y) {
    double x = kLeft;
    auto item = [&](std::string_view attrs, const std::string& what) {
      rect(x, y - 9, 18, 11, attrs);
      text(x + 23, y, what);
      x += 23 + static_cast<double>(glyphs(what)) * kCharW + 18;
    };
    text(10, y, "legend:", "font-weight=\"bold\"");
    item("class=\"legend\" fill=\"" + color("tensor") + "\" stroke=\"#333\" stroke-width=\"0.5\"",
         "tensor (color by name)");
    item("class=\"legend\" fill=\"" + color("scratch") + "\" stroke=\"#333\" stroke-dasharray=\"3 2\"", "scratchpad");
    item("class=\"legend\" fill=\"#f6f6f6\" stroke=\"#000\" stroke-width=\"1.5\"", "control-flow region");
    item("class=\"legend\" fill=\"none\" stroke=\"#555\" stroke-dasharray=\"4 2\"", "subgraph frame (If: then | else)");
    item("class=\"legend\" fill=\"url(#hatch)\" stroke=\"#333\" stroke-width=\"0.5\"", "loop-carried slot");
    item("class=\"legend\" fill=\"none\" stroke=\"#1f4fbf\" stroke-width=\"1.5\"", "storage group");
    text(10, y + 18, "hover a rectangle for name, bytes, offset and steps; labels are drawn only where they fit",
         "fill=\"#555\"");
  }

  const MemoryPlan& plan_;
  double yscale_ = 1;
  std::string out_;
};

}  // namespace

std::string plan_svg(const MemoryPlan& plan) { return Painter(plan).render(); }

}  // namespace memplan
