#include "container_io.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include "io/npy.h"

namespace memplan::cli {

namespace fs = std::filesystem;

namespace {

bool holds_sequence(ValueKind k) { return k == ValueKind::Sequence || k == ValueKind::OptionalSequence; }

// The folder's .npy files, which must be 0.npy ... (n-1).npy and nothing else numbered.
std::vector<std::string> numbered_files(const std::string& what, const std::string& folder) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec))
    if (e.path().extension() == ".npy") found.push_back(e.path().stem().string());
  if (ec) fail(what + ": cannot list the folder " + folder + ": " + ec.message());
  std::vector<std::string> paths;
  for (size_t k = 0; k < found.size(); ++k) {
    const std::string name = std::to_string(k);
    if (std::find(found.begin(), found.end(), name) == found.end())
      fail(what + ": the folder " + folder + " holds " + std::to_string(found.size()) + " .npy files but no " + name +
           ".npy; a sequence's files are 0.npy, 1.npy, ... in order");
    paths.push_back((fs::path(folder) / (name + ".npy")).string());
  }
  return paths;
}

}  // namespace

ContainerInput read_container_input(const std::string& model, const TensorInfo& t, const std::string& spec) {
  const std::string what = model + ": input '" + t.name + "' (" + spec + ")";
  ContainerInput in{t.name, t.kind, true, {}};
  const bool optional = t.kind == ValueKind::Optional || t.kind == ValueKind::OptionalSequence;
  if (spec == "none" && !fs::exists(spec)) {
    if (!optional) fail(what + ": only an optional input may be none");
    in.present = false;
    return in;
  }
  if (holds_sequence(t.kind)) {
    if (!fs::is_directory(spec)) fail(what + ": a sequence is given as a folder of 0.npy, 1.npy, ...");
    in.paths = numbered_files(what, spec);
  } else {
    in.paths = {spec};
  }
  for (const std::string& p : in.paths) {
    const io::NpyInfo info = io::read_npy_info(p);
    if (info.dtype != static_cast<DType>(t.dtype))
      fail(model + ": input '" + t.name + "' (" + p + "): the model's tensors are " +
           dtype_name(static_cast<DType>(t.dtype)) + ", the file holds " + dtype_name(info.dtype));
  }
  return in;
}

void set_container_input(Session& session, const ContainerInput& in) {
  if (!in.present) {
    session.set_input_none(in.name);
    return;
  }
  std::vector<io::NpyArray> arrays;
  for (const std::string& p : in.paths) arrays.push_back(io::read_npy(p));
  std::vector<TensorRef> refs;
  for (const io::NpyArray& a : arrays)
    refs.push_back({static_cast<int32_t>(a.info.dtype), a.info.shape, a.data.data(), a.data.size()});
  if (holds_sequence(in.kind)) session.set_input_sequence(in.name, refs);
  else session.set_input(in.name, refs[0].dtype, refs[0].shape, refs[0].data, refs[0].bytes);
}

std::vector<std::string> write_container_output(const std::string& dir, const std::string& file_name,
                                                const TensorInfo& o, const Session& session) {
  if (!session.output_has_value(o.name)) return {};
  if (!holds_sequence(o.kind)) {
    const TensorRef t = session.output(o.name);
    const std::string path = (fs::path(dir) / (file_name + ".npy")).string();
    io::write_npy(path, static_cast<DType>(t.dtype), t.shape, t.data, t.bytes);
    return {path};
  }
  const fs::path folder = fs::path(dir) / file_name;
  fs::create_directories(folder);
  // A shorter list than the last run's leaves no stale tensors behind it.
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string stem = e.path().stem().string();
    if (e.path().extension() == ".npy" && !stem.empty() && std::all_of(stem.begin(), stem.end(), ::isdigit))
      fs::remove(e.path());
  }
  const std::vector<TensorRef> seq = session.output_sequence(o.name);
  for (size_t k = 0; k < seq.size(); ++k)
    io::write_npy((folder / (std::to_string(k) + ".npy")).string(), static_cast<DType>(seq[k].dtype), seq[k].shape,
                  seq[k].data, seq[k].bytes);
  return {folder.string()};
}

}  // namespace memplan::cli
