// A value computed in compute_t<T> (float32 for bfloat16), rounded into T on store: the last step
// of every CPU loop that widens, computes and rounds once.
#pragma once

#include "kernels/bfloat16.h"

namespace fuselab::kernels::cpu {

// A bfloat16 is stored as its bits, not as the struct: GCC vectorizes a loop that stores the bits
// and leaves one that assigns the struct scalar.
template <class T>
inline void store(T& to, compute_t<T> value) {
  to = T(value);
}
inline void store(bfloat16& to, float value) { to.bits = bfloat16(value).bits; }

}  // namespace fuselab::kernels::cpu
