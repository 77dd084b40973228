// A file that an example writes for its user (--json, --loss-log). The run writes a temporary,
// `<path>.tmp`, and commit() renames it over the path once the run has done its work, so an old
// file survives a run that is killed, fails or stops early (--stop-after) untouched, and nobody
// takes half a file for a result. The temporary is opened when the run starts, so a path that
// cannot be written fails before any training, and each write is flushed and checked, so a full
// disk is an error naming the flag instead of a missing file. A path that exists and is not a
// regular file (/dev/full, a pipe) is written directly: there is nothing to replace atomically.
// The temporary is locked (flock) while it is written, so a second run writing the same file
// fails naming it rather than overwriting the first's temporary.
#pragma once

#include <ios>
#include <string>

#include <fstream>

#include "tensor/error.h"

namespace fuselab::examples {

class OutputFile {
 public:
  // An empty path writes nothing: the flag was not given. std::ios::app starts the temporary
  // with the file's present contents, so commit() leaves them followed by what the run wrote.
  OutputFile(const std::string& flag, const std::string& path, std::ios::openmode mode = std::ios::trunc);
  ~OutputFile();  // removes an uncommitted temporary
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Writes the parts as `file << part` would, then flushes.
  template <class... Parts>
  void write(const Parts&... parts) {
    if (!file_.is_open()) return;
    (file_ << ... << parts) << std::flush;
    check_written();
  }

  // Closes the temporary, writes it to the disk (fsync) and renames it over the path.
  void commit();
  // commit(), then goes on appending to a new temporary: what was written so far is in place.
  void commit_and_continue();

 private:
  void open(std::ios::openmode mode);
  void check_written();

  std::string flag_, path_, temporary_;  // temporary_: empty when writing to path_ directly
  int lock_fd_ = -1;                      // holds the flock on the temporary
  std::ofstream file_;
};

// Creates the folder a flag names (and its parents) unless it exists; a path that is a file, or a
// folder that cannot be made, is an error naming the flag.
void create_output_folder(const std::string& flag, const std::string& folder);

// Throws naming both flags when two output files name the same file (two writers of one file
// would each rename their own temporary over the other's).
void check_different_files(const std::string& flag_a, const std::string& path_a, const std::string& flag_b,
                           const std::string& path_b);

}  // namespace fuselab::examples
