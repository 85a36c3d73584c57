#include "rths/common/telemetry.hpp"

#include <array>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>
#include <sodium.h>
#include <asio/io_context.hpp>

#include "rths/common/address.hpp"
#include "rths/common/recorder.hpp"
#include "rths/common/udp_link.hpp"

namespace rths {

namespace {

// A datagram stays under the common path MTU's worth of fragments; columns past it are left out
// (a model with hundreds of degrees of freedom shows its first ones; its CSV has them all).
constexpr std::size_t kMaxTelemetryBytes = 8192;

std::string json_number(double v) {
  return std::isfinite(v) ? fmt::format("{:.9g}", v) : std::string("null");  // JSON has no NaN: null shows it
}

std::string random_token() {
  if (sodium_init() < 0) {
    throw std::runtime_error("libsodium could not initialise");
  }
  std::array<unsigned char, 16> bytes{};
  randombytes_buf(bytes.data(), bytes.size());
  std::string hex;
  for (const unsigned char b : bytes) {
    hex += fmt::format("{:02x}", b);
  }
  return hex;
}

}  // namespace

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
    : node_(std::move(node)), options_(std::move(options)), token_(random_token()) {
  if (!(options_.rate_hz > 0.0 && options_.rate_hz <= 1000.0)) {
    throw std::invalid_argument(
        fmt::format("telemetry rate {} Hz: expected more than 0 and at most 1000 Hz", options_.rate_hz));
  }
  const HostPort console = parse_host_port(options_.console);
  if (console.port == 0) {
    throw std::invalid_argument("console address " + options_.console + ": needs a port other than 0");
  }
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
  streams_.push_back(Stream{std::move(name), &recorder, nullptr});
}

void TelemetryPublisher::add_stream(std::string name, const LatestRow& latest) {
  streams_.push_back(Stream{std::move(name), nullptr, &latest});
}

void TelemetryPublisher::add_figure(std::string name, std::function<double()> read) {
  figures_.emplace_back(std::move(name), std::move(read));
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
  {
    const std::scoped_lock lock(state_mutex_);
    state = node_state_name(state_);
    reason = reason_;
  }
  std::string out = fmt::format(R"({{"node":"{}","token":"{}","state":"{}","reason":"{}","sent":{})",
                                json_escape(node_), token_, state, json_escape(reason), sent_.load());
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
  return out;
}

void TelemetryPublisher::publish() {
  const std::size_t n = std::max<std::size_t>(streams_.size(), 1);
  for (std::size_t s = 0; s < n; ++s) {
    const std::string text = datagram(s);
    const std::uint64_t errors = socket_->link.counters().send_errors;
    socket_->link.send(std::as_bytes(std::span(text.data(), text.size())));
    if (socket_->link.counters().send_errors != errors) {
      send_errors_.fetch_add(1);
    } else {
      sent_.fetch_add(1);
    }
  }
}

void TelemetryPublisher::serve_requests() {
  std::array<std::byte, 512> rx{};
  for (std::size_t n = 0; (n = socket_->link.receive(rx)) != 0;) {
    const std::string_view request(
        reinterpret_cast<const char*>(rx.data()),  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
        n);
    if (request == fmt::format(R"({{"stop":"{}"}})", token_) && on_stop_) {
      on_stop_();
    }
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
