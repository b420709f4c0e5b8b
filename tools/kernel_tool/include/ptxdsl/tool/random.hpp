#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ptxdsl::tool {

// Seeded inputs for a kernel tool's `run`: splitmix64 with a Box–Muller normal, no std::
// distributions, so a seed gives the same numbers on every platform and standard library.
class Random {
 public:
  explicit Random(std::uint64_t seed);
  std::uint64_t next();
  double uniform();                      // [0, 1), 53 bits
  double uniform(double lo, double hi);  // [lo, hi)
  double normal(double mean = 0, double stddev = 1);
  std::vector<double> uniform_values(std::size_t count, double lo, double hi);
  std::vector<double> normal_values(std::size_t count, double mean = 0, double stddev = 1);

 private:
  std::uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace ptxdsl::tool
