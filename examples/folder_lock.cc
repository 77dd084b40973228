#include "examples/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "tensor/error.h"

namespace fuselab::examples {
namespace {

// The process id the holder wrote, as text ("an unknown process" when it has not written it yet).
std::string holder(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string pid(text, n > 0 ? size_t(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "an unknown process" : "process " + pid;
}

}  // namespace

FolderLock::FolderLock(const std::string& who, const std::string& folder) {
  const std::string path = folder + "/.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  check(fd_ >= 0, who, ": cannot open the lock file ", path, ": ", std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string held_by = holder(fd_);
    ::close(fd_);
    fd_ = -1;
    check(error != EWOULDBLOCK, who, ": the folder ", folder, " is in use by ", held_by,
          " (it holds ", path, "); wait for that run to end or give another folder");
    fail(who, ": cannot lock ", path, ": ", std::strerror(error));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  // The lock holds whether or not this write succeeds: it only names this process in another run's error.
  const bool named = ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) == ssize_t(pid.size());
  (void)named;
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace fuselab::examples
