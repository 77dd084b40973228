// FuseLab's OpenMP threads sleep while they wait (OMP_WAIT_POLICY=passive) unless the user's
// environment names a wait policy: spinning threads collapse a shared machine (threading.h).
#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// What libgomp prints for its settings (OMP_DISPLAY_ENV), here as the process runs.
std::string openmp_settings() {
  testing::internal::CaptureStderr();
  omp_display_env(/*verbose=*/1);
  return testing::internal::GetCapturedStderr();
}

// The combined output of a shell command.
std::string output_of(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  std::string out;
  std::array<char, 512> buffer;
  while (pipe && fgets(buffer.data(), buffer.size(), pipe)) out += buffer.data();
  if (pipe) pclose(pipe);
  return out;
}

std::string this_program() {
  std::array<char, 4096> path{};
  EXPECT_GT(readlink("/proc/self/exe", path.data(), path.size() - 1), 0);
  return path.data();
}

TEST(Threading, OpenMpWaitsPassivelyWhenTheEnvironmentNamesNoPolicy) {
  if (std::getenv("FUSELAB_TEST_USER_POLICY")) GTEST_SKIP() << "run by the test below with a policy of its own";
  const std::string settings = openmp_settings();
  EXPECT_NE(settings.find("OMP_WAIT_POLICY = 'PASSIVE'"), std::string::npos) << settings;
  EXPECT_NE(settings.find("GOMP_SPINCOUNT = '0'"), std::string::npos) << settings;
}

TEST(Threading, TheUsersWaitPolicyIsKept) {
  const std::string out = output_of("FUSELAB_TEST_USER_POLICY=1 OMP_WAIT_POLICY=active OMP_DISPLAY_ENV=verbose " +
                                    this_program() + " --gtest_filter=Threading.OpenMpWaitsPassively*");
  EXPECT_NE(out.find("OMP_WAIT_POLICY = 'ACTIVE'"), std::string::npos) << out;
  EXPECT_EQ(out.find("OMP_WAIT_POLICY = 'PASSIVE'"), std::string::npos) << out;
}

}  // namespace
