// What the tests of rths-console share: one HTTP request and its answer, the Stop request's headers,
// and the fixture that starts a console on free ports with a key of its own.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include "common/core/address.hpp"
#include "common/core/exit_codes.hpp"
#include "common/protocol/secret_key.hpp"
#include "support/process.hpp"

namespace rths::test {

struct Response {
  int status = -1;  // -1: no answer within the time given
  std::string head;
  std::string body;
  double seconds = 0.0;
  [[nodiscard]] bool has_header(const std::string& line) const { return head.find(line) != std::string::npos; }
};

// One HTTP/1.1 request to host:port, its answer within timeout. host_header: "" for the address.
inline Response http(const std::string& address, const std::string& target, const std::string& headers = "",
                     const std::string& method = "GET", std::chrono::milliseconds timeout = std::chrono::seconds(10),
                     const std::string& host_header = "") {
  const HostPort at = parse_host_port(address);
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  const auto began = std::chrono::steady_clock::now();
  socket.connect({asio::ip::make_address(at.host), at.port});
  const std::string request = method + " " + target +
                              " HTTP/1.1\r\nHost: " + (host_header.empty() ? address : host_header) + "\r\n" + headers +
                              "Connection: close\r\n\r\n";
  asio::write(socket, asio::buffer(request));
  std::string raw;
  std::array<char, 4096> buffer{};
  std::function<void(const asio::error_code&, std::size_t)> on_read = [&](const asio::error_code& ec, std::size_t n) {
    raw.append(buffer.data(), n);
    if (!ec) socket.async_read_some(asio::buffer(buffer), on_read);
  };
  socket.async_read_some(asio::buffer(buffer), on_read);
  io.run_for(timeout);
  Response r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  const auto end = raw.find("\r\n\r\n");
  if (raw.starts_with("HTTP/1.1 ") && end != std::string::npos) {
    r.status = std::stoi(raw.substr(9, 3));
    r.head = raw.substr(0, end);
    r.body = raw.substr(end + 4);
  }
  return r;
}

inline const std::string kStop = "Content-Length: 0\r\nX-Rths-Request: stop\r\n";

class ConsoleServer : public RunFolderTest {
 protected:
  void SetUp() override {
    RunFolderTest::SetUp();
    key_ = dir_ / "console.key";
    write_key_file(key_);
  }
  // rths-console on free ports with the test's key and extra options; page_ and telemetry_ set.
  std::unique_ptr<Process> start_console(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--listen", "127.0.0.1:0", "--telemetry", "127.0.0.1:0", "--key", key_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto console = std::make_unique<Process>("rths-console", args, dir_ / "console");
    page_ = console->wait_for_line("serving http://", std::chrono::seconds(10));
    telemetry_ = console->wait_for_line("telemetry on ", std::chrono::seconds(10));
    EXPECT_FALSE(page_.empty()) << console->err();
    page_ = page_.substr(0, page_.find('/'));
    return console;
  }
  void stop_console(Process& console) {
    console.signal(SIGINT);
    EXPECT_EQ(console.wait(std::chrono::seconds(10)), kExitCompleted) << console.err();
  }
  std::filesystem::path key_;
  std::string page_;
  std::string telemetry_;
};

}  // namespace rths::test
