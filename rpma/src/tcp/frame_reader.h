// Frame reader of a tcp connection: reads the socket into a 64 KiB
// buffer (or, for long payload remainders, straight into the payload's
// destination), splits the stream into frames, hands each header to the
// connection (its Sink) and places each payload where the connection
// said. It also keeps the RNR stash: while a request waits for a receive,
// later requests are kept, in order, with their payloads, so that the
// frames of the other direction (responses, CM) behind them still flow.
//
// Not thread-safe: guarded by the owning connection's mutex. The sink's
// callbacks run inside Process()/ReadOnce() and may call back into the
// reader (Expect, StopPlacing, Reset).
#ifndef RPMA_TCP_FRAME_READER_H_
#define RPMA_TCP_FRAME_READER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tcp/frame.h"

namespace rpma::prov::tcp {

class FrameReader {
 public:
  class Sink {
   public:
    virtual ~Sink() = default;
    // False: stop parsing headers (the connection closed, or it does not
    // take more requests now); payload bytes still flow.
    virtual bool Parsing() = 0;
    // False: the connection closed; the reader stops at once.
    virtual bool Alive() = 0;
    // How many more bytes the RNR stash may hold. At 0 the reader stops
    // consuming input (stash_full()) until Unblock() or DropStash().
    virtual size_t StashRoom() = 0;
    // A valid header (already consumed). The sink calls Expect() for its
    // payload. Returns false when the frame is a request that cannot run
    // yet (RNR): the reader keeps it and every later request until
    // Unblock().
    virtual bool OnHeader(const FrameHeader& h) = 0;
    // The payload announced through Expect() is complete.
    virtual void OnPayload() = 0;
    // An invalid header; the sink closes the connection.
    virtual void OnBadFrame(const char* why) = 0;
  };

  explicit FrameReader(Sink* sink);

  // The current frame's payload (len bytes) goes to dst; dst null = the
  // bytes are discarded. len 0 completes it at once (OnPayload).
  void Expect(uint8_t* dst, size_t len);
  // The rest of the current payload is discarded.
  void StopPlacing() { dst_ = nullptr; }
  bool in_payload() const { return in_payload_; }
  // Bytes read but not yet processed.
  bool buffered() const { return end_ > start_; }

  enum class Io { kMore, kDrained, kEof, kError };
  // One recv (or readv into the payload destination) from fd, then
  // Process(). kMore: the socket may hold more; kDrained: it had less than
  // asked (or nothing); kEof; kError with *err = errno.
  Io ReadOnce(int fd, int* err);
  // Parses and places what is buffered.
  void Process();

  // RNR. blocked(): a request waits for a receive. Unblock() puts the kept
  // requests back in front of the unread input (the caller processes
  // again); not while a payload is being placed (the unread input starts
  // mid-payload then). Returns false when it did nothing.
  bool blocked() const { return blocked_; }
  bool Unblock();
  size_t stash_bytes() const { return stash_.size(); }
  // The stash hit its bound: input is not consumed any more.
  bool stash_full() const { return stash_full_; }
  // Room came back (another connection released its share).
  void ClearStashFull() { stash_full_ = false; }
  // The blocked request failed (RNR retry exceeded): the kept requests
  // are forgotten, the rest of a partly kept one is skipped.
  void DropStash();

  // The connection closed: forget the frame in progress and the stash.
  void Reset();

 private:
  static constexpr size_t kBufSize = 64 * 1024;
  // An idle connection's buffer (a few small messages a second fit): it
  // grows to kBufSize the first time a read fills it, so 10,000 idle
  // connections cost 40 MiB, not 640.
  static constexpr size_t kInitialBufSize = 4 * 1024;
  // Payload remainders at least this long are read straight into their
  // destination (registered memory or a posted receive), not via buf_.
  static constexpr size_t kDirectMin = 4096;

  void Compact();

  Sink* const sink_;
  std::vector<uint8_t> buf_;
  size_t start_ = 0, end_ = 0;
  bool in_payload_ = false;
  uint8_t* dst_ = nullptr;
  size_t remaining_ = 0;
  bool blocked_ = false;
  std::vector<uint8_t> stash_;  // the blocked request and later ones
  size_t stash_payload_ = 0;    // payload bytes still to be stashed
  bool stash_full_ = false;
  size_t skip_ = 0;  // input bytes to discard (rest of a dropped frame)
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_FRAME_READER_H_
