// libFuzzer target: arbitrary bytes from an established peer into a tcp
// provider target. A process-wide target (Pd, listener, a registered
// region between two guard areas, an auto-accepting thread) serves one
// raw connection per input: hello, then the input, then EOF. It must not
// crash (ASan/UBSan), must not write outside the region, and must close
// the connection within a bounded time.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "provider/provider.h"
#include "tcp/frame.h"

using namespace rpma::prov;

namespace {

constexpr int kAll = kAccessLocalWrite | kAccessRemoteWrite |
                     kAccessRemoteRead | kAccessFlushVisibility |
                     kAccessFlushPersistent;

struct Target {
  std::unique_ptr<Pd> pd;
  std::unique_ptr<CmChannel> lch, ch;
  std::unique_ptr<Cq> cq;
  std::unique_ptr<Listener> listener;
  std::vector<uint8_t> mem = std::vector<uint8_t>(3 * 4096, 0xab);
  std::unique_ptr<Mr> mr;
  std::vector<uint8_t> rbufs = std::vector<uint8_t>(4 * 256);
  int port = 0;
  std::thread acceptor;

  bool Start() {
    Device* dev = nullptr;
    if (TcpGetDevice("127.0.0.1", true, &dev) != 0 || dev->AllocPd(&pd) != 0 ||
        pd->CreateCmChannel(&lch) != 0 || pd->CreateCmChannel(&ch) != 0 ||
        pd->CreateCq(1 << 16, nullptr, &cq) != 0 ||
        pd->RegMr(mem.data() + 4096, 4096, kAll, &mr) != 0) {
      return false;
    }
    for (int i = 0; i < 200 && listener == nullptr; ++i) {
      port = 20000 + (getpid() * 13 + i * 7) % 10000;
      pd->Listen("127.0.0.1", std::to_string(port).c_str(), lch.get(),
                 &listener);
    }
    if (listener == nullptr) return false;
    acceptor = std::thread([this] { Accept(); });
    acceptor.detach();  // lives as long as the fuzzing process
    return true;
  }

  void Accept() {
    std::deque<std::unique_ptr<CmId>> ids;
    for (;;) {
      CmEvent ev;
      if (lch->GetEvent(&ev) != 0 || ev.new_id == nullptr) continue;
      QpInit init;
      init.send_cq = cq.get();
      init.recv_cq = cq.get();
      init.sq_size = 16;
      init.rq_size = 4;
      if (ev.new_id->CreateQp(init) != 0 || ev.new_id->Migrate(ch.get()) != 0) {
        continue;
      }
      for (int i = 0; i < 4; ++i) {
        RecvWr r;
        r.sge = {rbufs.data() + 256 * i, 256, 0};
        ev.new_id->qp()->PostRecv(r);
      }
      ev.new_id->Accept(nullptr, 0);
      ids.push_back(std::move(ev.new_id));
      while (ids.size() > 8) ids.pop_front();
      ibv_wc wc[64];
      while (cq->Poll(64, wc) > 0) {
      }
    }
  }
};

Target* g_target = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_target = new Target();
  if (!g_target->Start()) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(g_target->port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    std::abort();
  }
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  tcp::FrameHeader h;
  h.type = tcp::kFrameHello;
  h.addr = tcp::kHelloMagic;
  h.value = tcp::kProtocolVersion;
  uint8_t hello[tcp::kHeaderSize];
  tcp::EncodeHeader(h, hello);
  send(fd, hello, sizeof(hello), MSG_NOSIGNAL);
  // Addresses in the input are relative to the region, so the fuzzer can
  // reach it: the first 8 input bytes (if any) are ignored, every 8-byte
  // little-endian word at offset 8 of a 32-byte header gets the base added.
  std::vector<uint8_t> in(data, data + size);
  uint64_t base = reinterpret_cast<uint64_t>(g_target->mem.data() + 4096);
  for (size_t off = 0; off + tcp::kHeaderSize <= in.size();
       off += tcp::kHeaderSize) {
    uint64_t v;
    std::memcpy(&v, &in[off + 8], 8);
    v += base;
    std::memcpy(&in[off + 8], &v, 8);
    if (in[off] >= 16 && in[off] <= 20) {  // use the real key half the time
      if (in[off + 17] & 1) {
        uint32_t k = g_target->mr->rkey();
        std::memcpy(&in[off + 16], &k, 4);
      }
    }
  }
  send(fd, in.data(), in.size(), MSG_NOSIGNAL);
  shutdown(fd, SHUT_WR);
  char buf[4096];
  for (;;) {  // until the target closes (bounded by SO_RCVTIMEO)
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) std::abort();  // hung
      break;
    }
  }
  close(fd);
  for (size_t i = 0; i < 4096; ++i) {
    if (g_target->mem[i] != 0xab || g_target->mem[8192 + i] != 0xab) {
      std::abort();  // wrote outside the registered region
    }
  }
  return 0;
}
