// Output queue of a tcp connection; see out_queue.h.
#include "tcp/out_queue.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>

#include "tcp/tcp_mr.h"

namespace rpma::prov::tcp {
namespace {
const uint8_t kZeros[64 * 1024] = {};
}  // namespace

OutQueue::Frame& OutQueue::Add(Kind kind, const FrameHeader& h) {
  Frame& f = frames_.emplace_back();
  EncodeHeader(h, f.hdr);
  f.kind = kind;
  if (kind == Kind::kRequest) ++requests_;
  if (kind == Kind::kResponse) ++responses_;
  return f;
}

void OutQueue::Push(Kind kind, const FrameHeader& h, const void* payload,
                    size_t len, std::shared_ptr<MrEntry> mr) {
  Frame& f = Add(kind, h);
  f.payload = static_cast<const uint8_t*>(payload);
  f.payload_len = len;
  if (mr != nullptr) ++target_frames_;
  f.mr = std::move(mr);
}

void OutQueue::PushAck(const FrameHeader& h, bool anchor) {
  Frame& f = Add(Kind::kResponse, h);
  f.lazy = true;
  f.anchor = anchor;
  ++lazy_;
  if (anchor) ++anchors_;
}

void OutQueue::PushCopy(Kind kind, const FrameHeader& h, const void* payload,
                        size_t len) {
  Frame& f = Add(kind, h);
  const auto* p = static_cast<const uint8_t*>(payload);
  if (len > 0) f.own.assign(p, p + len);
  f.payload = f.own.data();
  f.payload_len = len;
}

void OutQueue::Pop() {
  Frame& f = frames_.front();
  if (f.kind == Kind::kRequest) --requests_;
  if (f.kind == Kind::kResponse) --responses_;
  if (f.mr != nullptr) --target_frames_;
  if (f.lazy) --lazy_;
  if (f.anchor) --anchors_;
  frames_.pop_front();
}

void OutQueue::WithdrawRequests() {
  std::deque<Frame> keep;
  for (Frame& f : frames_) {
    if (f.kind == Kind::kRequest && f.sent == 0) {
      --requests_;
      continue;
    }
    if (f.kind == Kind::kRequest) f.zero = true;
    keep.push_back(std::move(f));
  }
  frames_.swap(keep);
}

void OutQueue::Clear() {
  frames_.clear();
  requests_ = 0;
  responses_ = 0;
  target_frames_ = 0;
  lazy_ = 0;
  anchors_ = 0;
}

OutQueue::Result OutQueue::Write(int fd) {
  if (broken_) {
    Clear();
    return Result::kBroken;
  }
  constexpr int kMaxIov = 64;
  while (!frames_.empty()) {
    iovec iov[kMaxIov];
    int n = 0;
    size_t total = 0;
    for (const Frame& f : frames_) {
      if (n + 2 > kMaxIov) break;
      if (f.mr != nullptr && f.mr->dead) return Result::kDeadRegion;
      if (f.sent < kHeaderSize) {
        iov[n++] = {const_cast<uint8_t*>(f.hdr) + f.sent, kHeaderSize - f.sent};
        total += kHeaderSize - f.sent;
      }
      size_t off = f.sent > kHeaderSize ? f.sent - kHeaderSize : 0;
      size_t len = f.payload_len - off;
      if (len > 0 && f.zero) {
        // Filler for a withdrawn request: in chunks, and nothing after it
        // in this call (the chunk may not finish the frame).
        len = std::min(len, sizeof(kZeros));
        iov[n++] = {const_cast<uint8_t*>(kZeros), len};
        total += len;
        break;
      }
      if (len > 0) {
        iov[n++] = {const_cast<uint8_t*>(f.payload) + off, len};
        total += len;
      }
    }
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Result::kOk;
      // The reader sees the reset or EOF and tears the connection down.
      broken_ = true;
      Clear();
      return Result::kBroken;
    }
    bytes_written_ += static_cast<uint64_t>(w);
    size_t left = static_cast<size_t>(w);
    while (left > 0) {
      Frame& f = frames_.front();
      size_t rem = kHeaderSize + f.payload_len - f.sent;
      if (left >= rem) {
        left -= rem;
        Pop();
      } else {
        f.sent += left;
        left = 0;
      }
    }
    if (static_cast<size_t>(w) < total) break;
  }
  return Result::kOk;
}

}  // namespace rpma::prov::tcp
