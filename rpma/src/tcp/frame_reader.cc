// Frame reader of a tcp connection; see frame_reader.h.
#include "tcp/frame_reader.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rpma::prov::tcp {
namespace {

bool IsRequest(uint8_t type) {
  return type >= kFrameWrite && type < kFrameResp;
}

}  // namespace

FrameReader::FrameReader(Sink* sink) : sink_(sink), buf_(kInitialBufSize) {}

void FrameReader::Expect(uint8_t* dst, size_t len) {
  dst_ = dst;
  remaining_ = len;
  in_payload_ = len > 0;
  if (len == 0) {
    dst_ = nullptr;
    sink_->OnPayload();
  }
}

void FrameReader::Reset() {
  in_payload_ = false;
  dst_ = nullptr;
  remaining_ = 0;
  blocked_ = false;
  stash_.clear();
  stash_.shrink_to_fit();
  stash_payload_ = 0;
  stash_full_ = false;
  skip_ = 0;
}

void FrameReader::DropStash() {
  blocked_ = false;
  stash_full_ = false;
  stash_.clear();
  stash_.shrink_to_fit();
  skip_ = stash_payload_;
  stash_payload_ = 0;
}

bool FrameReader::Unblock() {
  if (!blocked_ || in_payload_) return false;
  blocked_ = false;
  stash_full_ = false;
  std::vector<uint8_t> merged = std::move(stash_);
  stash_.clear();
  stash_payload_ = 0;
  merged.insert(merged.end(), buf_.data() + start_, buf_.data() + end_);
  size_t n = merged.size();
  if (merged.size() < kBufSize) merged.resize(kBufSize);
  buf_ = std::move(merged);
  start_ = 0;
  end_ = n;
  return true;
}

void FrameReader::Compact() {
  if (start_ == end_) {
    start_ = end_ = 0;
    if (buf_.size() > kBufSize) {  // grown by an unstash
      buf_.resize(kBufSize);
      buf_.shrink_to_fit();
    }
  } else if (start_ > 0 || end_ == buf_.size()) {
    std::memmove(buf_.data(), buf_.data() + start_, end_ - start_);
    end_ -= start_;
    start_ = 0;
  }
}

FrameReader::Io FrameReader::ReadOnce(int fd, int* err) {
  ssize_t n;
  size_t asked;
  if (in_payload_ && dst_ != nullptr && remaining_ >= kDirectMin &&
      start_ == end_) {
    // Scatter: the rest of the payload lands in place, whatever follows it
    // lands in buf_.
    start_ = end_ = 0;
    iovec iov[2] = {{dst_, remaining_}, {buf_.data(), buf_.size()}};
    asked = remaining_ + buf_.size();
    n = readv(fd, iov, 2);
    if (n > 0) {
      size_t d = std::min(static_cast<size_t>(n), remaining_);
      dst_ += d;
      remaining_ -= d;
      end_ = static_cast<size_t>(n) - d;
      if (remaining_ == 0) {
        in_payload_ = false;
        dst_ = nullptr;
        sink_->OnPayload();
      }
    }
  } else {
    Compact();
    asked = buf_.size() - end_;
    if (asked == 0) return Io::kDrained;
    n = recv(fd, buf_.data() + end_, asked, 0);
    if (n > 0) end_ += static_cast<size_t>(n);
    // A full read: this connection is busy, give it the large buffer.
    if (n > 0 && static_cast<size_t>(n) == asked && buf_.size() < kBufSize) {
      buf_.resize(kBufSize);
    }
  }
  if (n == 0) return Io::kEof;
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      return Io::kDrained;
    }
    *err = errno;
    return Io::kError;
  }
  Process();
  return static_cast<size_t>(n) < asked ? Io::kDrained : Io::kMore;
}

void FrameReader::Process() {
  while (sink_->Alive()) {
    size_t avail = end_ - start_;
    if (skip_ > 0) {
      size_t take = std::min(avail, skip_);
      if (take == 0) return;
      start_ += take;
      skip_ -= take;
    } else if (stash_payload_ > 0) {
      size_t room = sink_->StashRoom();
      if (room == 0) {
        stash_full_ = true;
        return;
      }
      size_t take = std::min({avail, stash_payload_, room});
      if (take == 0) return;
      const uint8_t* p = buf_.data() + start_;
      stash_.insert(stash_.end(), p, p + take);
      start_ += take;
      stash_payload_ -= take;
    } else if (!in_payload_) {
      if (!sink_->Parsing()) return;  // resumed by the connection
      FrameHeader h;
      const char* why = "";
      uint8_t raw[kHeaderSize];
      ParseResult r = ParseHeader(buf_.data() + start_, avail, &h, &why);
      if (r == ParseResult::kNeedMore) return;
      if (r == ParseResult::kBad) {
        sink_->OnBadFrame(why);
        return;
      }
      if (blocked_ && IsRequest(h.type) && sink_->StashRoom() < kHeaderSize) {
        stash_full_ = true;  // the header stays unread
        return;
      }
      std::memcpy(raw, buf_.data() + start_, kHeaderSize);
      start_ += kHeaderSize;
      if (blocked_ && IsRequest(h.type)) {
        // RC order: behind the blocked request. Responses and CM frames
        // (the other direction) still go through.
        stash_.insert(stash_.end(), raw, raw + kHeaderSize);
        stash_payload_ = h.length;
        continue;
      }
      // The header is consumed before its handler runs so that a
      // zero-length payload can complete inside it.
      if (!sink_->OnHeader(h)) {
        // RNR: no receive. Retried first when one is posted.
        blocked_ = true;
        stash_.assign(raw, raw + kHeaderSize);
        stash_payload_ = h.length;
      }
    } else {
      size_t take = std::min(avail, remaining_);
      if (take == 0) return;
      if (dst_ != nullptr) {
        std::memcpy(dst_, buf_.data() + start_, take);
        dst_ += take;
      }
      start_ += take;
      remaining_ -= take;
      if (remaining_ == 0) {
        in_payload_ = false;
        dst_ = nullptr;
        sink_->OnPayload();
      }
    }
  }
}

}  // namespace rpma::prov::tcp
