#include "common/core/command_line.hpp"

#include "common/core/config_error.hpp"
#include "common/core/exit_codes.hpp"
#include "common/core/version.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace rths {

namespace {

// Optimal string alignment distance (Levenshtein with adjacent transpositions): --sett, --wiat and
// --realtim are each one edit from the option meant.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The closest name within one edit (short words) or two, if any.
std::optional<std::string> closest(const std::string& word, const std::set<std::string>& names) {
  const std::size_t limit = word.size() <= 4 ? 1 : 2;
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (const auto& n : names) {
    const std::size_t d = edit_distance(word, n);
    if (d < best_distance) {
      best = n;
      best_distance = d;
    }
  }
  return best;
}

std::string join(const std::vector<std::string>& words, const std::string& sep) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : sep) + w;
  return s;
}

// Text with its '\n' line breaks, every line after the first indented by `indent` spaces.
std::string indented(const std::string& text, std::size_t indent) {
  std::string s;
  for (const char c : text) {
    s += c;
    if (c == '\n') s += std::string(indent, ' ');
  }
  return s;
}

std::string padded(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

std::string ensure_newline(std::string s) {
  if (!s.empty() && s.back() != '\n') s += '\n';
  return s;
}

constexpr std::size_t kHelpWidth = 100;  // usage lines wrap here

// A bound as a person writes it: 1000000, 86400, 0.5 (not 1e+06).
std::string number_text(double v) {
  return v == std::floor(v) && std::abs(v) < 1e15 ? fmt::format("{:.0f}", v) : fmt::format("{:g}", v);
}

}  // namespace

double parse_number(const std::string& text, const NumberRange& range) {
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  const bool above_min = range.min_excluded ? value > range.min : value >= range.min;
  if (text.empty() || error != std::errc{} || ptr != end || !std::isfinite(value) || !above_min || value > range.max) {
    const std::string lowest = number_text(range.min);
    const std::string highest = number_text(range.max);
    throw Expected(range.min_excluded ? fmt::format("{} above {} and up to {}", range.what, lowest, highest)
                                      : fmt::format("{} from {} to {}", range.what, lowest, highest));
  }
  return value;
}

long long parse_whole(const std::string& text, const WholeRange& range) {
  long long value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc{} || ptr != end || value < range.min || value > range.max) {
    throw Expected(fmt::format("{} from {} to {}", range.what, range.min, range.max));
  }
  return value;
}

HostPort parse_address(const std::string& text, bool port_zero_allowed) {
  const std::string expected = fmt::format("HOST:PORT (a name, an IPv4 address or [IPv6], and a port from {} to 65535)",
                                           port_zero_allowed ? 0 : 1);
  HostPort address;
  try {
    address = parse_host_port(text);
  } catch (const std::invalid_argument& e) {
    if (std::string_view(e.what()).find("is not an IPv4 address") != std::string_view::npos) {
      throw Expected("HOST:PORT whose HOST of digits and dots is an IPv4 address (four numbers 0..255)");
    }
    throw Expected(expected);
  }
  if (address.port == 0 && !port_zero_allowed) {
    throw Expected(expected);
  }
  return address;
}

HostPort parse_listen_address(const std::string& text) {
  HostPort address = parse_address(text, true);
  if (const std::string problem = resolve_problem(address.host); !problem.empty()) {
    throw Expected(fmt::format("an address of this host (cannot resolve {}: {})", address.host, problem));
  }
  return address;
}

bool CommandLine::Option::applies_to(const std::string& command) const {
  return commands.empty() || std::find(commands.begin(), commands.end(), command) != commands.end();
}

CommandLine::CommandLine(std::string program, std::string title)
    : program_(std::move(program)), title_(std::move(title)) {}

CommandLine& CommandLine::description(std::string text) {
  description_ = ensure_newline(std::move(text));
  return *this;
}

CommandLine& CommandLine::epilogue(std::string text) {
  epilogue_ = ensure_newline(std::move(text));
  return *this;
}

CommandLine& CommandLine::command(std::string name, std::string operands, std::string help) {
  Command c{std::move(name), std::move(operands), std::move(help)};
  // "CONFIG" one, "DIR..." one or more, "[FILE]" at most one.
  std::istringstream words(c.operands);
  for (std::string w; words >> w;) {
    const bool optional = w.starts_with('[');
    c.min_operands += optional ? 0 : 1;
    c.max_operands =
        w.ends_with("...") || w.ends_with("...]") ? std::numeric_limits<std::size_t>::max() : c.max_operands + 1;
  }
  if (find_command(c.name) != nullptr || (!c.name.empty() && c.help.empty())) {
    throw std::logic_error(program_ + ": command " + c.name + " declared twice or without help text");
  }
  commands_.push_back(std::move(c));
  return *this;
}

CommandLine& CommandLine::add(Option option) {
  if (option.help.empty() || option.name.empty()) {
    throw std::logic_error(program_ + ": option --" + option.name + " declared without help text");
  }
  if (option.name == "help" || option.name == "version") {
    throw std::logic_error(program_ + ": --" + option.name + " is every program's own");
  }
  options_.push_back(std::move(option));
  return *this;
}

CommandLine::Option& CommandLine::last() {
  if (options_.empty()) {
    throw std::logic_error(program_ + ": an option modifier before any option");
  }
  return options_.back();
}

CommandLine& CommandLine::flag(std::string name, bool& target, std::string help) {
  Option o;
  o.name = std::move(name);
  o.help = std::move(help);
  o.set = [&target](const std::string&) { target = true; };
  return add(std::move(o));
}

CommandLine& CommandLine::option(std::string name, std::string value_name, Setter set, std::string help) {
  if (value_name.empty()) {
    throw std::logic_error(program_ + ": option --" + name + " takes a value without a name for it");
  }
  Option o;
  o.name = std::move(name);
  o.value_name = std::move(value_name);
  o.help = std::move(help);
  o.set = std::move(set);
  return add(std::move(o));
}

namespace {

// A setter that refuses an empty value and assigns any other to target (a string or a path).
template <typename Target>
CommandLine::Setter non_empty(Target& target, const std::string& value_name) {
  return [&target, expected = "a " + value_name + " (not empty)"](const std::string& v) {
    if (v.empty()) throw Expected(expected);
    target = v;
  };
}

}  // namespace

CommandLine& CommandLine::text(std::string name, std::string value_name, std::string& target, std::string help) {
  auto set = non_empty(target, value_name);
  return option(std::move(name), std::move(value_name), std::move(set), std::move(help));
}

CommandLine& CommandLine::path(std::string name, std::string value_name, std::filesystem::path& target,
                               std::string help) {
  auto set = non_empty(target, value_name);
  return option(std::move(name), std::move(value_name), std::move(set), std::move(help));
}

CommandLine& CommandLine::repeated(std::string name, std::string value_name, std::vector<std::string>& target,
                                   std::string help) {
  option(
      std::move(name), std::move(value_name), [&target](const std::string& v) { target.push_back(v); },
      std::move(help));
  last().repeatable = true;
  return *this;
}

CommandLine& CommandLine::number(std::string name, std::string value_name, double& target, NumberRange range,
                                 std::string help) {
  return option(
      std::move(name), std::move(value_name),
      [&target, range = std::move(range)](const std::string& v) { target = parse_number(v, range); }, std::move(help));
}

CommandLine& CommandLine::whole(std::string name, std::string value_name, int& target, WholeRange range,
                                std::string help) {
  if (range.min < std::numeric_limits<int>::min() || range.max > std::numeric_limits<int>::max()) {
    throw std::logic_error(program_ + ": --" + name + ": a range beyond int");
  }
  return option(
      std::move(name), std::move(value_name),
      [&target, range = std::move(range)](const std::string& v) { target = static_cast<int>(parse_whole(v, range)); },
      std::move(help));
}

CommandLine& CommandLine::alias(std::string short_name) {
  last().short_name = std::move(short_name);
  return *this;
}

CommandLine& CommandLine::only_for(std::vector<std::string> commands) {
  for (const auto& c : commands) {
    if (find_command(c) == nullptr) {
      throw std::logic_error(program_ + ": --" + last().name + " is for command " + c + ", which is not declared");
    }
  }
  last().commands = std::move(commands);
  return *this;
}

CommandLine& CommandLine::required() {
  last().required_in = {"*"};
  return *this;
}

CommandLine& CommandLine::required_for(std::vector<std::string> commands) {
  last().required_in = std::move(commands);
  return *this;
}

CommandLine& CommandLine::refuse(std::string name, std::string why) {
  refused_.emplace_back(std::move(name), std::move(why));
  return *this;
}

const CommandLine::Command* CommandLine::find_command(const std::string& name) const {
  for (const auto& c : commands_) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::set<std::string> CommandLine::option_names() const {
  std::set<std::string> names{"help", "version"};
  for (const auto& o : options_) names.insert(o.name);
  return names;
}

std::string CommandLine::unknown_option(const std::string& arg) const {
  const std::string name = arg.starts_with("--") ? arg.substr(2) : arg;
  for (const auto& [refused, why] : refused_) {
    if (name == refused) return fmt::format("--{}: {}", name, why);
  }
  if (const auto guess = closest(name, option_names())) {
    return fmt::format("unknown option {} (did you mean --{}?)", arg, *guess);
  }
  return fmt::format("unknown option {} (see --help)", arg);
}

CommandLine::Outcome CommandLine::parse(const std::vector<std::string>& args) {
  // Two options of one name must be for different commands, and agree on taking a value.
  for (std::size_t i = 0; i < options_.size(); ++i) {
    for (std::size_t j = i + 1; j < options_.size(); ++j) {
      const Option& a = options_[i];
      const Option& b = options_[j];
      const bool overlap =
          a.commands.empty() || b.commands.empty() ||
          std::any_of(a.commands.begin(), a.commands.end(), [&](const auto& c) { return b.applies_to(c); });
      if (a.name == b.name && (overlap || a.value_name.empty() != b.value_name.empty())) {
        throw std::logic_error(program_ + ": --" + a.name + " declared twice for one command");
      }
    }
  }
  command_.clear();
  operands_.clear();
  given_.clear();
  // --help and --version anywhere (before a "--") are answered whatever else the line holds.
  for (const auto& a : args) {
    if (a == "--") break;
    if (a == "-h" || a == "--help") return Outcome::kHelp;
    if (a == "--version") return Outcome::kVersion;
  }
  static const Command kNoCommand{};
  const bool has_commands = !commands_.empty() && !commands_.front().name.empty();
  std::vector<std::pair<std::string, std::string>> values;  // (name, value) as given, in order
  bool operands_only = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!operands_only && a == "--") {
      operands_only = true;
    } else if (!operands_only && a.size() > 1 && a.starts_with('-')) {
      std::string name;
      std::optional<std::string> value;
      if (a.starts_with("--")) {
        const auto eq = a.find('=');
        name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
        if (eq != std::string::npos) value = a.substr(eq + 1);
      }
      const auto option = std::find_if(options_.begin(), options_.end(), [&](const Option& o) {
        return a.starts_with("--") ? o.name == name : o.short_name == a;
      });
      if (option == options_.end()) {
        throw UsageError(unknown_option(a.substr(0, a.find('='))));
      }
      name = option->name;
      if (option->value_name.empty()) {
        if (value) throw UsageError(fmt::format("--{}: expected no value, got '{}'", name, shortened(*value, 80)));
      } else if (!value) {
        if (i + 1 == args.size()) {
          throw UsageError(fmt::format("--{}: expected {}, got nothing", name, option->value_name));
        }
        // A value that reads as an option is a forgotten value (--out --quiet), not a folder name.
        if (args[i + 1].starts_with("--") && args[i + 1].size() > 2) {
          throw UsageError(
              fmt::format("--{}: expected {}, got the option '{}'", name, option->value_name, args[i + 1]));
        }
        value = args[++i];
      }
      values.emplace_back(name, value.value_or(""));
    } else if (has_commands && command_.empty()) {
      if (find_command(a) == nullptr) {
        std::set<std::string> names;
        for (const auto& c : commands_) names.insert(c.name);
        const auto guess = closest(a, names);
        throw UsageError(
            fmt::format("unknown command {}{}", a, guess ? " (did you mean " + *guess + "?)" : " (see --help)"));
      }
      command_ = a;
    } else {
      operands_.push_back(a);
    }
  }
  if (has_commands && command_.empty()) {
    std::vector<std::string> names;
    names.reserve(commands_.size());
    for (const auto& c : commands_) names.push_back(c.name);
    throw UsageError("missing command; expected one of " + join(names, ", ") + " (see --help)");
  }
  const Command& command = has_commands ? *find_command(command_) : commands_.empty() ? kNoCommand : commands_.front();
  const std::string who = command.name.empty() ? program_ : command.name;
  const auto missing = [&](const std::string& what) {
    return UsageError((command.name.empty() ? "missing " : command.name + " needs ") + what + " (see --help)");
  };
  if (operands_.size() < command.min_operands) {
    throw missing(command.operands);
  }
  if (operands_.size() > command.max_operands) {
    throw UsageError(fmt::format("unexpected argument '{}' (see --help)", operands_[command.max_operands]));
  }
  for (const auto& given : values) {
    const std::string& name = given.first;
    const std::string& value = given.second;
    const auto option = std::find_if(options_.begin(), options_.end(),
                                     [&](const Option& o) { return o.name == name && o.applies_to(command_); });
    if (option == options_.end()) {
      std::vector<std::string> owners;
      for (const auto& o : options_) {
        if (o.name == name) owners.insert(owners.end(), o.commands.begin(), o.commands.end());
      }
      throw UsageError(fmt::format("--{} is an option of {}, not of {} (see --help)", name, join(owners, ", "), who));
    }
    try {
      option->set(value);
    } catch (const Expected& e) {
      throw UsageError(fmt::format("--{}: expected {}, got '{}'", name, e.what(), shortened(value, 80)));
    }
    given_.insert(name);
  }
  for (const auto& o : options_) {
    const bool required = std::any_of(o.required_in.begin(), o.required_in.end(),
                                      [&](const auto& c) { return c == "*" || c == command_; });
    if (required && o.applies_to(command_) && !given_.contains(o.name)) {
      throw missing("--" + o.name + (o.value_name.empty() ? "" : " " + o.value_name));
    }
  }
  return Outcome::kRun;
}

std::optional<int> CommandLine::parse(int argc, char** argv) {
  try {
    switch (parse(std::vector<std::string>(argv + 1, argv + argc))) {
      case Outcome::kHelp:
        std::fputs(help().c_str(), stdout);
        return kExitCompleted;
      case Outcome::kVersion:
        std::puts(version_line().c_str());
        return kExitCompleted;
      case Outcome::kRun:
        break;
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", program_.c_str(), e.what());
    return kExitBadInput;
  }
  return std::nullopt;
}

std::string CommandLine::version_line() const {
  return program_ + " " + kVersion;
}

std::string CommandLine::synopsis(const Command& c) const {
  const std::string head = program_ + (c.name.empty() ? "" : " " + c.name);
  const std::size_t indent = head.size() + 1;  // continuation lines start under the operands
  std::string text = head + (c.operands.empty() ? "" : " " + c.operands);
  std::size_t column = text.size();
  for (const auto& o : options_) {
    if (!o.applies_to(c.name)) continue;
    const bool required =
        std::any_of(o.required_in.begin(), o.required_in.end(), [&](const auto& r) { return r == "*" || r == c.name; });
    std::string item = fmt::format("--{}{}{}", o.name, o.value_name.empty() ? "" : " ", o.value_name);
    if (!required) {
      item = fmt::format("[{}]{}", item, o.repeatable ? "..." : "");
    }
    if (column + 1 + item.size() > kHelpWidth - 2) {
      text.append(1, '\n').append(indent, ' ').append(item);
      column = indent + item.size();
    } else {
      text.append(1, ' ').append(item);
      column += 1 + item.size();
    }
  }
  return text;
}

std::string CommandLine::help() const {
  std::string s = program_ + " — " + title_ + "\n\nUsage:\n";
  static const Command kNoCommand{};
  if (commands_.empty()) {
    s += "  " + indented(synopsis(kNoCommand), 2) + "\n";
  }
  for (const auto& c : commands_) {
    s += "  " + indented(synopsis(c), 2) + "\n";
  }
  s += "  " + program_ + " --help | --version\n";
  if (!description_.empty()) {
    s += "\n" + description_;
  }
  if (!commands_.empty() && !commands_.front().name.empty()) {
    std::size_t width = 0;
    for (const auto& c : commands_) width = std::max(width, c.name.size() + 2);
    s += "\nCommands:\n";
    for (const auto& c : commands_) {
      s += "  " + padded(c.name, width) + indented(c.help, 2 + width) + "\n";
    }
  }
  std::vector<std::pair<std::string, std::string>> rows;
  rows.reserve(options_.size());
  for (const auto& o : options_) {
    rows.emplace_back((o.short_name.empty() ? "" : o.short_name + ", ") + "--" + o.name +
                          (o.value_name.empty() ? "" : " " + o.value_name),
                      o.help);
  }
  rows.emplace_back("-h, --help", "This text.");
  rows.emplace_back("--version", "Program version.");
  std::size_t width = 0;
  for (const auto& [left, right] : rows) width = std::max(width, left.size() + 2);
  s += "\nOptions:\n";
  for (const auto& [left, right] : rows) {
    s += "  " + padded(left, width) + indented(right, 2 + width) + "\n";
  }
  if (!epilogue_.empty()) {
    s += "\n" + epilogue_;
  }
  return s;
}

std::filesystem::path default_run_folder(const std::filesystem::path& config, const std::string& suffix) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::array<char, 32> stamp{};
  std::strftime(stamp.data(), stamp.size(), "%Y%m%d-%H%M%S", &local);
  return std::filesystem::path("runs") / (config.stem().string() + suffix + "-" + stamp.data());
}

namespace {

// The message of a log line (%v) on one line (one_line): a message that quotes a name or a file's
// line with a line end in it stays one line of the log and of the terminal.
class OneLineMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/, spdlog::memory_buf_t& dest) override {
    const std::string text = one_line(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  [[nodiscard]] std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<OneLineMessage>();
  }
};

std::unique_ptr<spdlog::formatter> one_line_pattern(const std::string& pattern) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<OneLineMessage>('*').set_pattern(pattern);
  return formatter;
}

}  // namespace

std::shared_ptr<spdlog::logger> start_logging(const std::string& program, const std::filesystem::path& dir,
                                              const std::string& log_name, bool quiet) {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_level(quiet ? spdlog::level::err : spdlog::level::warn);
  console->set_formatter(one_line_pattern(program + ": %l: %*"));
  std::vector<spdlog::sink_ptr> sinks{console};
  if (!dir.empty()) {
    std::filesystem::create_directories(dir);
    sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>((dir / log_name).string(), true));
    sinks.back()->set_formatter(one_line_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %*"));
  }
  auto log = std::make_shared<spdlog::logger>(program, sinks.begin(), sinks.end());
  log->set_level(spdlog::level::info);
  // A warning or error reaches the file at once; everything else within a second, from spdlog's own
  // flusher thread (never a step thread: nothing logs inside a step), so a node killed with kill -9
  // leaves its log up to the last second.
  log->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(log);
  spdlog::flush_every(std::chrono::seconds(1));
  return log;
}

std::optional<int> start_run_log(const std::string& program, const std::filesystem::path& dir,
                                 const std::string& log_name, bool quiet) {
  try {
    start_logging(program, dir, log_name, quiet);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: cannot write %s: %s\n", program.c_str(), one_line(dir.string()).c_str(),
                 one_line(e.what()).c_str());
    return kExitBadInput;
  }
  return std::nullopt;
}

void log_config_error(const ConfigError& error) {
  // A config's problems come one per line (their text escaped by ConfigError): one log line each.
  std::string_view rest = error.what();
  for (std::size_t end = rest.find('\n'); end != std::string_view::npos; end = rest.find('\n')) {
    spdlog::error("{}", rest.substr(0, end));
    rest.remove_prefix(end + 1);
  }
  spdlog::error("{}", rest);
}

int run_logged(const std::function<int()>& body) {
  int code = 1;
  try {
    code = body();
  } catch (const ConfigError& e) {
    log_config_error(e);
    code = 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    code = 1;
  }
  spdlog::default_logger()->flush();
  return code;
}

namespace {
// Written by the signal handler, read by the step loops: necessarily a mutable global.
std::atomic<bool> g_stop{false};  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
extern "C" void on_stop_signal(int /*signal*/) {
  g_stop.store(true);
}
}  // namespace

const std::atomic<bool>& install_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  return g_stop;
}

void request_stop() {
  g_stop.store(true);
}

}  // namespace rths
