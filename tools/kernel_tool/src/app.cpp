// The main of every tool: parse, run the command, and end every failure as one line.
#include "ptxdsl/cli/app.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <system_error>

namespace ptxdsl::cli {

std::uint64_t parse_uint(std::string_view what, std::string_view text, std::uint64_t lo,
                         std::uint64_t hi) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ptr != end || ec != std::errc()) {
    // A leading '-' is a negative number: say it is out of range rather than malformed.
    const bool negative =
        !text.empty() && text[0] == '-' && text.size() > 1 &&
        std::all_of(text.begin() + 1, text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (negative)
      throw UsageError(fmt::format("{} must be in [{}, {}], got {}", what, lo, hi, text));
    throw UsageError(
        fmt::format("{} must be an integer in [{}, {}], got '{}'", what, lo, hi, text));
  }
  if (value < lo || value > hi) {
    throw UsageError(fmt::format("{} must be in [{}, {}], got {}", what, lo, hi, value));
  }
  return value;
}

void refuse_empty_values(const CLI::App& sub) {
  for (const CLI::Option* o : sub.get_options()) {
    // Flags take no value; an option given only '' has nothing but empty results.
    if (o->count() == 0 || o->get_expected_min() == 0) continue;
    const std::vector<std::string>& given = o->results();
    if (!std::all_of(given.begin(), given.end(), [](const std::string& v) { return v.empty(); }))
      continue;
    const std::string name = o->get_name();
    const std::string& takes = o->get_description();
    throw UsageError(takes.empty() ? fmt::format("{} needs a value, got ''", name)
                                   : fmt::format("{} needs a value ({}), got ''", name, takes));
  }
}

std::string read_text_file(const std::string& path, std::size_t max_bytes) {
  const auto fail = [&](int error) {
    return std::runtime_error(fmt::format("cannot read '{}': {}", path, std::strerror(error)));
  };
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw fail(errno);
  std::string text;
  std::array<char, 65536> buffer;
  for (;;) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;  // EISDIR for a folder
      close(fd);
      throw fail(error);
    }
    if (n == 0) break;
    // An endless or huge input (/dev/zero, a device) ends here rather than in the OOM killer.
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) {
      close(fd);
      throw std::runtime_error(
          fmt::format("cannot read '{}': it is longer than {} MiB, the most "
                      "read from a file",
                      path, max_bytes >> 20));
    }
    text.append(buffer.data(), static_cast<std::size_t>(n));
  }
  close(fd);
  return text;
}

namespace {

// The arguments CLI11 left over, in the order they were given (CLI11 lists them backwards).
std::string extras_in_order(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> left = app.remaining(true);
  std::vector<std::string> ordered;
  for (int i = 1; i < argc; ++i) {
    const auto it = std::find(left.begin(), left.end(), argv[i]);
    if (it == left.end()) continue;
    ordered.push_back(fmt::format("'{}'", *it));
    left.erase(it);
  }
  for (const std::string& rest : left) ordered.push_back(fmt::format("'{}'", rest));
  return fmt::format("{}", fmt::join(ordered, " "));
}

// "list, emit, check or run".
std::string command_names(const std::vector<Registered>& commands) {
  std::string names;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    if (i > 0) names += i + 1 == commands.size() ? " or " : ", ";
    names += commands[i].first->get_name();
  }
  return names;
}

// `sized` tells run_app whether the command that ran is sized by its options.
int parse_and_run(int argc, char** argv, const ToolInfo& info,
                  const std::function<std::vector<Registered>(CLI::App&)>& add_commands,
                  bool& sized) {
  CLI::App app{info.description, info.name};
  app.require_subcommand(1);
  app.fallthrough(false);
  app.set_version_flag("--version", info.version);
  std::vector<Registered> commands = add_commands(app);
  const std::string names = command_names(commands);
  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    const bool known = std::any_of(commands.begin(), commands.end(),
                                   [&](const auto& c) { return c.first->get_name() == first; });
    if (!known) {
      throw UsageError(fmt::format("unknown command '{}': the commands are {}", first, names));
    }
  }
  const std::string see_help = fmt::format(" (see {} --help)", info.name);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help: the help text on stdout, exit 0
  } catch (const CLI::ExtrasError&) {
    throw UsageError(
        fmt::format("unexpected arguments: {}{}", extras_in_order(app, argc, argv), see_help));
  } catch (const CLI::ArgumentMismatch& e) {
    // "--width: 1 required TEXT missing": say it plainly.
    std::string what = e.what();
    const auto colon = what.find(": ");
    if (colon != std::string::npos && what.find("missing") != std::string::npos) {
      throw UsageError(fmt::format("{} needs a value", what.substr(0, colon)));
    }
    throw UsageError(what + see_help);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.find("A subcommand is required") != std::string::npos) {
      throw UsageError(fmt::format("a command is required: {}", names));
    }
    if (what.empty()) what = e.get_name();
    // CLI11 sometimes ends its messages with a newline; keep to one line.
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    throw UsageError(what + see_help);
  }
  for (auto& [sub, command] : commands) {
    if (!sub->parsed()) continue;
    refuse_empty_values(*sub);
    sized = command->sized_by_options();
    return command->run();
  }
  throw UsageError(fmt::format("a command is required: {}", names));
}

// Output that did not reach stdout (a full disk, a closed pipe) is a failure, not a success.
void check_stdout() {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  if (flushed && !std::ferror(stdout) && std::cout) return;
  // A write that failed while the output was written set errno long ago; a closed stdout shows.
  const bool closed = fcntl(STDOUT_FILENO, F_GETFD) == -1;
  throw std::runtime_error(fmt::format("cannot write to stdout: {}", closed ? "it is closed"
                                                                     : error != 0
                                                                         ? std::strerror(error)
                                                                         : "a write failed"));
}

}  // namespace

int run_app(int argc, char** argv, const ToolInfo& info,
            const std::function<std::vector<Registered>(CLI::App&)>& commands) {
  const char* name = info.name.c_str();
  bool sized = false;
  try {
    const int status = parse_and_run(argc, argv, info, commands, sized);
    check_stdout();
    return status;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return kExitUsage;
  } catch (const std::system_error& e) {
    // fmt::print reports a failed write to a FILE* so; the commands print only to stdout.
    if (std::string_view(e.what()).starts_with("cannot write to file")) {
      std::fprintf(stderr, "%s: error: cannot write to stdout: %s\n", name,
                   e.code().message().c_str());
    } else {
      std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    }
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    if (sized) {
      std::fprintf(stderr, "%s: error: out of host memory (std::bad_alloc); %s\n", name,
                   info.memory_hint.c_str());
    } else {
      std::fprintf(stderr, "%s: error: out of host memory (std::bad_alloc)\n", name);
    }
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    return kExitFailure;
  } catch (...) {
    std::fprintf(stderr, "%s: error: unknown exception\n", name);
    return kExitFailure;
  }
}

}  // namespace ptxdsl::cli
