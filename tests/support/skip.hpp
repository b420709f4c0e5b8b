#pragma once

#include <catch2/catch.hpp>

// Catch2 2 has no skip: a test case that cannot run says why and calls note_skipped(), and the
// test main (support/main.cpp) exits with PTXDSL_TEST_SKIPPED when every case it ran skipped, which
// CTest reports as skipped rather than passed.
namespace ptxdsl::test {

// Marks the running test case skipped; defined in support/main.cpp.
void note_skipped();

}  // namespace ptxdsl::test

// Ends the running test case as skipped, printing `why` (a stream expression, as in WARN).
#define PTXDSL_SKIP(why)            \
  do {                              \
    ::ptxdsl::test::note_skipped(); \
    WARN("skipped: " << why);       \
    return;                         \
  } while (false)
