// The FUSELAB_* settings (runtime/settings.h): one parser, each setting's accepted values, and a
// clear error naming the variable and the value for every value it does not accept.
#include "runtime/settings.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "runtime/error.h"

namespace fuselab::runtime {
namespace {

// Parses the settings from `environment` alone.
Settings parse(const std::map<std::string, std::string>& environment) {
  std::vector<std::string> names;
  for (const auto& [name, value] : environment) names.push_back(name);
  return parse_settings(
      [&](const char* name) -> const char* {
        const auto it = environment.find(name);
        return it == environment.end() ? nullptr : it->second.c_str();
      },
      names);
}

// The message of the Error that parsing `environment` throws ("" when it throws none).
std::string error_of(const std::map<std::string, std::string>& environment) {
  try {
    parse(environment);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Settings, AnEmptyEnvironmentGivesTheDefaults) {
  const Settings s = parse({});
  EXPECT_EQ(s.num_threads, 0);
  EXPECT_EQ(s.cpu_gemm, "");
  EXPECT_EQ(s.openblas, "");
  EXPECT_TRUE(s.avx512);
  EXPECT_TRUE(s.fusion);
  EXPECT_TRUE(s.disabled_fusions.empty());
  EXPECT_FALSE(s.fusion_log);
  EXPECT_FALSE(s.cuda_sync);
  EXPECT_FALSE(s.allow_tf32);
  EXPECT_EQ(s.dist_timeout_s, 300);
}

TEST(Settings, EachSettingTakesItsDocumentedValues) {
  const Settings s = parse({{"FUSELAB_NUM_THREADS", "3"},
                            {"FUSELAB_CPU_GEMM", "openblas"},
                            {"FUSELAB_OPENBLAS", "/opt/blas/libopenblas.so.0"},
                            {"FUSELAB_DISABLE_AVX512", "1"},
                            {"FUSELAB_FUSION", "0"},
                            {"FUSELAB_DISABLE_FUSIONS", "ForwardAddNorm, FlashAttention"},
                            {"FUSELAB_FUSION_LOG", "1"},
                            {"FUSELAB_CUDA_SYNC", "1"},
                            {"FUSELAB_ALLOW_TF32", "1"},
                            {"FUSELAB_DIST_TIMEOUT_S", "2.5"}});
  EXPECT_EQ(s.num_threads, 3);
  EXPECT_EQ(s.cpu_gemm, "openblas");
  EXPECT_EQ(s.openblas, "/opt/blas/libopenblas.so.0");
  EXPECT_FALSE(s.avx512);
  EXPECT_FALSE(s.fusion);
  EXPECT_EQ(s.disabled_fusions, (std::set<std::string>{"FlashAttention", "ForwardAddNorm"}));
  EXPECT_TRUE(s.fusion_log);
  EXPECT_TRUE(s.cuda_sync);
  EXPECT_TRUE(s.allow_tf32);
  EXPECT_EQ(s.dist_timeout_s, 2.5);
}

TEST(Settings, ZeroMeansOffForEverySwitch) {
  const Settings s = parse({{"FUSELAB_DISABLE_AVX512", "0"},
                            {"FUSELAB_FUSION", "1"},
                            {"FUSELAB_FUSION_LOG", "0"},
                            {"FUSELAB_CUDA_SYNC", "0"},
                            {"FUSELAB_ALLOW_TF32", "0"}});
  EXPECT_TRUE(s.avx512);
  EXPECT_TRUE(s.fusion);
  EXPECT_FALSE(s.fusion_log);
  EXPECT_FALSE(s.cuda_sync);
  EXPECT_FALSE(s.allow_tf32);
}

// One bad value per setting; each error names the variable, the value and what it takes.
struct BadValue {
  const char* name;
  const char* value;
  const char* accepted;
};
const BadValue kBadValues[] = {
    {"FUSELAB_NUM_THREADS", "0", "[1, 4096]"},
    {"FUSELAB_NUM_THREADS", "2x", "[1, 4096]"},
    {"FUSELAB_CPU_GEMM", "mkl", "openblas | onednn"},
    {"FUSELAB_OPENBLAS", "", "a library path"},
    {"FUSELAB_DISABLE_AVX512", "yes", "0 | 1"},
    {"FUSELAB_FUSION", "off", "0 | 1"},
    {"FUSELAB_DISABLE_FUSIONS", " , ", "names, comma-separated"},
    {"FUSELAB_FUSION_LOG", "true", "0 | 1"},
    {"FUSELAB_CUDA_SYNC", "", "0 | 1"},
    {"FUSELAB_ALLOW_TF32", "2", "0 | 1"},
    {"FUSELAB_DIST_TIMEOUT_S", "-5", "seconds > 0"},
    {"FUSELAB_DIST_TIMEOUT_S", "inf", "seconds > 0"},
};

TEST(Settings, EveryBadValueIsAnErrorNamingTheVariableAndTheValue) {
  for (const BadValue& bad : kBadValues) {
    const std::string message = error_of({{bad.name, bad.value}});
    EXPECT_NE(message.find(std::string(bad.name) + "='" + bad.value + "'"), std::string::npos) << message;
    EXPECT_NE(message.find(bad.accepted), std::string::npos) << message;
  }
}

TEST(Settings, EverySettingHasABadValueCase) {
  for (const SettingInfo& info : setting_table()) {
    bool covered = false;
    for (const BadValue& bad : kBadValues) covered = covered || std::string(bad.name) == info.name;
    EXPECT_TRUE(covered) << info.name;
  }
}

TEST(Settings, AMisspeltVariableIsAnError) {
  const std::string message = error_of({{"FUSELAB_NUM_THREAD", "2"}});
  EXPECT_NE(message.find("FUSELAB_NUM_THREAD is not a FuseLab setting"), std::string::npos) << message;
}

}  // namespace
}  // namespace fuselab::runtime
