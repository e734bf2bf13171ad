// Output queue of a tcp connection: frames waiting to be written, sent in
// batches with one sendmsg, and the withdrawal of our own requests when
// the QP fails.
//
// Not thread-safe: guarded by the owning connection's mutex. Frames that
// reference target memory (READ responses) must be written with
// MrTable::mu() held shared (the connection takes it); a frame whose
// region died meanwhile makes Write() return kDeadRegion without touching
// the memory.
#ifndef RPMA_TCP_OUT_QUEUE_H_
#define RPMA_TCP_OUT_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "tcp/frame.h"

namespace rpma::prov::tcp {

struct MrEntry;

class OutQueue {
 public:
  enum class Kind {
    kControl,   // CM frames
    kRequest,   // our request: its payload is the WR's buffer
    kResponse,  // a response to the peer (a READ's data is sent from
                // registered memory `mr`)
  };

  // Queues a frame whose payload (len bytes) is sent from `payload`
  // directly; it must stay valid until the frame is written or withdrawn.
  // `mr` is set for a READ response.
  void Push(Kind kind, const FrameHeader& h, const void* payload, size_t len,
            std::shared_ptr<MrEntry> mr = nullptr);
  // Queues a response without payload that may wait for the next frame
  // (a delayed acknowledgement, tcp_conn.h); `anchor`: it answers a
  // message, so a reply is likely to follow.
  void PushAck(const FrameHeader& h, bool anchor);
  // Queues a frame with a copy of its payload.
  void PushCopy(Kind kind, const FrameHeader& h, const void* payload,
                size_t len);

  // The QP failed: our requests not yet sent are dropped (their buffers are
  // the application's again) and the unsent rest of a partly sent one goes
  // out as zeros (the frame must end where its header says).
  void WithdrawRequests();

  enum class Result {
    kOk,          // everything written, or the socket is full (try later)
    kBroken,      // the socket failed: the queue is empty from now on
    kDeadRegion,  // a READ response's region was deregistered
  };
  // Writes as much as the socket takes (scatter/gather, 64 iovecs per
  // call). Once broken, drops everything pushed.
  Result Write(int fd);

  void Clear();
  bool empty() const { return frames_.empty(); }
  size_t size() const { return frames_.size(); }
  // Our requests still (partly) queued.
  size_t requests() const { return requests_; }
  // Frames referencing target memory (writing them needs MrTable::mu()).
  bool has_target_memory() const { return target_frames_ > 0; }
  // Responses queued for the peer, and the memory they hold.
  size_t responses() const { return responses_; }
  size_t response_bytes() const { return responses_ * sizeof(Frame); }
  // Nothing queued but unsent delayable acknowledgements, one of them an
  // anchor.
  bool acks_only() const {
    return anchors_ > 0 && lazy_ == frames_.size() && frames_.front().sent == 0;
  }
  // Bytes written so far (progress of a peer that reads).
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  struct Frame {
    uint8_t hdr[kHeaderSize];
    Kind kind = Kind::kControl;
    const uint8_t* payload = nullptr;
    size_t payload_len = 0;
    size_t sent = 0;
    std::shared_ptr<MrEntry> mr;
    std::vector<uint8_t> own;
    bool zero = false;    // withdrawn: the unsent payload goes as zeros
    bool lazy = false;    // PushAck
    bool anchor = false;  // PushAck(anchor)
  };
  Frame& Add(Kind kind, const FrameHeader& h);
  void Pop();

  std::deque<Frame> frames_;
  size_t requests_ = 0;
  size_t responses_ = 0;
  size_t target_frames_ = 0;
  size_t lazy_ = 0;
  size_t anchors_ = 0;
  uint64_t bytes_written_ = 0;
  bool broken_ = false;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_OUT_QUEUE_H_
