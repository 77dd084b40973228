#include "examples/output_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace fuselab::examples {

OutputFile::OutputFile(const std::string& flag, const std::string& path, std::ios::openmode mode)
    : flag_(flag), path_(path) {
  if (!path.empty()) open(mode);
}

void OutputFile::open(std::ios::openmode mode) {
  namespace fs = std::filesystem;
  std::error_code error;
  const bool exists = fs::exists(path_, error);
  if (exists && !fs::is_regular_file(path_, error)) {
    file_.open(path_, std::ios::out | mode);
  } else {
    const fs::path folder = fs::path(path_).parent_path();
    check(folder.empty() || fs::is_directory(folder, error), "--", flag_, " ", path_, ": its folder ", folder.string(),
          " does not exist");
    temporary_ = path_ + ".tmp";
    lock_fd_ = ::open(temporary_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    check(lock_fd_ >= 0, "--", flag_, " ", path_, ": cannot create ", temporary_, " beside it to write to: ",
          std::strerror(errno));
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(lock_fd_);
      lock_fd_ = -1;
      fail("--", flag_, " ", path_, ": another run is writing it (it holds ", temporary_, ")");
    }
    if (exists && (mode & std::ios::app)) {
      fs::copy_file(path_, temporary_, fs::copy_options::overwrite_existing, error);
      check(!error, "--", flag_, " ", path_, ": cannot copy it to ", temporary_, " to append to: ", error.message());
    }
    file_.open(temporary_, std::ios::out | (exists && (mode & std::ios::app) ? std::ios::app : std::ios::trunc));
  }
  check(file_.is_open(), "--", flag_, " ", path_, ": cannot open it for writing: ", std::strerror(errno));
}

OutputFile::~OutputFile() {
  if (file_.is_open() && !temporary_.empty()) {
    file_.close();
    std::remove(temporary_.c_str());
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void OutputFile::check_written() {
  check(file_.good(), "--", flag_, " ", path_, ": write failed: ", std::strerror(errno));
}

void OutputFile::commit() {
  if (temporary_.empty() || !file_.is_open()) return;
  file_.close();
  check(!file_.fail(), "--", flag_, " ", path_, ": closing ", temporary_, " failed: ", std::strerror(errno));
  const int fd = ::open(temporary_.c_str(), O_RDONLY);
  const bool synced = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  check(synced, "--", flag_, " ", path_, ": writing ", temporary_, " to the disk failed: ", std::strerror(errno));
  check(std::rename(temporary_.c_str(), path_.c_str()) == 0, "--", flag_, " ", path_, ": renaming ", temporary_,
        " to it failed: ", std::strerror(errno));
}

void OutputFile::commit_and_continue() {
  if (temporary_.empty() || !file_.is_open()) return;
  commit();
  ::close(lock_fd_);  // its lock is on the file just renamed into place
  lock_fd_ = -1;
  open(std::ios::app);
}

void create_output_folder(const std::string& flag, const std::string& folder) {
  std::error_code error;
  check(!std::filesystem::exists(folder, error) || std::filesystem::is_directory(folder, error), "--", flag, " ",
        folder, ": is a file, not a folder");
  std::filesystem::create_directories(folder, error);
  check(!error, "--", flag, " ", folder, ": cannot create the folder: ", error.message());
}

void check_different_files(const std::string& flag_a, const std::string& path_a, const std::string& flag_b,
                           const std::string& path_b) {
  if (path_a.empty() || path_b.empty()) return;
  std::error_code error;
  const auto a = std::filesystem::weakly_canonical(path_a, error), b = std::filesystem::weakly_canonical(path_b, error);
  check(a != b, "--", flag_a, " ", path_a, " and --", flag_b, " ", path_b, " name the same file; give each its own");
}

}  // namespace fuselab::examples
