// The token cache (data/token_cache.h): ids written come back mapped and equal, and a file that is
// missing, made for another key, truncated, damaged or of another format is refused with the
// reason, so that the caller makes the ids again.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "data/token_cache.h"
#include "tensor/factories.h"

namespace fuselab {
namespace {

std::string cache_file(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  return std::string(root ? root : "/tmp") + "/token_cache/" + name;
}

TokenStreams streams() {
  return {"a tokenizer's bytes, 31 of them", from_vector<int64_t>({5, 1, 4, 1, 5, 9, 2}, {7}),
          from_vector<int64_t>({2, 6, 5}, {3})};
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(TokenCache, WrittenIdsComeBackMapped) {
  const std::string path = cache_file("good.bin");
  write_token_cache(path, 42, streams());
  std::string why;
  const auto read = read_token_cache(path, 42, &why);
  ASSERT_TRUE(read.has_value()) << why;
  EXPECT_EQ(read->tokenizer, streams().tokenizer);
  EXPECT_EQ(read->train.to_vector<int64_t>(), streams().train.to_vector<int64_t>());
  EXPECT_EQ(read->validation.to_vector<int64_t>(), streams().validation.to_vector<int64_t>());
  // A write into the mapping stays in this process (copy-on-write), and the tensors outlive the
  // file's name.
  Tensor train = read->train;
  train.slice(0, 1).fill_(77);
  std::filesystem::remove(path);
  EXPECT_EQ(train.to_vector<int64_t>()[0], 77);
  EXPECT_EQ(train.to_vector<int64_t>()[6], 2);
}

TEST(TokenCache, AStaleOrDamagedFileIsRefusedWithItsReason) {
  const std::string path = cache_file("bad.bin");
  write_token_cache(path, 42, streams());
  const std::string good = read_all(path);
  std::string why;
  EXPECT_FALSE(read_token_cache(path, 43, &why));
  EXPECT_NE(why.find("made from another text or tokenizer"), std::string::npos) << why;
  write_all(path, good.substr(0, good.size() - 8));
  EXPECT_FALSE(read_token_cache(path, 42, &why));
  EXPECT_NE(why.find("not the size its header gives"), std::string::npos) << why;
  std::string damaged = good;
  damaged[damaged.size() - 3] ^= 1;
  write_all(path, damaged);
  EXPECT_FALSE(read_token_cache(path, 42, &why));
  EXPECT_NE(why.find("fails its checksum"), std::string::npos) << why;
  write_all(path, "FLTOKENX" + good.substr(8));
  EXPECT_FALSE(read_token_cache(path, 42, &why));
  EXPECT_NE(why.find("not a token cache of this version"), std::string::npos) << why;
  for (const std::string& short_file : {good.substr(0, 20), std::string()}) {
    write_all(path, short_file);
    EXPECT_FALSE(read_token_cache(path, 42, &why));
    EXPECT_NE(why.find("shorter than its header"), std::string::npos) << why;
  }
  std::string huge = good;  // a header that claims 2^62 training ids
  huge[8 * 4 + 7] = 0x40;
  write_all(path, huge);
  EXPECT_FALSE(read_token_cache(path, 42, &why));
  EXPECT_NE(why.find("not the size its header gives"), std::string::npos) << why;
  EXPECT_FALSE(read_token_cache(cache_file("none.bin"), 42, &why));
  EXPECT_EQ(why, "") << "a missing file is no fault";
}

TEST(TokenCache, FnvOfKnownText) {
  EXPECT_EQ(fnv1a(""), kFnvOffset);
  EXPECT_EQ(fnv1a("a"), 0xaf63dc4c8601ec8cull);  // the FNV-1a test vector
  EXPECT_EQ(fnv1a("bc", fnv1a("a")), fnv1a("abc"));
}

}  // namespace
}  // namespace fuselab
