#pragma once

#include <catch2/catch.hpp>

#include <ptxdsl/dsl.hpp>
#include <ptxdsl/dsl/ptxas.hpp>
#include <string>
#include <string_view>
#include <vector>

// What the DSL tests share: the targets every module is assembled for, the ptxas check, and a way
// to read the message of the error a misuse throws.
namespace ptxdsl::test {

inline constexpr Arch kArches[] = {Arch::Sm80, Arch::Sm90};

// Emits the module and assembles it with the toolkit's ptxas for the module's own target. On
// failure the ptxas log and the PTX are printed. With `no_spills`, every entry must also run
// without local memory (no spill stores or loads, no stack frame).
inline PtxasResult require_assembles(Module& m, bool no_spills = false) {
  const std::string ptx = m.emit();
  const PtxasResult r = run_ptxas(ptx, arch_name(m.arch()));
  INFO("ptxas " << arch_name(m.arch()) << " exit " << r.exit_code << ":\n" << r.log);
  INFO("PTX:\n" << ptx);
  REQUIRE(r.ok());
  if (no_spills) {
    REQUIRE(r.entries.size() == m.kernels().size());
    for (const PtxasEntry& e : r.entries) {
      INFO("entry " << e.name);
      CHECK(e.spill_store_bytes == 0);
      CHECK(e.spill_load_bytes == 0);
      CHECK(e.stack_frame_bytes == 0);
    }
  }
  return r;
}

// Runs `f`, which must throw ptxdsl::Error, and returns its message (empty, and a failed check,
// when nothing is thrown).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  FAIL_CHECK("no ptxdsl::Error was thrown");
  return {};
}

// The text of a kernel's body as it stands: one line per instruction, no indent.
inline std::string body_text(const Kernel& k, std::size_t first = 0) {
  std::string out;
  const std::vector<Instr>& body = k.instructions();
  for (std::size_t i = first; i < body.size(); ++i) {
    if (!out.empty()) out += '\n';
    out += format_instr(k, body[i]);
  }
  return out;
}

// How often `needle` occurs in `text`.
inline int count(std::string_view text, std::string_view needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string_view::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

}  // namespace ptxdsl::test
