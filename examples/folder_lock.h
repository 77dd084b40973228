// An exclusive lock on a folder, so that two training runs (or a run and hf_checkpoint's import)
// given the same --checkpoint folder do not overwrite each other's checkpoints. It is a flock(2) on
// the hidden file `<folder>/.lock`, which holds the locking process's id for the error the second
// run gives; the kernel releases the lock when the process ends, however it ends, so a killed run
// leaves no stale lock.
#pragma once

#include <string>

namespace fuselab::examples {

class FolderLock {
 public:
  // Locks `folder` (which must exist) for this object's lifetime. Throws, naming the folder and the
  // process that holds it, when another process has it; `who` begins the message.
  FolderLock(const std::string& who, const std::string& folder);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace fuselab::examples
