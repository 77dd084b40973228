#include "runtime/shared_library.h"

#include <dlfcn.h>

#include "runtime/error.h"

namespace fuselab::runtime {

SharedLibrary::SharedLibrary(std::string what, std::vector<std::string> files, std::string package)
    : what_(std::move(what)), package_(std::move(package)), files_(std::move(files)) {}

void* SharedLibrary::open() const {
  std::call_once(opened_, [this] {
    for (const std::string& file : files_) {
      if ((handle_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL))) return;  // never closed
      failure_ += std::string("; ") + dlerror();
    }
  });
  return handle_;
}

void* SharedLibrary::symbol(const char* name) const {
  void* library = open();
  if (!library) throw Error(what_ + " is needed here and could not be loaded; install " + package_ + failure_);
  void* address = dlsym(library, name);
  if (!address) throw Error(what_ + ": the library FuseLab loaded has no " + name + "; install " + package_);
  return address;
}

}  // namespace fuselab::runtime
