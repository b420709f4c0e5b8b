#include "ptxdsl/tool/random.hpp"

#include <cmath>

namespace ptxdsl::tool {

// The seed goes through one step of the mixer, so seeds 0, 1, 2 start far apart.
Random::Random(std::uint64_t seed) : state_(seed) {
  next();
}

std::uint64_t Random::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Random::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double Random::uniform(double lo, double hi) {
  return lo + (hi - lo) * uniform();
}

double Random::normal(double mean, double stddev) {
  if (has_spare_) {
    has_spare_ = false;
    return mean + stddev * spare_;
  }
  double u1 = uniform();
  while (u1 <= 0) u1 = uniform();
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  constexpr double kTwoPi = 6.283185307179586;
  spare_ = r * std::sin(kTwoPi * u2);
  has_spare_ = true;
  return mean + stddev * r * std::cos(kTwoPi * u2);
}

std::vector<double> Random::uniform_values(std::size_t count, double lo, double hi) {
  std::vector<double> v(count);
  for (double& x : v) x = uniform(lo, hi);
  return v;
}

std::vector<double> Random::normal_values(std::size_t count, double mean, double stddev) {
  std::vector<double> v(count);
  for (double& x : v) x = normal(mean, stddev);
  return v;
}

}  // namespace ptxdsl::tool
