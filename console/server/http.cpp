#include "console/server/http.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <sodium.h>
#include <spdlog/spdlog.h>
#include <asio/read_until.hpp>
#include <asio/write.hpp>

#include "common/records/telemetry.hpp"

namespace rths::console {

namespace {

using asio::ip::tcp;

constexpr auto kHeartbeatEvery = std::chrono::seconds(2);

// Every answer says: no script but the console's own files, no frames, no other origins.
constexpr std::string_view kSecurityHeaders =
    "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n"
    "X-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\nReferrer-Policy: no-referrer\r\n"
    "Cache-Control: no-store\r\n";

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Error";
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) != 0 &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2])) != 0) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i] == '+' ? ' ' : s[i]);
    }
  }
  return out;
}

}  // namespace

std::string json_string(std::string_view s) {
  return "\"" + json_escape(s) + "\"";
}

bool host_allowed(std::string_view host, const std::vector<std::string>& allowed) {
  std::string name(host);
  asio::error_code ec;
  if (!name.empty() && name.front() == '[') {
    const auto close = name.find(']');
    if (close == std::string::npos) return false;
    asio::ip::make_address_v6(name.substr(1, close - 1), ec);
    return !ec;
  }
  if (const auto colon = name.rfind(':'); colon != std::string::npos) {
    name.resize(colon);
  }
  name = lower(name);
  if (name == "localhost") return true;
  asio::ip::make_address_v4(name, ec);
  if (!ec) return true;
  return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) { return lower(a) == name; });
}

std::string query_value(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) == name && eq != std::string_view::npos) {
      return percent_decoded(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

bool same_secret(const std::string& given, const std::string& token) {
  return given.size() == token.size() && sodium_memcmp(given.data(), token.data(), token.size()) == 0;
}

std::optional<Request> parse_head(std::string_view head) {
  Request r;
  const auto line_end = head.find("\r\n");
  std::istringstream first(std::string(head.substr(0, line_end)));
  std::string target;
  std::string version;
  if (!(first >> r.method >> target >> version) || !version.starts_with("HTTP/1.") || target.empty() ||
      target.front() != '/') {
    return std::nullopt;
  }
  const auto q = target.find('?');
  r.path = target.substr(0, q);
  r.query = q == std::string::npos ? "" : target.substr(q + 1);
  std::size_t at = line_end + 2;
  while (at < head.size()) {
    const auto end = head.find("\r\n", at);
    const std::string_view line = head.substr(at, end - at);
    at = end == std::string_view::npos ? head.size() : end + 2;
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    std::string name = lower(std::string(line.substr(0, colon)));
    std::string value(line.substr(colon + 1));
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t") + 1);
    if (r.headers.contains(name)) {
      if (name == "host") return std::nullopt;
      continue;
    }
    r.headers.emplace(std::move(name), std::move(value));
  }
  return r;
}

Connection::Connection(ConnectionOwner& owner, asio::ip::tcp::socket socket, std::string client)
    : owner_(owner),
      socket_(std::move(socket)),
      head_(kMaxHeadBytes),
      timer_(socket_.get_executor()),
      client_(std::move(client)),
      opened_(Clock::now()) {}

Connection::~Connection() {
  if (file_ >= 0) ::close(file_);
}

void Connection::start() {
  timer_.expires_after(owner_.options().request_timeout);
  timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (!ec && self->phase_ == Phase::kReading) {
      self->close();  // a request's head that never ends (slowloris) holds nothing for longer
    }
  });
  asio::async_read_until(
      socket_, head_, "\r\n\r\n",
      [self = shared_from_this()](const asio::error_code& ec, std::size_t n) { self->on_head(ec, n); });
}

void Connection::close() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  asio::error_code ignored;
  timer_.cancel();
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  owner_.forget(shared_from_this());
}

void Connection::on_head(const asio::error_code& ec, std::size_t n) {
  if (phase_ != Phase::kReading) return;
  timer_.cancel();
  if (ec == asio::error::not_found) {
    respond(431, "text/plain", "request head over 8 KiB\n");
    return;
  }
  if (ec) {
    close();
    return;
  }
  const std::string_view head(static_cast<const char*>(head_.data().data()), n);
  const auto request = parse_head(head);
  if (!request) {
    respond(400, "text/plain", "not an HTTP/1.x request\n");
    return;
  }
  owner_.handle(shared_from_this(), *request);
}

void Connection::respond(int status, std::string_view type, std::string_view body) {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kResponding;
  out_ = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n", status,
                     reason_phrase(status), type, body.size(), kSecurityHeaders);
  out_ += body;
  write_then_close();
}

void Connection::write_then_close() {
  timer_.expires_after(owner_.options().write_timeout);
  timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (!ec) self->close();  // a client that does not take its answer
  });
  asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
    if (ec || self->file_ < 0) {
      self->close();
    } else {
      self->next_chunk();
    }
  });
}

void Connection::send_file(const std::filesystem::path& file, std::string_view type) {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kResponding;
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) ::close(fd);
    respond(404, "text/plain", "no such record in the run folder\n");
    return;
  }
  file_ = fd;
  out_ = fmt::format("HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n", type,
                     st.st_size, kSecurityHeaders);
  write_then_close();
}

void Connection::next_chunk() {
  out_.resize(1U << 16U);
  const ssize_t n = ::read(file_, out_.data(), out_.size());
  out_.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  if (out_.empty()) {
    close();
    return;
  }
  write_then_close();
}

void Connection::stream(const std::string& first_events) {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kStreaming;
  timer_.cancel();
  pending_ = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n" +
             std::string(kSecurityHeaders) + "\r\nretry: 1000\n\n" + first_events;
  flush(Clock::now());
  watch_peer();
}

void Connection::watch_peer() {
  socket_.async_read_some(asio::buffer(peer_bytes_),
                          [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
                            if (ec) {
                              self->close();  // the page went away
                            } else if (self->phase_ == Phase::kStreaming) {
                              self->watch_peer();
                            }
                          });
}

void Connection::push(std::string_view event) {
  if (phase_ != Phase::kStreaming) return;
  if (pending_.size() + event.size() > kMaxStreamBacklog) {
    spdlog::warn("event stream to {}: its client fell {} KiB behind; closed (the page reconnects)", client_,
                 pending_.size() / 1024);
    close();
    return;
  }
  pending_ += event;
}

void Connection::flush(Clock::time_point now) {
  if (phase_ != Phase::kStreaming) return;
  if (writing_) {
    if (now - write_started_ > owner_.options().write_timeout) {
      close();  // a client that stopped reading
    }
    return;
  }
  if (pending_.empty()) {
    if (now - last_write_ < kHeartbeatEvery) return;
    pending_ = ": still here\n\n";  // a comment: tells a dead client from a quiet test
  }
  out_.swap(pending_);
  pending_.clear();
  writing_ = true;
  write_started_ = now;
  asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
    self->writing_ = false;
    self->last_write_ = Clock::now();
    if (ec) self->close();
  });
}

void Connection::answer_when(std::function<bool()> done, Clock::time_point until, std::function<void()> answer) {
  phase_ = Phase::kResponding;
  if (done() || Clock::now() >= until) {
    answer();
    return;
  }
  timer_.expires_after(std::chrono::milliseconds(5));
  timer_.async_wait([self = shared_from_this(), done = std::move(done), until,
                     answer = std::move(answer)](const asio::error_code& ec) mutable {
    if (!ec && self->phase_ == Phase::kResponding) {
      self->answer_when(std::move(done), until, std::move(answer));
    }
  });
}

}  // namespace rths::console
