// Sequence and optional inputs and outputs of `memplan run`, as files: a sequence is a folder of
// .npy files named by position (0.npy, 1.npy, ...; an empty folder is an empty sequence), an
// optional tensor one .npy file, and an optional that holds nothing the word `none`.
#pragma once

#include <string>
#include <vector>

#include "memplan/memplan.h"

namespace memplan::cli {

struct ContainerInput {
  std::string name;
  ValueKind kind = ValueKind::Sequence;
  bool present = true;
  std::vector<std::string> paths;  // the tensors' files, in order
};

// What `spec` (a folder, a .npy file or `none`) gives for the container input `t`; fails naming
// the model, the input and the file on one that does not fit it (a gap in the numbering, a file of
// another element type).
ContainerInput read_container_input(const std::string& model, const TensorInfo& t, const std::string& spec);

// Sets the input in `session` from its files.
void set_container_input(Session& session, const ContainerInput& in);

// Writes the container output `o`: a sequence into the folder `<dir>/<file name>/` (emptied of
// the .npy files an earlier run left), an optional tensor as `<dir>/<file name>.npy`, an optional
// holding nothing as no file. Returns the paths written (the folder for a sequence).
std::vector<std::string> write_container_output(const std::string& dir, const std::string& file_name,
                                                const TensorInfo& o, const Session& session);

}  // namespace memplan::cli
