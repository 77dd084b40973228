// Replays every file of the safetensors fuzz corpus through the fuzz target's entry point, in the
// normal test suite (no libFuzzer needed): each must parse or throw fuselab::Error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

TEST(SafetensorsCorpus, EveryInputParsesOrIsRejectedCleanly) {
  int replayed = 0;
  for (const auto& entry : std::filesystem::directory_iterator("tests/data/safetensors_corpus")) {
    std::ifstream file(entry.path(), std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()), 0);
    ++replayed;
  }
  EXPECT_GT(replayed, 0);
}
