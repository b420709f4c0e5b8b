#pragma once

#include <stdexcept>
#include <string>

namespace ptxdsl {

// The one exception type of the library: every misuse, bad input or driver failure ends here, with
// a message that names what was wrong, the value, and what is allowed.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace ptxdsl
