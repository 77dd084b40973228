// Tensor, factories, views, copies, the seeded generator and the caching allocator.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "autograd/functional.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"
#include "tensor/finite.h"
#include "tensor/parse_number.h"
#include "tests/expect_error.h"

namespace fuselab {
namespace {

TEST(Tensor, FactoriesFillShapesAndDtypes) {
  EXPECT_EQ(zeros({2, 3}).to_vector<float>(), std::vector<float>(6, 0));
  EXPECT_EQ(ones({2}, DType::Float64).to_vector<double>(), (std::vector<double>{1, 1}));
  EXPECT_EQ(full({3}, 2.5).to_vector<float>(), (std::vector<float>{2.5, 2.5, 2.5}));
  EXPECT_EQ(arange(4).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  const Tensor t = empty({2, 3, 4}, DType::Float64);
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.nbytes(), 24u * 8);
  EXPECT_EQ(t.device(), Device::cpu());
  EXPECT_THROW(from_vector<float>({1, 2, 3}, {2, 2}), Error);
}

// A shape whose element count wraps around int64 (here to 4) would let a small buffer pass for it.
TEST(Tensor, ShapesPastInt64AreErrorsNotSmallBuffers) {
  const int64_t wraps = (int64_t(1) << 62) + 1;  // times 4 is 4 modulo 2^64
  testing::expect_error([&] { zeros({4}).view({wraps, 4}); }, {"view", "more elements than an int64 counts"});
  testing::expect_error([&] { empty({wraps, 4}); }, {"empty", "more elements than an int64 counts"});
  testing::expect_error([&] { from_vector<float>({1, 2, 3, 4}, {wraps, 4}); }, {"from_vector", "more elements"});
  testing::expect_error([&] { empty({int64_t(1) << 62}, DType::Float64); }, {"empty", "more bytes than a size_t"});
  // Past half of size_t: refused by the system, not a size class that never ends.
  EXPECT_THROW(empty({(int64_t(1) << 61) + 1}, DType::Float32), OutOfMemory);
  // 2^50 bytes, beyond any address space the system hands out (and past ASan's largest allocation).
  EXPECT_THROW(empty({int64_t(1) << 48}, DType::Float32), OutOfMemory);
}

TEST(Tensor, FillRefusesValuesAnIntegerTensorCannotHold) {
  Tensor ids = zeros({2}, DType::Int64);
  testing::expect_error([&] { ids.fill_(std::nan("")); }, {"fill_", "nan", "int64", "[2]"});
  testing::expect_error([&] { ids.fill_(1e30); }, {"fill_", "int64"});
  testing::expect_error([&] { ids.fill_(1.5); }, {"fill_", "1.5"});
  EXPECT_EQ(ids.fill_(-3).to_vector<int64_t>(), (std::vector<int64_t>{-3, -3}));
}

TEST(Tensor, CpuMemoryIs64ByteAligned) {
  for (int64_t n : {1, 3, 17, 1000}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(empty({n}).raw_data()) % 64, 0u);
  }
}

TEST(Tensor, ViewsAndSlicesShareStorage) {
  Tensor t = arange(6, DType::Float32);
  Tensor v = t.view({2, -1});
  EXPECT_EQ(v.shape(), (Shape{2, 3}));
  Tensor row = v.slice(1, 2);
  EXPECT_EQ(row.to_vector<float>(), (std::vector<float>{3, 4, 5}));
  row.fill_(9);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 1, 2, 9, 9, 9}));
  EXPECT_THROW(t.view({4, 2}), Error);
  EXPECT_THROW(v.slice(1, 3), Error);
}

TEST(Tensor, CloneAndCopyAreIndependent) {
  Tensor t = arange(3, DType::Float64);
  Tensor c = t.clone();
  c.fill_(7);
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{0, 1, 2}));
  Tensor d = zeros({3}, DType::Float64);
  d.copy_(t);
  EXPECT_EQ(d.to_vector<double>(), t.to_vector<double>());
  EXPECT_THROW(d.copy_(zeros({3})), Error);  // dtype mismatch
}

TEST(Tensor, ConvertsBetweenDtypes) {
  const Tensor t = from_vector<double>({1.5, -2.25}, {2});
  EXPECT_EQ(t.to(DType::Float32).to_vector<float>(), (std::vector<float>{1.5f, -2.25f}));
  EXPECT_EQ(t.to(DType::Int64).to_vector<int64_t>(), (std::vector<int64_t>{1, -2}));
  EXPECT_DOUBLE_EQ(full({1}, 4.0).item(), 4.0);
  EXPECT_THROW(zeros({2}).item(), Error);
  EXPECT_THROW(zeros({2}).data<double>(), Error);
}

TEST(Tensor, SetDataChangesWhatEveryHandleSeesAndKeepsRequiresGrad) {
  Tensor p = from_vector<float>({1.5f, -2.0f}, {2});
  p.set_requires_grad(true);
  p.set_grad(from_vector<float>({0.25f, 4.0f}, {2}));
  const Tensor handle = p;  // as an optimizer holds it
  p.set_data(p.detach().to(DType::Float64));
  EXPECT_EQ(handle.dtype(), DType::Float64);
  EXPECT_EQ(handle.to_vector<double>(), (std::vector<double>{1.5, -2.0}));
  EXPECT_TRUE(handle.requires_grad());
  EXPECT_TRUE(handle.is_leaf());
  EXPECT_EQ(handle.grad().dtype(), DType::Float64);  // the grad is converted with it
  EXPECT_EQ(handle.grad().to_vector<double>(), (std::vector<double>{0.25, 4.0}));

  const Tensor source = from_vector<double>({1, 2, 3}, {3});
  p.set_data(source);  // shares source's storage; a grad of the old shape is dropped
  EXPECT_EQ(handle.shape(), (Shape{3}));
  EXPECT_FALSE(handle.grad().defined());
  Tensor(source).fill_(7);
  EXPECT_EQ(handle.to_vector<double>(), (std::vector<double>{7, 7, 7}));

  EXPECT_THROW(p.set_data(arange(3)), Error);  // int64 cannot require grad
  const Tensor non_leaf = mul(p, p);
  EXPECT_THROW(Tensor(non_leaf).set_data(source), Error);
  backward(sum(non_leaf));  // leaves the tape empty for the tests after this one
}

TEST(Tensor, PrintsShapeDtypeDeviceAndValues) {
  const std::string s = arange(10, DType::Float32).view({2, 5}).str();
  EXPECT_NE(s.find("shape=[2, 5]"), std::string::npos) << s;
  EXPECT_NE(s.find("float32"), std::string::npos) << s;
  EXPECT_NE(s.find("cpu"), std::string::npos) << s;
  EXPECT_NE(s.find("0, 1, 2"), std::string::npos) << s;
  EXPECT_NE(s.find("..."), std::string::npos) << s;
}

TEST(Tensor, CountsNonFiniteValuesOfEveryDtype) {
  EXPECT_EQ(count_non_finite(from_vector<double>({1, NAN, -INFINITY, 0}, {4})), 2);
  EXPECT_EQ(count_non_finite(from_vector<float>({1, 2}, {2})), 0);
  EXPECT_EQ(count_non_finite(from_vector<float>({INFINITY, 2}, {2}).to(DType::BFloat16)), 1);
  EXPECT_EQ(count_non_finite(from_vector<int64_t>({-1, 5}, {2})), 0);
}

TEST(ParseNumber, TakesOnlyWholeNumbersThatFit) {
  EXPECT_EQ(parse_int64("20"), 20);
  EXPECT_EQ(parse_int64("-3"), -3);
  EXPECT_EQ(parse_int64("9223372036854775807"), INT64_MAX);
  for (const char* bad : {"", "20x", "1e3", " 5", "abc", "9223372036854775808", "2.0"}) {
    EXPECT_FALSE(parse_int64(bad).has_value()) << bad;
  }
  EXPECT_EQ(parse_double("1e3"), 1000.0);
  EXPECT_EQ(parse_double("-0.25"), -0.25);
  for (const char* bad : {"", "1e400", "nan", "inf", "0.5s", "abc"}) EXPECT_FALSE(parse_double(bad).has_value()) << bad;
}

TEST(Generator, SameSeedSameNumbersOnAnyThread) {
  Generator a(42);
  const Tensor here = randn({100}, DType::Float32, &a);
  Tensor there;
  std::thread([&] {
    Generator b(42);
    there = randn({100}, DType::Float32, &b);
  }).join();
  EXPECT_EQ(here.to_vector<float>(), there.to_vector<float>());
  Generator c(43);
  EXPECT_NE(here.to_vector<float>(), randn({100}, DType::Float32, &c).to_vector<float>());
}

TEST(Generator, PinnedSequenceAcrossMachines) {
  // xoshiro256** seeded by splitmix64(0): integer arithmetic only, so these are exact everywhere.
  Generator gen(0);
  EXPECT_EQ(gen.next_u64(), 0x99EC5F36CB75F2B4ull);
  EXPECT_EQ(gen.next_u64(), 0xBF6E1F784956452Aull);
}

TEST(Generator, DistributionsHaveTheirMoments) {
  Generator gen(7);
  const auto n = normal({20000}, 2.0, 3.0, DType::Float64, &gen).to_vector<double>();
  double mean = 0, var = 0;
  for (double v : n) mean += v / n.size();
  for (double v : n) var += (v - mean) * (v - mean) / n.size();
  EXPECT_NEAR(mean, 2.0, 0.1);
  EXPECT_NEAR(var, 9.0, 0.3);
  for (float v : uniform({1000}, -1, 2, DType::Float32, &gen).to_vector<float>()) {
    EXPECT_GE(v, -1);
    EXPECT_LT(v, 2);
  }
  for (int64_t v : randint({1000}, 5, &gen).to_vector<int64_t>()) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 5);
  }
}

TEST(Allocator, ReusesFreedBlocksWithoutSystemAllocations) {
  CachingAllocator allocator(Device::cpu());
  void* a = allocator.allocate(1000);
  allocator.deallocate(a, 1000);
  const size_t before = allocator.stats().system_allocations;
  void* b = allocator.allocate(1000);
  EXPECT_EQ(a, b);
  EXPECT_EQ(allocator.stats().system_allocations, before);
  allocator.deallocate(b, 1000);
}

TEST(Allocator, TracksInUsePeakAndCached) {
  CachingAllocator allocator(Device::cpu());
  const size_t size = CachingAllocator::size_class(5000);
  void* a = allocator.allocate(5000);
  void* b = allocator.allocate(5000);
  EXPECT_EQ(allocator.stats().bytes_in_use, 2 * size);
  allocator.deallocate(a, 5000);
  EXPECT_EQ(allocator.stats().bytes_in_use, size);
  EXPECT_EQ(allocator.stats().peak_bytes_in_use, 2 * size);
  EXPECT_EQ(allocator.stats().bytes_cached, size);
  allocator.deallocate(b, 5000);
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().bytes_cached, 0u);
}

TEST(Allocator, SizeClassesWasteAtMostAQuarter) {
  for (size_t bytes : {1ul, 64ul, 65ul, 1000ul, 4097ul, 1ul << 20, (1ul << 20) + 1}) {
    const size_t size = CachingAllocator::size_class(bytes);
    EXPECT_GE(size, bytes);
    EXPECT_EQ(size % 64, 0u);
    if (bytes > 64) {
      EXPECT_LE(double(size), 1.25 * double(bytes) + 64) << bytes;
    }
  }
}

TEST(Allocator, TensorsReturnMemoryToTheCache) {
  CachingAllocator& cpu = CachingAllocator::of(Device::cpu());
  { Tensor warm = empty({12345}); }
  const size_t before = cpu.stats().system_allocations;
  for (int i = 0; i < 10; ++i) Tensor t = empty({12345});
  EXPECT_EQ(cpu.stats().system_allocations, before);
}

}  // namespace
}  // namespace fuselab
