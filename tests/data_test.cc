// Mini-batching, and the CSV and IDX readers, including their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

#include "data/batch_loader.h"
#include "data/csv.h"
#include "data/idx.h"
#include "tensor/factories.h"
#include "tests/expect_error.h"

namespace fuselab {
namespace {

std::string write_file(const std::string& name, const std::string& contents) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

using testing::expect_error;

TEST(BatchLoader, EachEpochVisitsEveryExampleOnceInASeededOrder) {
  BatchLoader a(10, 4, 7), b(10, 4, 7), c(10, 4, 8);
  std::vector<int64_t> seen;
  for (int i = 0; i < 3; ++i) {
    const auto batch = a.next();
    EXPECT_EQ(batch, b.next());
    EXPECT_EQ(batch.size(), i < 2 ? 4u : 2u);  // LastBatch::Keep
    seen.insert(seen.end(), batch.begin(), batch.end());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  std::vector<int64_t> other;
  for (int i = 0; i < 3; ++i) {
    const auto batch = c.next();
    other.insert(other.end(), batch.begin(), batch.end());
  }
  EXPECT_NE(other, seen);
  EXPECT_EQ(a.epoch(), 0);
  a.next();
  EXPECT_EQ(a.epoch(), 1);
}

TEST(BatchLoader, AStateSavedAnywhereContinuesAsTheUninterruptedLoader) {
  // 10 examples in batches of 4: the third batch is the short one, and the fourth starts epoch 1.
  for (int taken : {0, 1, 2, 3, 5, 7}) {
    SCOPED_TRACE(taken);
    BatchLoader straight(10, 4, 7), first(10, 4, 7), resumed(10, 4, 99);
    for (int i = 0; i < taken; ++i) straight.next(), first.next();
    resumed.load_state(first.state());
    EXPECT_EQ(resumed.epoch(), straight.epoch());
    for (int i = 0; i < 8; ++i) EXPECT_EQ(resumed.next(), straight.next());
  }
}

TEST(BatchLoader, AStateOfOtherExamplesOrBatchesIsRefusedNamingBoth) {
  BatchLoader loader(10, 4, 7), other_size(12, 4, 7), other_batch(10, 5, 7);
  const std::vector<int64_t> before = BatchLoader(10, 4, 7).next();
  expect_error([&] { loader.load_state(other_size.state()); }, {"12 examples in batches of 4", "10 in batches of 4"});
  expect_error([&] { loader.load_state(other_batch.state()); }, {"10 examples in batches of 5", "10 in batches of 4"});
  EXPECT_EQ(loader.next(), before);  // unchanged by the refused loads
}

TEST(Generator, AStateSavedMidSequenceContinuesIt) {
  Generator straight(5), resumed(123);
  straight.next_u64();
  straight.normal();  // leaves a cached normal, which the state carries
  resumed.set_state(straight.state());
  EXPECT_EQ(resumed.normal(), straight.normal());
  EXPECT_EQ(resumed.next_u64(), straight.next_u64());
}

TEST(BatchLoader, DropPolicySkipsTheShortBatch) {
  BatchLoader loader(10, 4, 1, true, LastBatch::Drop);
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  loader.next();
  loader.next();
  EXPECT_EQ(loader.next().size(), 4u);
  EXPECT_EQ(loader.epoch(), 1);
  EXPECT_THROW(BatchLoader(3, 4, 1, true, LastBatch::Drop), Error);
}

TEST(BatchLoader, TakeRowsGathersInOrder) {
  const Tensor t = arange(6, DType::Float32).view({3, 2});
  EXPECT_EQ(take_rows(t, {2, 0}).to_vector<float>(), (std::vector<float>{4, 5, 0, 1}));
  EXPECT_THROW(take_rows(t, {3}), Error);
}

TEST(BatchLoader, ShardsSplitABatchIntoDisjointContiguousBlocks) {
  const std::vector<int64_t> batch{9, 3, 7, 1, 4, 8, 2};
  std::vector<int64_t> joined;
  for (int rank = 0; rank < 3; ++rank) {
    const auto part = shard(batch, rank, 3);
    EXPECT_GE(part.size(), 2u);
    EXPECT_LE(part.size(), 3u);
    joined.insert(joined.end(), part.begin(), part.end());
  }
  EXPECT_EQ(joined, batch);
  EXPECT_EQ(shard(batch, 0, 1), batch);
  EXPECT_THROW(shard(batch, 2, 2), Error);
}

TEST(Csv, ReadsFeaturesAndLabelsWithAnOptionalHeader) {
  const auto data = read_csv(write_file("a.csv", "x,y,label\n1.5,2,0\n-3,4e1,2\n"));
  EXPECT_EQ(data.features.shape(), (Shape{2, 2}));
  EXPECT_EQ(data.features.to_vector<float>(), (std::vector<float>{1.5, 2, -3, 40}));
  EXPECT_EQ(data.labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 2}));
  const auto first = read_csv(write_file("b.csv", "1,0.5,0.25\n0,1,1\n"), 0);
  EXPECT_EQ(first.labels.to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(first.features.to_vector<float>(), (std::vector<float>{0.5, 0.25, 1, 1}));
}

TEST(Csv, MalformedFilesNameTheFileAndLine) {
  expect_error([] { read_csv(write_file("c.csv", "1,2,0\n1,x,1\n")); }, {"c.csv", "line 2", "not a number"});
  expect_error([] { read_csv(write_file("d.csv", "1,2,0\n1,1\n")); }, {"d.csv", "line 2", "2 fields, expected 3"});
  expect_error([] { read_csv(write_file("e.csv", "1,2,0.5\n")); }, {"e.csv", "line 1", "label 0.5 is not a class id (an integer in [0, 1048576))"});
  expect_error([] { read_csv(write_file("f.csv", "a,b\n")); }, {"f.csv", "no data rows"});
  expect_error([] { read_csv(write_file("g.csv", "1,2\n"), 5); }, {"g.csv", "label column 5"});
  expect_error([] { read_csv("/nonexistent.csv"); }, {"/nonexistent.csv", "cannot open"});
}

std::string idx_bytes(uint8_t type, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::string bytes = {0, 0, char(type), char(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes += char((d >> shift) & 0xFF);
  }
  bytes.append(data.begin(), data.end());
  return bytes;
}

TEST(Idx, ReadsUnsignedBytesAndBigEndianIntegers) {
  const Tensor images = read_idx(write_file("img.idx", idx_bytes(0x08, {2, 2, 2}, {0, 1, 2, 3, 250, 251, 252, 255})));
  EXPECT_EQ(images.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(images.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 250, 251, 252, 255}));
  const Tensor labels = read_idx(write_file("lab.idx", idx_bytes(0x0C, {2}, {0, 0, 1, 2, 0xFF, 0xFF, 0xFF, 0xFE})),
                                 DType::Int64);
  EXPECT_EQ(labels.to_vector<int64_t>(), (std::vector<int64_t>{258, -2}));
}

TEST(Idx, MalformedFilesNameTheFileAndOffset) {
  expect_error([] { read_idx(write_file("m1.idx", "\x01\x02\x08\x01")); }, {"m1.idx", "offset 0", "not an IDX"});
  expect_error([] { read_idx(write_file("m2.idx", idx_bytes(0x07, {1}, {0}))); }, {"m2.idx", "offset 2"});
  expect_error([] { read_idx(write_file("m3.idx", idx_bytes(0x08, {4}, {1, 2}))); }, {"m3.idx", "offset 8", "needs 4"});
  expect_error([] { read_idx(write_file("m4.idx", std::string("\0\0\x08\x02\0\0", 6))); }, {"m4.idx", "ends inside"});
  expect_error([] { read_idx(write_file("m5.idx", idx_bytes(0x08, {0xFFFFFFFF, 0xFFFFFFFF}, {}))); },
               {"m5.idx", "exceed the file"});
}

}  // namespace
}  // namespace fuselab
