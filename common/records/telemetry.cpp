#include "common/records/telemetry.hpp"

#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>
#include <sodium.h>
#include <asio/io_context.hpp>

#include "common/config/config.hpp"
#include "common/core/address.hpp"
#include "common/core/command_line.hpp"
#include "common/records/recorder.hpp"
#include "common/transport/udp_link.hpp"

namespace rths {

namespace {

// A frame is one datagram of at most kMaxDatagramBytes, as every rths datagram (never fragmented on
// the way; UdpLink refuses larger ones): columns past it are left out (a model with hundreds of
// degrees of freedom shows its first ones; its CSV has them all).
constexpr std::size_t kMaxTelemetryBytes = TelemetryPublisher::kMaxBodyBytes;
static_assert(kMaxTelemetryBytes + telemetry_frame::kHeaderBytes + telemetry_frame::kTagBytes == kMaxDatagramBytes);

std::string json_number(double v) {
  return std::isfinite(v) ? fmt::format("{:.9g}", v) : std::string("null");  // JSON has no NaN: null shows it
}

// "RTHC", version 1: the frame's first bytes.
constexpr std::array<unsigned char, 5> kMagic{'R', 'T', 'H', 'C', 1};
constexpr std::size_t kNonceBytes = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
static_assert(telemetry_frame::kHeaderBytes ==
              8 + telemetry_frame::kRunBytes + 8 + telemetry_frame::kChallengeBytes + kNonceBytes);
static_assert(telemetry_frame::kTagBytes == crypto_aead_xchacha20poly1305_ietf_ABYTES);

const unsigned char* bytes_of(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
}

SecretKey derived(const SecretKey& key, std::string_view label) {
  std::array<unsigned char, SecretKey::kBytes> out{};
  crypto_generichash(out.data(), out.size(), bytes_of(label), label.size(), key.data(), SecretKey::kBytes);
  SecretKey k{std::span<const unsigned char, SecretKey::kBytes>(out)};
  sodium_memzero(out.data(), out.size());
  return k;
}

// A text as JSON string content of at most kMaxTextBytes, cut at a character's start and marked
// with "..." when longer (a reason may quote a path or a peer's words).
std::string escaped_cut(std::string_view text) {
  constexpr std::size_t kMax = TelemetryPublisher::kMaxTextBytes;
  std::string out = json_escape(text);
  if (out.size() <= kMax) {
    return out;
  }
  out.clear();
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = 1;
    while (i + length < text.size() && (static_cast<unsigned char>(text[i + length]) & 0xC0U) == 0x80U) {
      ++length;
    }
    const std::string piece = json_escape(text.substr(i, length));
    if (out.size() + piece.size() > kMax - 3) {
      break;
    }
    out += piece;
    i += length;
  }
  return out + "...";
}

}  // namespace

std::string console_address(const std::string& text) {
  const HostPort address = parse_address(text, false);
  if (const std::string problem = resolve_problem(address.host); !problem.empty()) {
    throw Expected(fmt::format("HOST:PORT of rths-console's telemetry (cannot resolve {}: {})", address.host, problem));
  }
  return text;
}

double telemetry_rate(const std::string& text) {
  return parse_number(text, {1.0, 1000.0, false, "a rate in Hz"});
}

void load_telemetry_key(TelemetryOptions& options) {
  if (options.console.empty()) {
    if (!options.key_file.empty()) {
      throw ConfigError("--console-key: given without --console (the console's address)");
    }
    return;
  }
  if (options.key_file.empty()) {
    throw ConfigError(
        "--console: needs --console-key FILE, the key file rths-console holds (its --key); make one with "
        "`rths-numerical keygen FILE` and give the console and every node the same file");
  }
  try {
    options.key = load_key_file(options.key_file);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("--console-key: {}", e.what()));
  }
}

namespace telemetry_frame {

Keys derive_keys(const SecretKey& console_key) {
  ensure_crypto();
  return {derived(console_key, "rths console v1 node to console"),
          derived(console_key, "rths console v1 console to node")};
}

RunId random_run() {
  ensure_crypto();
  RunId run{};
  randombytes_buf(run.data(), run.size());
  return run;
}

std::string hex(std::span<const unsigned char> bytes) {
  std::string out(2 * bytes.size() + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), bytes.data(), bytes.size());
  out.pop_back();
  return out;
}

std::string seal(const SecretKey& key, const Header& header, std::string_view body) {
  ensure_crypto();
  std::string frame(kHeaderBytes + body.size() + kTagBytes, '\0');
  auto* out = reinterpret_cast<unsigned char*>(frame.data());  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
  std::memcpy(out, kMagic.data(), kMagic.size());
  out[5] = static_cast<unsigned char>(header.kind);
  std::memcpy(out + 8, header.run.data(), kRunBytes);
  for (std::size_t i = 0; i < 8; ++i) {
    out[24 + i] = static_cast<unsigned char>(header.sequence >> (8U * i));
  }
  std::memcpy(out + 32, header.echo.data(), kChallengeBytes);
  unsigned char* nonce = out + 48;
  randombytes_buf(nonce, kNonceBytes);
  unsigned long long sealed = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(out + kHeaderBytes, &sealed, bytes_of(body), body.size(), out,
                                             kHeaderBytes, nullptr, nonce, key.data());
  return frame;
}

bool looks_like_frame(std::string_view datagram) {
  return datagram.size() >= kHeaderBytes + kTagBytes && std::memcmp(datagram.data(), kMagic.data(), kMagic.size()) == 0;
}

std::optional<Opened> open(const SecretKey& key, std::string_view frame) {
  if (!looks_like_frame(frame)) {
    return std::nullopt;
  }
  ensure_crypto();
  const unsigned char* in = bytes_of(frame);
  Opened o;
  o.body.resize(frame.size() - kHeaderBytes - kTagBytes);
  unsigned long long opened = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(reinterpret_cast<unsigned char*>(o.body.data()),  // NOLINT
                                                 &opened, nullptr, in + kHeaderBytes, frame.size() - kHeaderBytes, in,
                                                 kHeaderBytes, in + 48, key.data()) != 0) {
    return std::nullopt;
  }
  o.header.kind = static_cast<Kind>(in[5]);
  std::memcpy(o.header.run.data(), in + 8, kRunBytes);
  for (std::size_t i = 0; i < 8; ++i) {
    o.header.sequence |= static_cast<std::uint64_t>(in[24 + i]) << (8U * i);
  }
  std::memcpy(o.header.echo.data(), in + 32, kChallengeBytes);
  return o;
}

}  // namespace telemetry_frame

std::string json_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

const char* node_state_name(NodeState state) {
  switch (state) {
    case NodeState::kHandshake:
      return "handshake";
    case NodeState::kRunning:
      return "running";
    case NodeState::kStopping:
      return "stopping";
    case NodeState::kStopped:
      return "stopped";
  }
  return "?";
}

struct TelemetryPublisher::Socket {
  asio::io_context io;
  UdpLink link;
  explicit Socket(const HostPort& console) : link(io, is_loopback_host(console.host) ? "127.0.0.1" : "0.0.0.0", 0) {
    link.set_peer(console.host, console.port);
    link.lock_peer(true);  // a stop request counts only from the console's own address
  }
};

TelemetryPublisher::TelemetryPublisher(std::string node, TelemetryOptions options)
    : node_(std::move(node)), options_(std::move(options)), run_(telemetry_frame::random_run()) {
  if (!(options_.rate_hz >= 1.0 && options_.rate_hz <= 1000.0)) {
    throw std::invalid_argument(fmt::format("telemetry rate {} Hz: expected 1 to 1000 Hz", options_.rate_hz));
  }
  if (!options_.key) {
    throw std::invalid_argument("telemetry to " + options_.console +
                                ": no console key (--console-key FILE, the file rths-console holds)");
  }
  const HostPort console = parse_host_port(options_.console);
  if (console.port == 0) {
    throw std::invalid_argument("console address " + options_.console + ": needs a port other than 0");
  }
  keys_ = telemetry_frame::derive_keys(*options_.key);
  socket_ = std::make_unique<Socket>(console);
}

TelemetryPublisher::~TelemetryPublisher() {
  if (thread_.joinable()) {
    done_.store(true);
    thread_.join();
  }
  publish();  // the last state, with the final rows
}

void LatestRow::set(std::span<const double> row) {
  const std::scoped_lock lock(mutex_);
  row_.assign(row.begin(), row.end());
  ++rows_;
}

std::uint64_t LatestRow::get(std::vector<double>& out) const {
  const std::scoped_lock lock(mutex_);
  if (rows_ > 0) {
    out = row_;
  }
  return rows_;
}

void TelemetryPublisher::add_stream(std::string name, const Recorder& recorder) {
  if (streams_.size() >= kMaxStreams) throw std::logic_error("a telemetry publisher has at most 8 streams");
  streams_.push_back(Stream{std::move(name), &recorder, nullptr});
}

void TelemetryPublisher::add_stream(std::string name, const LatestRow& latest) {
  if (streams_.size() >= kMaxStreams) throw std::logic_error("a telemetry publisher has at most 8 streams");
  streams_.push_back(Stream{std::move(name), nullptr, &latest});
}

void TelemetryPublisher::add_figure(std::string name, std::function<double()> read) {
  figures_.emplace_back(std::move(name), std::move(read));
}

void TelemetryPublisher::set_experiment(std::string name) {
  experiment_ = std::move(name);
}

void TelemetryPublisher::on_stop(std::function<void()> stop) {
  on_stop_ = std::move(stop);
}

void TelemetryPublisher::start() {
  thread_ = std::thread([this] { loop(); });
}

void TelemetryPublisher::set_state(NodeState state, std::string reason) {
  const std::scoped_lock lock(state_mutex_);
  state_ = state;
  reason_ = std::move(reason);
}

std::string TelemetryPublisher::datagram(std::size_t stream) const {
  std::string state;
  std::string reason;
  std::uint64_t stop_ack = 0;
  {
    const std::scoped_lock lock(state_mutex_);
    state = node_state_name(state_);
    reason = reason_;
    stop_ack = stop_ack_;
  }
  std::string out = fmt::format(R"({{"node":"{}","state":"{}","reason":"{}","sent":{})", json_escape(node_), state,
                                escaped_cut(reason), sent_.load());
  const std::string head = out + "}";  // what goes out should the rest not fit
  if (!experiment_.empty()) {
    out += fmt::format(R"(,"experiment":"{}")", escaped_cut(experiment_));
  }
  if (stop_ack != 0) {
    out += fmt::format(R"(,"stop_ack":{})", stop_ack);
  }
  out += R"(,"figures":{)";
  for (std::size_t i = 0; i < figures_.size(); ++i) {
    out += fmt::format(R"({}"{}":{})", i == 0 ? "" : ",", json_escape(figures_[i].first),
                       json_number(figures_[i].second()));
  }
  out += "}";
  if (stream < streams_.size()) {
    const Stream& st = streams_[stream];
    std::vector<std::string> columns;
    std::vector<double> row;
    std::uint64_t rows = 0;
    if (st.recorder != nullptr) {
      rows = st.recorder->rows();
      for (std::size_t c = 0; c < st.recorder->columns(); ++c) {
        const Column& col = st.recorder->column_names()[c];
        columns.push_back(col.unit.empty() ? col.name : col.name + "_" + col.unit);
        if (rows > 0) {
          row.push_back(st.recorder->at(rows - 1, c));
        }
      }
    } else {
      rows = st.latest->get(row);
      columns = st.latest->columns();
    }
    out += fmt::format(R"(,"stream":"{}","rows":{})", json_escape(st.name), rows);
    if (rows > 0) {
      std::string names;
      std::string values;
      for (std::size_t c = 0; c < columns.size() && c < row.size(); ++c) {
        const std::string value = json_number(row[c]);
        if (out.size() + names.size() + values.size() + columns[c].size() + value.size() + 64 > kMaxTelemetryBytes) {
          break;
        }
        names += fmt::format(R"({}"{}")", c == 0 ? "" : ",", json_escape(columns[c]));
        values += fmt::format("{}{}", c == 0 ? "" : ",", value);
      }
      out += R"(,"columns":[)" + names + R"(],"values":[)" + values + "]";
    }
  }
  out += "}";
  // A node's own names (its figures, a long name) could still make it too long: its state goes out.
  return out.size() <= kMaxTelemetryBytes ? out : head;
}

void TelemetryPublisher::publish() {
  const std::size_t n = std::max<std::size_t>(streams_.size(), 1);
  for (std::size_t s = 0; s < n; ++s) {
    telemetry_frame::Header header{telemetry_frame::Kind::kTelemetry, run_, 0, {}};
    {
      const std::scoped_lock lock(state_mutex_);
      header.sequence = ++sequence_;
      header.echo = challenge_;
    }
    const std::string frame = telemetry_frame::seal(keys_.to_console, header, datagram(s));
    const std::uint64_t errors = socket_->link.counters().send_errors;
    socket_->link.send(std::as_bytes(std::span(frame.data(), frame.size())));
    if (socket_->link.counters().send_errors != errors) {
      send_errors_.fetch_add(1);
    } else {
      sent_.fetch_add(1);
    }
  }
}

void TelemetryPublisher::serve_requests() {
  std::array<std::byte, 1024> rx{};
  bool acknowledge = false;
  for (std::size_t n = 0; (n = socket_->link.receive(rx)) != 0;) {
    const std::string_view request(
        reinterpret_cast<const char*>(rx.data()),  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
        n);
    const auto opened = telemetry_frame::open(keys_.to_node, request);
    if (!opened || opened->header.run != run_) {
      refused_requests_.fetch_add(1);
      continue;
    }
    const telemetry_frame::Header& h = opened->header;
    {
      // The console's frames only in increasing order: a challenge or stop recorded on the path and
      // sent again (to make this run echo an old challenge, the console then dropping its frames) is
      // refused.
      const std::scoped_lock lock(state_mutex_);
      if (h.sequence <= console_sequence_) {
        refused_requests_.fetch_add(1);
        continue;
      }
      if (h.kind == telemetry_frame::Kind::kChallenge || h.kind == telemetry_frame::Kind::kStop) {
        console_sequence_ = h.sequence;
      }
    }
    if (h.kind == telemetry_frame::Kind::kChallenge) {
      const std::scoped_lock lock(state_mutex_);
      if (h.echo != challenge_) {
        previous_challenge_ = challenge_;
        challenge_ = h.echo;
      }
    } else if (h.kind == telemetry_frame::Kind::kStop) {
      bool fresh = false;
      {
        const std::scoped_lock lock(state_mutex_);
        // The console's challenge this run echoes: a stop that carries it was sealed for this run
        // by the console this publisher reports to.
        constexpr telemetry_frame::Challenge kNone{};
        fresh = h.echo != kNone && (h.echo == challenge_ || h.echo == previous_challenge_);
        if (fresh && h.sequence > stop_ack_) {
          stop_ack_ = h.sequence;
        }
      }
      if (!fresh) {
        refused_requests_.fetch_add(1);
        continue;
      }
      if (on_stop_) {
        on_stop_();
      }
      acknowledge = true;
    } else {
      refused_requests_.fetch_add(1);
    }
  }
  if (acknowledge) {
    publish();  // the acknowledgement at once, not a period later
  }
}

void TelemetryPublisher::loop() {
  const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(1.0 / options_.rate_hz));
  auto next = std::chrono::steady_clock::now();
  while (!done_.load()) {
    publish();
    next += period;
    // Wait for the next publication, answering the console's requests meanwhile.
    while (!done_.load()) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= next) {
        break;
      }
      const auto wait = std::min<std::chrono::steady_clock::duration>(next - now, std::chrono::milliseconds(20));
      socket_->link.wait_readable(std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count());
      serve_requests();
    }
    if (std::chrono::steady_clock::now() - next > 10 * period) {
      next = std::chrono::steady_clock::now();  // after a stall: no burst to catch up
    }
  }
}

}  // namespace rths
