// The `ptxas -v` report parser: what it reads, lines of any length, and random and adversarial
// logs, which give entries or a ptxdsl::Error and never a crash or a hang.
#include <chrono>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "support.hpp"

using namespace ptxdsl;

namespace {

// The parser as it was written with std::regex (whose recursion overflows the stack on long
// lines): the oracle for short ones.
std::vector<PtxasEntry> regex_report(std::string_view log) {
  static const std::regex kEntry(R"(Compiling entry function '([^']+)')");
  static const std::regex kFrame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex kRegs(R"(Used (\d+) registers)");
  static const std::regex kSmem(R"((\d+) bytes smem)");
  const auto number = [](const std::ssub_match& m) {
    return static_cast<std::uint32_t>(std::stoull(m.str()));
  };
  std::vector<PtxasEntry> entries;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    const std::string line(log.substr(start, end - start));
    std::smatch m;
    if (std::regex_search(line, m, kEntry)) {
      entries.push_back(PtxasEntry{m[1].str()});
    } else if (!entries.empty()) {
      PtxasEntry& e = entries.back();
      if (std::regex_search(line, m, kFrame)) {
        e.stack_frame_bytes = number(m[1]);
        e.spill_store_bytes = number(m[2]);
        e.spill_load_bytes = number(m[3]);
      }
      if (std::regex_search(line, m, kRegs)) e.registers = number(m[1]);
      if (std::regex_search(line, m, kSmem)) e.shared_bytes = number(m[1]);
    }
    start = end + 1;
  }
  return entries;
}

bool same_entries(const std::vector<PtxasEntry>& a, const std::vector<PtxasEntry>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].registers != b[i].registers ||
        a[i].spill_store_bytes != b[i].spill_store_bytes ||
        a[i].spill_load_bytes != b[i].spill_load_bytes ||
        a[i].stack_frame_bytes != b[i].stack_frame_bytes ||
        a[i].shared_bytes != b[i].shared_bytes) {
      return false;
    }
  }
  return true;
}

// Logs made of the report's own pieces, numbers (some too large for 32 bits), stray bytes (NUL,
// quotes, newlines) and long runs, cut off anywhere.
class LogMaker {
 public:
  explicit LogMaker(std::uint64_t seed) : rng_(seed) {}

  std::string make(std::size_t pieces, std::size_t longest_run) {
    static const char* const kPieces[] = {"ptxas info    : ",
                                          "Compiling entry function '",
                                          "' for 'sm_90'",
                                          "'",
                                          "Used ",
                                          " registers",
                                          ", ",
                                          " bytes smem",
                                          " bytes stack frame",
                                          " bytes spill stores",
                                          " bytes spill loads",
                                          " bytes stack frame, ",
                                          " bytes spill stores, ",
                                          "\n",
                                          "\n    ",
                                          "Function properties for ",
                                          " bytes cmem[0]",
                                          "ptxas fatal   : ",
                                          " ",
                                          "Used Used "};
    std::string s;
    for (std::size_t i = 0; i < pieces; ++i) {
      switch (pick(6)) {
        case 0:
        case 1:
          s += kPieces[pick(std::size(kPieces))];
          break;
        case 2:
          s += number(pick(2) == 0 ? 1 + pick(10) : 1 + pick(25));
          break;
        case 3:
          s += static_cast<char>(pick(256));
          break;
        case 4:
          s += std::string(1 + pick(longest_run), "x'0\n "[pick(5)]);
          break;
        default:
          s += std::string("ptxas info    : Used ") + number(1 + pick(4)) + " registers, " +
               number(1 + pick(5)) + " bytes smem";
          break;
      }
    }
    if (!s.empty() && pick(4) == 0) s.resize(pick(s.size()));  // cut short anywhere
    return s;
  }
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }

 private:
  std::string number(std::size_t digits) {
    std::string d;
    for (std::size_t i = 0; i < digits; ++i) d += static_cast<char>('0' + pick(10));
    return d;
  }
  std::mt19937_64 rng_;
};

}  // namespace

TEST_CASE("the ptxas report parser reads each entry and refuses numbers that do not fit",
          "[dsl][ptxas_report]") {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'rms_fwd_f16' for 'sm_90'\n"
      "ptxas info    : Function properties for rms_fwd_f16\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, 2048 bytes smem, 400 bytes cmem[0]\n";
  const std::vector<PtxasEntry> entries = parse_ptxas_report(log);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].name == "rms_fwd_f16");
  CHECK(entries[0].registers == 40);
  CHECK(entries[0].shared_bytes == 2048);
  CHECK(entries[0].stack_frame_bytes == 8);
  CHECK(entries[0].spill_store_bytes == 4);
  CHECK(entries[0].spill_load_bytes == 12);
  CHECK(has_ptxas_report(log));
  CHECK_FALSE(has_ptxas_report(""));
  CHECK_FALSE(has_ptxas_report("Compiling entry function 'k'\nUsed 4 registers\n"));
  const std::string huge =
      "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
      "ptxas info    : Used 99999999999999999999 registers, 0 bytes smem\n";
  CHECK_THROWS_AS(parse_ptxas_report(huge), Error);
  CHECK_THROWS_WITH(parse_ptxas_report(huge),
                    "ptxas reported 99999999999999999999 in 'ptxas info    : Used "
                    "99999999999999999999 registers, 0 bytes smem': numbers must be in [0, "
                    "4294967295]");
  const std::string just_over =
      "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
      "    4294967296 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
  CHECK_THROWS_WITH(parse_ptxas_report(just_over), Catch::Contains("4294967296"));
}

TEST_CASE("the ptxas report parser reads lines of any length", "[dsl][ptxas_report]") {
  // A 50,000-character entry name overflowed the stack of std::regex's recursive matcher.
  const std::string name(50000, 'k');
  const std::string log = "ptxas info    : Compiling entry function '" + name +
                          "' for 'sm_90'\n"
                          "ptxas info    : Function properties for " +
                          name +
                          "\n"
                          "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                          "ptxas info    : Used 12 registers, 16 bytes smem\n" +
                          std::string(1 << 20, '1') + " bytes of digits\n" +
                          std::string(1 << 20, '\'') + "\nUsed " + std::string(1 << 20, ' ') + "\n";
  const std::vector<PtxasEntry> entries = parse_ptxas_report(log);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].name == name);
  CHECK(entries[0].registers == 12);
  CHECK(entries[0].shared_bytes == 16);
  // A number too long to fit is named, cut short, in its error.
  const std::string long_number =
      "Compiling entry function 'k'\nUsed " + std::string(100000, '7') + " registers\n";
  const std::string what = test::error_of([&] { parse_ptxas_report(long_number); });
  CHECK(what.size() < 1000);
  CHECK_THAT(what, Catch::Contains("(100000 characters)"));
}

TEST_CASE("the ptxas report parser reads what the regexes it replaced read",
          "[dsl][ptxas_report]") {
  const char* const logs[] = {
      "Compiling entry function ''\n",
      "Compiling entry function '' and Compiling entry function 'b'\nUsed 3 registers\n",
      "Compiling entry function 'a\nUsed 3 registers\n",
      "Compiling entry function 'a'\nUsed Used 4 registers 5 bytes smem6 bytes smem\n",
      "Compiling entry function 'a'\n12 bytes stack frame, 3 bytes spill stores, x bytes spill "
      "loads 4 bytes stack frame, 5 bytes spill stores, 6 bytes spill loads\n",
      "Compiling entry function 'a'\nUsed 1 registers\nCompiling entry function 'b'\n"
      "007 bytes smem\n",
  };
  for (const char* log : logs) {
    CAPTURE(log);
    CHECK(same_entries(parse_ptxas_report(log), regex_report(log)));
  }
  // And on random short logs, whose numbers fit.
  LogMaker maker(20261207);
  int compared = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string log = maker.make(1 + maker.pick(12), 6);
    std::vector<PtxasEntry> ours;
    try {
      ours = parse_ptxas_report(log);
    } catch (const Error&) {
      continue;  // a number past 32 bits, which the regexes' version did not check
    }
    CAPTURE(log);
    REQUIRE(same_entries(ours, regex_report(log)));
    ++compared;
  }
  CHECK(compared > 1000);
}

TEST_CASE("random and adversarial ptxas logs give entries or an error, in bounded time",
          "[dsl][ptxas_report]") {
  // A seeded fuzzer with a time budget: long runs, NULs, huge numbers, cut lines.
  LogMaker maker(51);
  const auto start = std::chrono::steady_clock::now();
  int logs = 0, errors = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(2) && logs < 20000) {
    const std::string log = maker.make(1 + maker.pick(200), logs % 50 == 0 ? 200000 : 64);
    try {
      const std::vector<PtxasEntry> entries = parse_ptxas_report(log);
      CHECK(entries.size() <= log.size());
    } catch (const Error& e) {
      ++errors;
      CHECK_THAT(e.what(), Catch::StartsWith("ptxas reported "));
    }
    ++logs;
  }
  CHECK(logs > 100);
  CHECK(errors > 0);
}
