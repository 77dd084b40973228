// safetensors: round trips, files written by Python's safetensors, Python reading FuseLab's
// files, atomic saves, and clear errors for every kind of malformed file.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tensor/factories.h"
#include "tensor/safetensors.h"
#include "tests/expect_error.h"

namespace fuselab {
namespace {

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

NamedTensors sample() {
  return {{"weight", from_vector<float>({0, 0.25, 0.5, 0.75, 1, 1.25}, {2, 3})},
          {"ids", from_vector<int64_t>({5, -6}, {2})},
          {"scalar", full({}, 3.5, DType::Float64)}};
}

void expect_same(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    const Tensor& u = b.at(name);
    EXPECT_EQ(t.shape(), u.shape()) << name;
    ASSERT_EQ(t.dtype(), u.dtype()) << name;
    EXPECT_EQ(std::memcmp(t.raw_data(), u.raw_data(), t.nbytes()), 0) << name;
  }
}

TEST(Safetensors, RoundTripKeepsNamesShapesDtypesValuesAndMetadata) {
  const std::string path = temp_path("round_trip.safetensors");
  NamedTensors tensors = sample();
  tensors["empty"] = zeros({0, 4});
  save_safetensors(path, tensors, {{"step", "7"}});
  const Safetensors loaded = load_safetensors(path);
  expect_same(tensors, loaded.tensors);
  EXPECT_EQ(loaded.metadata, (Metadata{{"step", "7"}}));
}

TEST(Safetensors, ReadsAFileWrittenByPythonSafetensors) {
  // Written by tests/data/make_safetensors_fixture.py.
  const Safetensors file = load_safetensors("tests/data/python_written.safetensors");
  EXPECT_EQ(file.metadata.at("written_by"), "python safetensors");
  EXPECT_EQ(file.tensors.at("weight").to_vector<float>(), (std::vector<float>{0, 0.25, 0.5, 0.75, 1, 1.25}));
  EXPECT_EQ(file.tensors.at("weight").shape(), (Shape{2, 3}));
  EXPECT_EQ(file.tensors.at("bias").to_vector<double>(), (std::vector<double>{-1.5, 2.25}));
  EXPECT_EQ(file.tensors.at("ids").to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3, 4}));
  EXPECT_EQ(file.tensors.at("empty").shape(), (Shape{0, 3}));
}

TEST(Safetensors, PythonSafetensorsReadsWhatFuseLabWrites) {
  if (std::system("python3 -c 'import safetensors, numpy' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "Python's safetensors is not installed (pip install safetensors numpy)";
  }
  const std::string path = temp_path("for_python.safetensors");
  save_safetensors(path, sample(), {{"step", "7"}});
  EXPECT_EQ(std::system(("python3 tests/data/check_fuselab_written.py " + path).c_str()), 0);
}

TEST(Safetensors, AProcessKilledDuringASaveLeavesThePreviousFileIntact) {
  const std::string path = temp_path("atomic.safetensors");
  save_safetensors(path, sample());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The kernel kills the writer with SIGXFSZ once its file passes 1 MiB: mid-save.
    const rlimit limit{1 << 20, 1 << 20};
    setrlimit(RLIMIT_FSIZE, &limit);
    save_safetensors(path, {{"big", zeros({1 << 20})}});
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child was meant to die during the save";
  expect_same(sample(), load_safetensors(path).tensors);
  // The killed save's temporary is the target's one fixed temporary, which the next save reuses.
  EXPECT_TRUE(std::filesystem::exists(path + ".tmp"));
  save_safetensors(path, sample());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    files += entry.path().filename().string().rfind("atomic.safetensors", 0) == 0;
  }
  EXPECT_EQ(files, 1) << "a save left a stale temporary beside " << path;
}

// A valid file's bytes with a different header, for the malformed cases.
std::vector<uint8_t> with_header(const std::string& header, size_t data_bytes, uint64_t length_field = 0) {
  std::vector<uint8_t> bytes(8 + header.size() + data_bytes, 0);
  const uint64_t length = length_field ? length_field : header.size();
  std::memcpy(bytes.data(), &length, 8);
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  return bytes;
}

void expect_rejected(const std::vector<uint8_t>& bytes, const std::string& says) {
  try {
    parse_safetensors(bytes.data(), bytes.size(), "bad.safetensors");
    ADD_FAILURE() << "expected an error saying " << says;
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bad.safetensors"), std::string::npos) << m;
    EXPECT_NE(m.find(says), std::string::npos) << m;
  }
}

TEST(Safetensors, MalformedFilesAreExplained) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_NO_THROW(parse_safetensors(with_header(ok, 8).data(), 8 + ok.size() + 8, "good"));
  expect_rejected({1, 2, 3}, "at least the 8-byte header length");
  expect_rejected(with_header(ok, 8, 1 << 30), "runs past the end");
  expect_rejected(with_header("{\"a\":", 0), "not valid JSON");
  expect_rejected(with_header("[1,2]", 0), "must be a JSON object");
  expect_rejected(with_header(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4), "dtype \"F16\"");
  expect_rejected(with_header(R"({"a":{"dtype":"F32","shape":[2]}})", 8), "needs dtype, shape and data_offsets");
  expect_rejected(with_header(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "bad dimension");
  expect_rejected(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8), "outside the 8-byte");
  expect_rejected(with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "needs 12");
  expect_rejected(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "overlaps");
  expect_rejected(with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "a gap of 4 bytes");
  expect_rejected(with_header(ok, 12), "4 bytes after the last tensor");
  expect_rejected(with_header(R"({"__metadata__":{"k":1}})", 0), "not a string");
  expect_rejected(with_header(R"({"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,8]}})", 8),
                  "bad dimension");
  // 2^62 elements of 4 bytes wrap a 64-bit byte count to 0, which would match empty offsets.
  expect_rejected(with_header(R"({"x":{"dtype":"F32","shape":[2147483648,2147483648],"data_offsets":[0,0]}})", 0),
                  "overflows 64 bits");
  expect_rejected(with_header(R"({"x":{"dtype":"I64","shape":[549755813888,549755813888],"data_offsets":[0,8]}})", 8),
                  "overflows 64 bits");
  const auto empty = with_header(R"({"x":{"dtype":"F32","shape":[1099511627775,0],"data_offsets":[0,0]}})", 0);
  EXPECT_EQ(parse_safetensors(empty.data(), empty.size(), "empty").tensors.at("x").numel(), 0);
}

TEST(Safetensors, MissingFileAndBadNamesAreErrors) {
  testing::expect_error([] { load_safetensors(temp_path("does_not_exist.safetensors")); },
                        {"does_not_exist.safetensors", "does not exist"});
  testing::expect_error([] { load_safetensors(temp_path("")); }, {"is not a regular file"});
  EXPECT_THROW(save_safetensors(temp_path("x.safetensors"), {{"__metadata__", zeros({1})}}), Error);
  EXPECT_THROW(save_safetensors("/nonexistent-dir/x.safetensors", sample()), Error);
  testing::expect_error([] { save_safetensors(temp_path("utf8.safetensors"), {{"\xff\xfe", zeros({1})}}); },
                        {"save_safetensors", "utf8.safetensors", "not valid UTF-8"});
  testing::expect_error([] { save_safetensors(temp_path("utf8.safetensors"), sample(), {{"k", "\xff"}}); },
                        {"save_safetensors", "not valid UTF-8"});
}

}  // namespace
}  // namespace fuselab
