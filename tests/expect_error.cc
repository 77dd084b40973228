#include "tests/expect_error.h"

#include <gtest/gtest.h>

#include "tensor/error.h"

namespace fuselab::testing {

void expect_error(const std::function<void()>& call, const std::vector<std::string>& words) {
  try {
    call();
    ADD_FAILURE() << "expected fuselab::Error";
  } catch (const Error& e) {
    for (const std::string& word : words) EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
  }
}

}  // namespace fuselab::testing
