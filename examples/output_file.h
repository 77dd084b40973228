// A file that an example writes for its user (--json, --loss-log). It is opened when the run
// starts, so a path that cannot be written fails before any training, and each write is flushed
// and checked, so a full disk or /dev/full is an error naming the flag instead of a missing file.
#pragma once

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "tensor/error.h"

namespace fuselab::examples {

class OutputFile {
 public:
  OutputFile() = default;  // writes nothing: the flag was not given
  OutputFile(const std::string& flag, const std::string& path, std::ios::openmode mode = std::ios::trunc)
      : flag_(flag), path_(path) {
    if (path.empty()) return;
    file_.open(path, std::ios::out | mode);
    check(file_.is_open(), "--", flag_, " ", path_, ": cannot open it for writing: ", std::strerror(errno));
  }

  // Writes the parts as `file << part` would, then flushes.
  template <class... Parts>
  void write(const Parts&... parts) {
    if (!file_.is_open()) return;
    (file_ << ... << parts) << std::flush;
    check(file_.good(), "--", flag_, " ", path_, ": write failed: ", std::strerror(errno));
  }

 private:
  std::string flag_, path_;
  std::ofstream file_;
};

}  // namespace fuselab::examples
