// libFuzzer target for the safetensors loader: any bytes must either parse or throw
// fuselab::Error; a crash, a hang or a sanitizer report is a bug.
//
//   bazel build --config=fuzz //tests/fuzz:safetensors_fuzz
//   bazel-bin/tests/fuzz/safetensors_fuzz -max_total_time=600 tests/data/safetensors_corpus
//
// Inputs that ever crashed it are kept in tests/data/safetensors_corpus, which
// //tests/fuzz:safetensors_corpus_test replays in the normal suite.
#include <cstddef>
#include <cstdint>

#include "tensor/safetensors.h"

// Every byte of every tensor it returns is read, so storage smaller than the tensor shows up as
// a sanitizer report, and an element count whose byte size overflows traps.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const fuselab::Safetensors file = fuselab::parse_safetensors(data, size, "fuzz input");
    volatile uint8_t sum = 0;
    for (const auto& [name, tensor] : file.tensors) {
      if (uint64_t(tensor.numel()) > INT64_MAX / fuselab::dtype_size(tensor.dtype())) __builtin_trap();
      const auto* p = static_cast<const uint8_t*>(tensor.raw_data());
      for (size_t i = 0; i < tensor.nbytes(); ++i) sum = sum + p[i];
    }
  } catch (const fuselab::Error&) {
  }
  return 0;
}
