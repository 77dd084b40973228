// A shared library that FuseLab opens on first use instead of linking: OpenBLAS, oneDNN, cuBLASLt,
// cuDNN. Nothing is loaded before main, a program that never needs a library never loads it, and
// one that needs a missing library gets a fuselab::Error naming the library and the package that
// provides it, at the call that needed it.
//
// FUSELAB_FORWARD(library, function) gives a C entry point of the library (declared by its header)
// a definition here: a one-instruction jump through a slot that holds a function of the same type,
// which looks the real one up in `library()` on its first call and calls it. The library's own
// headers (dnnl.hpp's C++ wrappers, say) then work unchanged, with the library no longer linked:
// a function that is used but not forwarded is a link error naming it.
#pragma once

#include <mutex>
#include <string>
#include <vector>

namespace fuselab::runtime {

class SharedLibrary {
 public:
  // `what` names the library in errors ("oneDNN"); `files` are tried in order with dlopen;
  // `package` says what installs it ("Debian's libdnnl2 (bash tools/setup.sh)").
  SharedLibrary(std::string what, std::vector<std::string> files, std::string package);

  // The address of `name`, opening the library on the first call. Throws fuselab::Error when the
  // library cannot be opened or lacks the name.
  void* symbol(const char* name) const;

 private:
  void* open() const;

  std::string what_, package_;
  std::vector<std::string> files_;
  mutable std::once_flag opened_;
  mutable void* handle_ = nullptr;  // set once, under opened_
  mutable std::string failure_;     // dlerror()'s words for each file, when none opened
};

// The forwarding function behind FUSELAB_FORWARD: looks `Name` up once, then calls it.
template <class Function, const SharedLibrary& (*Library)(), const char* Name>
struct Forward;

template <class Result, class... Args, const SharedLibrary& (*Library)(), const char* Name>
struct Forward<Result (*)(Args...), Library, Name> {
  static Result call(Args... args) {
    static const auto real = reinterpret_cast<Result (*)(Args...)>(Library().symbol(Name));
    return real(args...);
  }
};

}  // namespace fuselab::runtime

// Defines the C function `function` (x86-64 System V: the jump leaves every argument register as
// the caller set it) as a jump to Forward<...>::call. Use at namespace scope, once per function.
#define FUSELAB_FORWARD(library, function)                                                              \
  namespace fuselab_forward_##function {                                                                \
  constexpr char name[] = #function;                                                                    \
  }                                                                                                     \
  extern "C" __attribute__((visibility("hidden"))) decltype(&::function) const fuselab_slot_##function = \
      &::fuselab::runtime::Forward<decltype(&::function), library, fuselab_forward_##function::name>::call; \
  asm(".text\n.globl " #function "\n.type " #function ", @function\n" #function                         \
      ":\n\tjmp *fuselab_slot_" #function "(%rip)\n.size " #function ", .-" #function "\n")
