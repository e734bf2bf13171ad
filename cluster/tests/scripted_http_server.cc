#include "scripted_http_server.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

namespace kv::cluster::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Reads one request (head, then Content-Length bytes); returns its body.
std::string ReadRequest(int fd) {
  std::string in;
  char buf[4096];
  size_t head_end = std::string::npos;
  size_t want = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    if (head_end == std::string::npos) {
      head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        size_t cl = in.find("Content-Length: ");
        want = cl == std::string::npos || cl > head_end
                   ? 0
                   : std::strtoul(in.c_str() + cl + 16, nullptr, 10);
      }
    }
    if (head_end != std::string::npos && in.size() >= head_end + 4 + want) {
      return in.substr(head_end + 4, want);
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  return in;
}

}  // namespace

std::string HttpReply(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

std::string HttpStream(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
         "Connection: close\r\n\r\n" +
         body;
}

ScriptedHttpServer::ScriptedHttpServer(std::vector<ScriptedReply> script)
    : script_(std::move(script)) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(listen_fd_, 16) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::abort();  // a test machine without loopback TCP
  }
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

ScriptedHttpServer::~ScriptedHttpServer() {
  stop_ = true;
  thread_.join();
  close(listen_fd_);
}

std::vector<std::string> ScriptedHttpServer::requests() const {
  std::lock_guard<std::mutex> l(mu_);
  return requests_;
}

void ScriptedHttpServer::Answer(int fd, const ScriptedReply& reply) {
  std::string body = ReadRequest(fd);
  {
    std::lock_guard<std::mutex> l(mu_);
    requests_.push_back(std::move(body));
  }
  size_t off = 0;
  while (off < reply.bytes.size()) {
    ssize_t n = send(fd, reply.bytes.data() + off, reply.bytes.size() - off,
                     MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  const auto until = Clock::now() + reply.hold;
  while (!stop_ && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void ScriptedHttpServer::Serve() {
  size_t next = 0;
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    int fd = accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    Answer(fd, script_[std::min(next, script_.size() - 1)]);
    ++next;
    close(fd);
  }
}

}  // namespace kv::cluster::testing
