#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "skip.hpp"

// A Catch2 main that tells CTest a run skipped: it counts the test cases that ran and those that
// called note_skipped(), and exits with PTXDSL_TEST_SKIPPED (CTest's SKIP_RETURN_CODE) when they
// are the same, nonzero number and nothing failed.
namespace ptxdsl::test {
namespace {

struct SkipCount {
  std::size_t ran = 0, skipped = 0;
  bool current_skipped = false;
};
SkipCount& skip_count() {
  static SkipCount c;
  return c;
}

struct SkipListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    TestEventListenerBase::testCaseStarting(info);
    skip_count().current_skipped = false;
  }
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    TestEventListenerBase::testCaseEnded(stats);
    SkipCount& c = skip_count();
    ++c.ran;
    if (c.current_skipped) ++c.skipped;
  }
};
CATCH_REGISTER_LISTENER(SkipListener)

}  // namespace

void note_skipped() {
  skip_count().current_skipped = true;
}

}  // namespace ptxdsl::test

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  const bool listing = session.configData().listTestNamesOnly;
  const int rc = session.run();
  // catch_discover_tests warns about a listing of 0 names; an empty subset of the labels is normal.
  if (listing) return rc == 0 ? 1 : rc;
  const auto& c = ptxdsl::test::skip_count();
  if (rc == 0 && c.ran > 0 && c.skipped == c.ran) return PTXDSL_TEST_SKIPPED;
  return rc;
}
