// The remote floor (rpma_mr_advance, Mr::RaiseRemoteFloor) against a write
// already in flight: a raw client sends a write's header and the first
// half of its payload, the floor is raised above the write's start once
// that half has landed, then the rest is sent. The rest must never land
// and the write must be answered with a remote access error
// (TcpTarget::CheckDestination; the lock argument is in tcp_mr.h).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "tcp/access_penalty.h"
#include "tcp/frame.h"
#include "tcp_test_util.h"

namespace rpma::prov::tcp_test {
namespace {

using tcp::FrameHeader;
using tcp::kHeaderSize;

constexpr int kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;

int RawConnect(const std::string& port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{8, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

bool SendAll(int fd, const void* p, size_t n) {
  return send(fd, p, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
}

bool SendHeader(int fd, const FrameHeader& h) {
  uint8_t b[kHeaderSize];
  tcp::EncodeHeader(h, b);
  return SendAll(fd, b, sizeof(b));
}

bool ReadHeader(int fd, FrameHeader* h) {
  uint8_t b[kHeaderSize];
  size_t got = 0;
  while (got < kHeaderSize) {
    ssize_t n = recv(fd, b + got, kHeaderSize - got, 0);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  const char* why = nullptr;
  return tcp::ParseHeader(b, kHeaderSize, h, &why) == tcp::ParseResult::kOk;
}

TEST(TcpFloorTest, RaisingTheFloorStopsAWriteInFlight) {
  tcp::AccessPenalty::Global().Clear();
  Pair p;
  p.Listen();
  constexpr size_t kHalf = 64 * 1024;
  std::vector<uint8_t> target(4 * kHalf, 0x11);
  std::unique_ptr<Mr> tmr;
  ASSERT_EQ(p.server.pd->RegMr(target.data(), target.size(), kAll, &tmr), 0);
  int fd = RawConnect(p.port);
  ASSERT_GE(fd, 0);
  FrameHeader hello;
  hello.type = tcp::kFrameHello;
  hello.addr = tcp::kHelloMagic;
  hello.value = tcp::kProtocolVersion;
  ASSERT_TRUE(SendHeader(fd, hello));
  CmEvent req;
  ASSERT_TRUE(NextEvent(p.listen_ch.get(), &req));
  p.server.id = std::move(req.new_id);
  ASSERT_EQ(p.server.MakeQp(), 0);
  ASSERT_EQ(p.server.id->Migrate(p.server.ch.get()), 0);
  ASSERT_EQ(p.server.id->Accept(nullptr, 0), 0);
  FrameHeader h;
  ASSERT_TRUE(ReadHeader(fd, &h));
  ASSERT_EQ(h.type, tcp::kFrameHelloAck);
  ASSERT_TRUE(ReadHeader(fd, &h));
  ASSERT_EQ(h.type, tcp::kFrameAccept);

  // A 128 KiB write at offset 0; its first half goes out now.
  FrameHeader w;
  w.type = tcp::kFrameWrite;
  w.addr = reinterpret_cast<uint64_t>(target.data());
  w.rkey = tmr->rkey();
  w.length = 2 * kHalf;
  std::vector<uint8_t> payload(2 * kHalf, 0xee);
  ASSERT_TRUE(SendHeader(fd, w));
  ASSERT_TRUE(SendAll(fd, payload.data(), kHalf));
  // Wait (bounded) until the first half has been placed.
  for (int i = 0; i < 500 && target[kHalf - 1] != 0xee; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(target[kHalf - 1], 0xee) << "the first half never landed";
  // The floor goes above the write's start while it is in flight.
  ASSERT_EQ(tmr->RaiseRemoteFloor(4 * kHalf), 0);
  ASSERT_TRUE(SendAll(fd, payload.data() + kHalf, kHalf));
  ASSERT_TRUE(ReadHeader(fd, &h));
  EXPECT_EQ(h.type, tcp::kFrameResp);
  EXPECT_EQ(h.value, tcp::kRespRemoteAccess);
  // Nothing of the second half landed; beyond the write nothing changed.
  EXPECT_EQ(std::count(target.begin() + kHalf, target.end(), 0x11),
            static_cast<long>(3 * kHalf));
  close(fd);
}

}  // namespace
}  // namespace rpma::prov::tcp_test
