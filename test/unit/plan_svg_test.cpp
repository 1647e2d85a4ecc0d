// `--svg`: hand-built plans rendered, then read back with a small strict XML reader written here
// (and xmllint when installed), checking one rectangle per buffer, tooltips, branch and slot labels.
#include "report/plan_svg.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan_file.pb.h"

using memplan::BufferKind;
using memplan::GraphPlan;
using memplan::PlannedBuffer;
using Plan = memplan::MemoryPlan;

namespace {

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<Element> children;
  std::string text;  // unescaped character data directly inside
};

// A strict reader for the XML subset the renderer emits: an optional <?xml ...?> declaration, one
// root element, double- or single-quoted attributes, the five predefined entities and character
// references; no raw '&', '<' or '>' in text, no '<' in attribute values, no comments or DTDs.
class StrictXml {
 public:
  explicit StrictXml(std::string_view s) : s_(s) {}

  Element document() {
    if (s_.substr(0, 5) == "<?xml") {
      const size_t end = s_.find("?>");
      if (end == std::string_view::npos) fail("unterminated declaration");
      i_ = end + 2;
    }
    skip_ws();
    Element root = element();
    skip_ws();
    if (i_ != s_.size()) fail("content after the root element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(what + " at offset " + std::to_string(i_) + ": '" +
                             std::string(s_.substr(i_ > 20 ? i_ - 20 : 0, 60)) + "'");
  }
  bool at(std::string_view p) const { return s_.substr(i_, p.size()) == p; }
  bool ws() const { return i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])); }
  bool skip_ws() {
    const size_t start = i_;
    while (ws()) ++i_;
    return i_ > start;
  }
  void expect(char c) {
    if (i_ >= s_.size() || s_[i_] != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string name() {
    auto first = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; };
    auto rest = [&](char c) { return first(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.'; };
    if (i_ >= s_.size() || !first(s_[i_])) fail("expected a name");
    const size_t start = i_;
    while (i_ < s_.size() && rest(s_[i_])) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }
  // At '&': one predefined entity or character reference, appended unescaped (ASCII only here).
  void entity(std::string& out) {
    static const std::map<std::string, char> kNamed{
        {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    const size_t semi = s_.find(';', i_);
    if (semi == std::string_view::npos || semi - i_ > 10) fail("raw '&'");
    const std::string body(s_.substr(i_ + 1, semi - i_ - 1));
    if (auto it = kNamed.find(body); it != kNamed.end()) {
      out += it->second;
    } else if (body.size() > 1 && body[0] == '#') {
      const bool hex = body[1] == 'x';
      const std::string digits = body.substr(hex ? 2 : 1);
      if (digits.empty()) fail("empty character reference");
      for (char c : digits)
        if (!(hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(static_cast<unsigned char>(c))))
          fail("bad character reference");
      out += static_cast<char>(std::stoul(digits, nullptr, hex ? 16 : 10));
    } else {
      fail("unknown entity &" + body + ";");
    }
    i_ = semi + 1;
  }
  void check_char(char c) const {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') fail("control character");
  }

  Element element() {
    expect('<');
    Element e;
    e.name = name();
    for (;;) {
      const bool spaced = skip_ws();
      if (at("/>")) {
        i_ += 2;
        return e;
      }
      if (at(">")) {
        ++i_;
        break;
      }
      if (!spaced) fail("attributes must be separated by whitespace");
      const std::string key = name();
      skip_ws();
      expect('=');
      skip_ws();
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) fail("unquoted attribute value");
      const char quote = s_[i_++];
      std::string value;
      while (i_ < s_.size() && s_[i_] != quote) {
        if (s_[i_] == '<') fail("'<' in an attribute value");
        check_char(s_[i_]);
        if (s_[i_] == '&')
          entity(value);
        else
          value += s_[i_++];
      }
      expect(quote);
      if (!e.attrs.emplace(key, value).second) fail("duplicate attribute " + key);
    }
    for (;;) {
      if (i_ >= s_.size()) fail("unclosed <" + e.name + ">");
      if (at("</")) {
        i_ += 2;
        if (name() != e.name) fail("mismatched end tag for <" + e.name + ">");
        skip_ws();
        expect('>');
        return e;
      }
      if (at("<!") || at("<?")) fail("comments, CDATA and processing instructions are not expected");
      if (at("<")) {
        e.children.push_back(element());
        continue;
      }
      if (s_[i_] == '>') fail("raw '>' in text");
      check_char(s_[i_]);
      if (s_[i_] == '&')
        entity(e.text);
      else
        e.text += s_[i_++];
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

Element parse(const std::string& svg) { return StrictXml(svg).document(); }

void collect(const Element& e, const std::string& name, std::vector<const Element*>& out) {
  if (e.name == name) out.push_back(&e);
  for (const Element& c : e.children) collect(c, name, out);
}
std::vector<const Element*> all(const Element& root, const std::string& name) {
  std::vector<const Element*> out;
  collect(root, name, out);
  return out;
}
std::string title_of(const Element& e) {
  for (const Element& c : e.children)
    if (c.name == "title") return c.text;
  return "";
}
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }
double attr(const Element& e, const char* key) { return std::stod(e.attrs.at(key)); }
std::string cls(const Element& e) { return e.attrs.count("class") ? e.attrs.at("class") : ""; }

// Rectangles that stand for buffers (plain buffers and region boxes), keyed by the title's first line.
std::map<std::string, std::vector<const Element*>> buffer_rects(const Element& root) {
  std::map<std::string, std::vector<const Element*>> out;
  for (const Element* r : all(root, "rect"))
    if (cls(*r) == "buf" || cls(*r) == "region") out[first_line(title_of(*r))].push_back(r);
  return out;
}
const Element* with_title_line(const Element& root, const std::string& tag, const std::string& line) {
  for (const Element* e : all(root, tag))
    if (first_line(title_of(*e)) == line) return e;
  return nullptr;
}
bool has_text(const Element& root, const std::string& s) {
  for (const Element* t : all(root, "text"))
    if (t->text == s) return true;
  return false;
}

void add(GraphPlan& g, const std::string& name, BufferKind kind, uint64_t size, uint64_t offset, int first, int last) {
  PlannedBuffer& b = g.buffers.emplace_back();
  b.name = name;
  b.kind = kind;
  b.size = size;
  b.offset = offset;
  b.first = first;
  b.last = last;
}

const std::string kOdd = "t<&\"1'>";

// main (5 steps): input, t<&"1'>, out; If `cond` at step 1 (then 768 B, else 256 B); Loop `loop`
// at step 3 (body frame 512 B, carried `acc` 256 B in slots at region +512 and +768).
Plan sample_plan() {
  Plan p;
  p.model_path = "models/sample.onnx";
  p.strategy = "auto";
  p.chosen_strategy = "greedy_by_size";
  p.arena_bytes = 2560;
  p.lower_bound_bytes = 2048;
  p.alignment = 64;

  GraphPlan& main = p.graphs.emplace_back();
  main.parent = -1;
  main.path = "main";
  main.num_steps = 5;
  main.frame_bytes = 2560;
  add(main, "input", BufferKind::Tensor, 1024, 0, 0, 1);
  add(main, kOdd, BufferKind::Tensor, 512, 1024, 0, 3);
  add(main, "out", BufferKind::Tensor, 1024, 0, 2, 4);
  add(main, "cond", BufferKind::Region, 768, 1536, 1, 1);
  add(main, "loop", BufferKind::Region, 1024, 1536, 3, 3);
  main.regions.push_back({1, "cond", "If", 3, {1, 2}, {}});
  main.regions.push_back({3, "loop", "Loop", 4, {3}, {{2, "acc", 256, 512, 768}}});

  auto sub = [&](const char* node, const char* attribute, uint64_t frame, int steps) -> GraphPlan& {
    GraphPlan& g = p.graphs.emplace_back();
    g.parent = 0;
    g.owner_node = node;
    g.owner_attribute = attribute;
    g.path = std::string(node) + "." + attribute;
    g.frame_bytes = frame;
    g.base_offset = 1536;
    g.num_steps = steps;
    return g;
  };
  GraphPlan& then_g = sub("cond", "then_branch", 768, 2);
  add(then_g, "then_a", BufferKind::Tensor, 512, 0, 0, 0);
  add(then_g, "then_b", BufferKind::Tensor, 256, 512, 0, 1);
  GraphPlan& else_g = sub("cond", "else_branch", 256, 1);
  add(else_g, "else_a", BufferKind::Tensor, 256, 0, 0, 0);
  GraphPlan& body = sub("loop", "body", 512, 2);
  add(body, "body_t", BufferKind::Tensor, 256, 0, 0, 1);
  add(body, "body_scratch", BufferKind::Scratchpad, 256, 256, 1, 1);
  return p;
}

// Runs xmllint on the document when it is installed; true when absent.
bool xmllint_accepts(const std::string& svg) {
  if (!std::filesystem::exists("/usr/bin/xmllint")) {
    WARN("xmllint not installed (libxml2-utils): skipping the xmllint check");
    return true;
  }
  const auto path = std::filesystem::temp_directory_path() / ("memplan_svg_test_" + std::to_string(getpid()) + ".svg");
  std::ofstream(path, std::ios::binary) << svg;
  const int rc = std::system(("/usr/bin/xmllint --noout '" + path.string() + "'").c_str());
  std::filesystem::remove(path);
  return rc == 0;
}

}  // namespace

TEST_CASE("the strict XML reader rejects what it should", "[svg]") {
  CHECK_NOTHROW(parse("<?xml version=\"1.0\"?><a x=\"1\" y='2'>t &amp; &#60; &#x3c;<b/></a>"));
  CHECK_THROWS(parse("<a>x & y</a>"));
  CHECK_THROWS(parse("<a>x < y</a>"));
  CHECK_THROWS(parse("<a>x > y</a>"));
  CHECK_THROWS(parse("<a x=1/>"));
  CHECK_THROWS(parse("<a x=\"<\"/>"));
  CHECK_THROWS(parse("<a x=\"1\"y=\"2\"/>"));
  CHECK_THROWS(parse("<a x=\"1\" x=\"2\"/>"));
  CHECK_THROWS(parse("<a><b></a></b>"));
  CHECK_THROWS(parse("<a></a><b/>"));
  CHECK_THROWS(parse("<a>"));
  CHECK_THROWS(parse("<a>&bogus;</a>"));
}

TEST_CASE("plan_svg draws every buffer, If branches and loop slots as well-formed SVG", "[svg]") {
  const Plan plan = sample_plan();
  const std::string svg = memplan::plan_svg(plan);
  Element root;
  try {
    root = parse(svg);
  } catch (const std::exception& e) {
    FAIL("not well-formed: " << e.what());
  }

  SECTION("a single <svg> root with namespace and geometry") {
    REQUIRE(root.name == "svg");
    CHECK(root.attrs.at("xmlns") == "http://www.w3.org/2000/svg");
    const double w = attr(root, "width"), h = attr(root, "height");
    CHECK(w == Approx(1200));
    CHECK(h > 200);
    CHECK(root.attrs.at("viewBox") == "0 0 " + root.attrs.at("width") + " " + root.attrs.at("height"));
  }

  SECTION("one rectangle per buffer, with its tooltip") {
    const auto rects = buffer_rects(root);
    size_t buffers = 0;
    for (const GraphPlan& g : plan.graphs)
      for (const PlannedBuffer& b : g.buffers) {
        ++buffers;
        INFO(b.label());
        REQUIRE(rects.count(b.label()) == 1);
        CHECK(rects.at(b.label()).size() == 1);
      }
    CHECK(rects.size() == buffers);
    CHECK(title_of(*rects.at(kOdd)[0]) == kOdd + "\n512 bytes, tensor\noffset 1024 (frame +1024)\nsteps 0..3 of main");
    CHECK(title_of(*rects.at("then_b")[0]) ==
          "then_b\n256 bytes, tensor\noffset 2048 (frame +512)\nsteps 0..1 of cond.then_branch");
    CHECK(title_of(*rects.at("region:cond")[0]) ==
          "region:cond\n768 bytes, region\noffset 1536 (frame +1536)\nsteps 1..1 of main");
    CHECK(title_of(*rects.at("scratchpad:body_scratch")[0]).find("256 bytes, scratchpad") != std::string::npos);
    CHECK(cls(*rects.at("region:cond")[0]) == "region");
    CHECK(cls(*rects.at("out")[0]) == "buf");

    // The name is escaped in the source, never raw.
    CHECK(svg.find(kOdd) == std::string::npos);
    CHECK(svg.find("t&lt;&amp;&quot;1&apos;&gt;") != std::string::npos);

    // Same name, same color; different names here, different colors.
    const Plan again = sample_plan();
    CHECK(memplan::plan_svg(again) == svg);
    CHECK(rects.at("input")[0]->attrs.at("fill") != rects.at("out")[0]->attrs.at("fill"));
  }

  SECTION("geometry: steps across, offsets down, subgraphs inside their region") {
    const auto rects = buffer_rects(root);
    auto box = [&](const std::string& n) {
      const Element& e = *rects.at(n)[0];
      return std::vector<double>{attr(e, "x"), attr(e, "y"), attr(e, "x") + attr(e, "width"),
                                 attr(e, "y") + attr(e, "height")};
    };
    const auto input = box("input"), out = box("out"), odd = box(kOdd);
    CHECK(input[0] < out[0]);           // out starts later
    CHECK(input[1] == Approx(out[1]));  // same offset
    CHECK(odd[1] > input[1]);           // larger offset lower down
    CHECK((input[2] - input[0]) == Approx(2 * (out[2] - out[0]) / 3).margin(0.2));

    const auto region = box("region:cond"), then_a = box("then_a"), else_a = box("else_a");
    const double mid = (region[0] + region[2]) / 2;
    CHECK(then_a[0] >= region[0] - 0.1);
    CHECK(then_a[2] <= mid + 0.1);
    CHECK(else_a[0] >= mid - 0.1);
    CHECK(else_a[2] <= region[2] + 0.1);
    CHECK(then_a[1] == Approx(region[1]));  // both branch frames start at the region's base
    CHECK(else_a[1] == Approx(region[1]));

    const auto loop = box("region:loop"), body_t = box("body_t");
    CHECK(body_t[0] >= loop[0] - 0.1);
    CHECK(body_t[2] <= loop[2] + 0.1);
  }

  SECTION("branch labels and slot labels") {
    CHECK(has_text(root, "then 768 B"));
    CHECK(has_text(root, "else 256 B"));
    CHECK(has_text(root, "body 512 B"));
    CHECK(has_text(root, "slot0 acc"));
    CHECK(has_text(root, "slot1 acc"));
    REQUIRE(with_title_line(root, "rect", "then 768 B") != nullptr);
    REQUIRE(with_title_line(root, "rect", "else 256 B") != nullptr);
    const Element* slot0 = with_title_line(root, "rect", "slot0 acc");
    const Element* slot1 = with_title_line(root, "rect", "slot1 acc");
    REQUIRE(slot0 != nullptr);
    REQUIRE(slot1 != nullptr);
    CHECK(cls(*slot0) == "slot");
    CHECK(slot0->attrs.at("fill") == "url(#hatch)");
    CHECK(title_of(*slot1).find("offset 2304 (region +768)") != std::string::npos);
    const Element& body_scratch = *buffer_rects(root).at("scratchpad:body_scratch")[0];
    CHECK(attr(*slot0, "y") >= attr(body_scratch, "y") + attr(body_scratch, "height") - 0.1);  // after the body frame
    CHECK(attr(*slot1, "y") > attr(*slot0, "y"));
  }

  SECTION("header, axes and legend") {
    CHECK(svg.find("arena 2560 bytes") != std::string::npos);
    CHECK(svg.find("lower bound 2048 bytes") != std::string::npos);
    CHECK(svg.find("strategy greedy_by_size (asked auto)") != std::string::npos);
    CHECK(has_text(root, "byte offset (0 at top)"));
    CHECK(has_text(root, "step (execution order)"));
    CHECK(has_text(root, "legend:"));
    CHECK(has_text(root, kOdd + " (512 B)"));  // labels carry name and size when they fit
  }

  SECTION("xmllint agrees") { CHECK(xmllint_accepts(svg)); }
}

TEST_CASE("plan_svg puts then on the left whatever order the branches were planned in", "[svg]") {
  Plan plan = sample_plan();
  auto& subgraphs = plan.graphs[0].regions[0].subgraphs;
  std::swap(subgraphs[0], subgraphs[1]);  // else planned first
  const Element root = parse(memplan::plan_svg(plan));
  const Element* then_frame = with_title_line(root, "rect", "then 768 B");
  const Element* else_frame = with_title_line(root, "rect", "else 256 B");
  REQUIRE(then_frame != nullptr);
  REQUIRE(else_frame != nullptr);
  CHECK(attr(*then_frame, "x") < attr(*else_frame, "x"));
  const auto rects = buffer_rects(root);
  CHECK(attr(*rects.at("then_a")[0], "x") < attr(*rects.at("else_a")[0], "x"));
}

TEST_CASE("plan_svg stays bounded and well-formed for hundreds of buffers", "[svg]") {
  Plan plan;
  plan.arena_bytes = 64ull * 1000 * 1000;
  GraphPlan& main = plan.graphs.emplace_back();
  main.num_steps = 400;
  for (int i = 0; i < 600; ++i)
    add(main, "/model/layer." + std::to_string(i) + "/MatMul_output_0",
        i % 7 == 0 ? BufferKind::Scratchpad : BufferKind::Tensor, static_cast<uint64_t>(64 * (1 + i % 97)),
        static_cast<uint64_t>(i) * 100000, i % 400, std::min(i % 400 + i % 5, 399));
  const std::string svg = memplan::plan_svg(plan);
  Element root;
  REQUIRE_NOTHROW(root = parse(svg));
  CHECK(attr(root, "width") == Approx(1200));
  CHECK(attr(root, "height") <= 1600);
  CHECK(buffer_rects(root).size() == 600);
  for (const Element* r : all(root, "rect")) {
    CHECK(attr(*r, "width") >= 1.5);
    CHECK(attr(*r, "height") >= 1.5);
  }
  CHECK(xmllint_accepts(svg));
}

TEST_CASE("plan_svg of an empty plan is still a document", "[svg]") {
  const std::string svg = memplan::plan_svg(Plan{});
  Element root;
  REQUIRE_NOTHROW(root = parse(svg));
  CHECK(root.name == "svg");
  CHECK(buffer_rects(root).empty());
}

TEST_CASE("plan_svg draws a storage group as one outline over its root, members in the root's color", "[svg]") {
  Plan p;
  p.arena_bytes = 2048;
  GraphPlan& main = p.graphs.emplace_back();
  main.path = "main";
  main.num_steps = 3;
  main.frame_bytes = 2048;
  add(main, "x", BufferKind::Tensor, 1024, 0, 0, 1);
  add(main, "relu", BufferKind::Tensor, 1024, 0, 1, 2);  // written over x
  add(main, "other", BufferKind::Tensor, 1024, 1024, 0, 2);
  main.buffers[1].group = 0;
  main.buffers[1].alias = memplan::AliasKind::InPlace;
  const std::string svg = memplan::plan_svg(p);
  Element root;
  REQUIRE_NOTHROW(root = parse(svg));
  const auto rects = buffer_rects(root);
  const Element& x = *rects.at("x")[0];
  const Element& relu = *rects.at("relu")[0];
  CHECK(relu.attrs.at("fill") == x.attrs.at("fill"));
  CHECK(rects.at("other")[0]->attrs.at("fill") != x.attrs.at("fill"));
  CHECK(relu.attrs.at("data-group") == "x");
  CHECK(title_of(relu).find("shares the bytes of x (in place)") != std::string::npos);
  std::vector<const Element*> groups;
  for (const Element* r : all(root, "rect"))
    if (cls(*r) == "group") groups.push_back(r);
  REQUIRE(groups.size() == 1);
  CHECK(first_line(title_of(*groups[0])) == "storage group of x");
  CHECK(title_of(*groups[0]).find("steps 0..2\nshared with relu (in place)") != std::string::npos);
  // The outline spans the group's steps: from x's first to relu's last, at x's bytes.
  CHECK(attr(*groups[0], "x") == Approx(attr(x, "x")));
  CHECK(attr(*groups[0], "x") + attr(*groups[0], "width") == Approx(attr(relu, "x") + attr(relu, "width")));
  CHECK(attr(*groups[0], "y") == Approx(attr(x, "y")));
  CHECK(xmllint_accepts(svg));
}
