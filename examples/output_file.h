// A file that an example writes for its user (--json, --loss-log). It is opened when the run
// starts, so a path that cannot be written fails before any training, and each write is flushed
// and checked, so a full disk or /dev/full is an error naming the flag instead of a missing file.
// A file it created but never wrote to (the run failed or stopped early) is removed again, so no
// empty file is left to be taken for a result.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "tensor/error.h"

namespace fuselab::examples {

class OutputFile {
 public:
  // An empty path writes nothing: the flag was not given.
  OutputFile(const std::string& flag, const std::string& path, std::ios::openmode mode = std::ios::trunc)
      : flag_(flag), path_(path) {
    if (path.empty()) return;
    std::error_code error;
    created_ = !std::filesystem::exists(path, error);
    file_.open(path, std::ios::out | mode);
    check(file_.is_open(), "--", flag_, " ", path_, ": cannot open it for writing: ", std::strerror(errno));
  }
  ~OutputFile() {
    if (!created_ || written_) return;
    file_.close();
    std::remove(path_.c_str());
  }
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Writes the parts as `file << part` would, then flushes.
  template <class... Parts>
  void write(const Parts&... parts) {
    if (!file_.is_open()) return;
    (file_ << ... << parts) << std::flush;
    written_ = true;
    check(file_.good(), "--", flag_, " ", path_, ": write failed: ", std::strerror(errno));
  }

 private:
  std::string flag_, path_;
  std::ofstream file_;
  bool created_ = false, written_ = false;
};

}  // namespace fuselab::examples
