// rths-console's web server as a browser meets it: the token it demands and what it refuses to start
// with. (The page itself, live and in replay, is tests/console/console_e2e.mjs.)
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <string>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include "process.hpp"
#include "rths/common/address.hpp"
#include "rths/common/exit_codes.hpp"

namespace rths {
namespace {

const std::string kToken = "0123456789abcdef0123";

// One HTTP/1.1 request's status code from host:port ("" request headers beyond Host).
int http_status(const std::string& address, const std::string& target, const std::string& headers = "",
                const std::string& method = "GET") {
  const HostPort at = parse_host_port(address);
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  asio::ip::tcp::resolver resolver(io);
  asio::connect(socket, resolver.resolve(at.host, std::to_string(at.port)));
  const std::string request =
      method + " " + target + " HTTP/1.1\r\nHost: " + address + "\r\n" + headers + "Connection: close\r\n\r\n";
  asio::write(socket, asio::buffer(request));
  std::string response;
  asio::error_code ec;
  std::array<char, 4096> buffer{};
  while (const std::size_t n = socket.read_some(asio::buffer(buffer), ec)) {
    response.append(buffer.data(), n);
    if (ec) break;
  }
  return response.starts_with("HTTP/1.1 ") ? std::stoi(response.substr(9, 3)) : -1;
}

class ConsoleServer : public test::RunFolderTest {};

TEST_F(ConsoleServer, WithATokenEveryRequestMustCarryIt) {
  test::Process console("rths-console", {"--listen", "127.0.0.1:0", "--telemetry", "127.0.0.1:0", "--token", kToken},
                        dir_ / "console");
  std::string page = console.wait_for_line("serving http://", std::chrono::seconds(10));
  ASSERT_FALSE(page.empty()) << console.err();
  page = page.substr(0, page.find('/'));
  EXPECT_EQ(http_status(page, "/api/mode"), 403);
  EXPECT_EQ(http_status(page, "/"), 403);
  EXPECT_EQ(http_status(page, "/api/mode?token=" + kToken.substr(1)), 403);
  EXPECT_EQ(http_status(page, "/api/mode?token=" + kToken), 200);
  EXPECT_EQ(http_status(page, "/", "X-Rths-Token: " + kToken + "\r\n"), 200);
  // The stop request is a POST with its own header; a GET, or a POST a cross-site form could send,
  // stops nothing, even with the token.
  EXPECT_EQ(http_status(page, "/api/stop?token=" + kToken), 405);
  EXPECT_EQ(http_status(page, "/api/stop?token=" + kToken, "Content-Length: 0\r\n", "POST"), 403);
  EXPECT_EQ(http_status(page, "/api/stop?token=" + kToken, "Content-Length: 0\r\nX-Rths-Request: stop\r\n", "POST"),
            200);
  console.signal(SIGINT);
  EXPECT_EQ(console.wait(std::chrono::seconds(10)), kExitCompleted) << console.err();
}

TEST_F(ConsoleServer, ALoopbackPageWithoutATokenIsServedAndUnknownPathsAreNot) {
  test::Process console("rths-console", {"--listen", "127.0.0.1:0", "--telemetry", "127.0.0.1:0"}, dir_ / "console");
  std::string page = console.wait_for_line("serving http://", std::chrono::seconds(10));
  ASSERT_FALSE(page.empty()) << console.err();
  page = page.substr(0, page.find('/'));
  EXPECT_EQ(http_status(page, "/api/mode"), 200);
  EXPECT_EQ(http_status(page, "/uplot/uPlot.iife.min.js"), 200);
  EXPECT_EQ(http_status(page, "/../CMakeLists.txt"), 404);
  EXPECT_EQ(http_status(page, "/run/numerical.csv"), 404);  // not a replay
  console.signal(SIGINT);
  EXPECT_EQ(console.wait(std::chrono::seconds(10)), kExitCompleted) << console.err();
}

TEST_F(ConsoleServer, ARefusedStartIsExitCodeTwoWithOneLineNamingTheOption) {
  const struct {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"--listen", "0.0.0.0:0"}, "--listen 0.0.0.0:0: a console other machines can reach needs --token"},
      {{"--token", "short"}, "--token: expected a secret of at least 16 characters"},
      {{"--replay", (dir_ / "nothing").string()}, "not a run folder"},
      {{"--web", dir_.string()}, "no index.html there"},
  };
  int i = 0;
  for (const auto& c : cases) {
    test::Process console("rths-console", c.args, dir_ / ("refused" + std::to_string(i++)));
    EXPECT_EQ(console.wait(std::chrono::seconds(10)), kExitBadInput) << c.says;
    EXPECT_NE(console.err().find(c.says), std::string::npos) << console.err();
  }
}

}  // namespace
}  // namespace rths
