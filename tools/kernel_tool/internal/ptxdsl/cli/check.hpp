#pragma once

#include <memory>
#include <string>

#include "ptxdsl/cli/app.hpp"

// `check`: ptxas's resource report per entry, for a kernel of the tool's or for any PTX file.
namespace ptxdsl::cli {

struct CheckedPtx {
  std::string ptx;
  std::string arch;  // ptxas's -arch
};

// The tool's kernels as `check` builds them: the options that name one, and the build.
class PtxSource {
 public:
  virtual ~PtxSource() = default;
  // Registers the options naming a kernel on `check`, none required: `--ptx FILE` takes none but
  // --arch, so build() says what is missing.
  virtual void add_options(CLI::App& sub) = 0;
  virtual CheckedPtx build() = 0;
};

// `check KERNEL ...` through `source`, or `check --ptx FILE [--arch A]` (the file's .target
// unless --arch). The PTX goes through ptxas once; its log goes to stderr when it fails (exit 1).
Registered add_check(CLI::App& app, std::unique_ptr<PtxSource> source);

}  // namespace ptxdsl::cli
