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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    fuselab::parse_safetensors(data, size, "fuzz input");
  } catch (const fuselab::Error&) {
  }
  return 0;
}
