// Target side of a tcp connection (the "NIC" half that serves the peer's
// requests): one method per opcode, executed against registered memory in
// arrival order, each answered with exactly one RESP on the connection's
// output queue.
//
// Not thread-safe: guarded by the owning connection's mutex. Target memory
// is touched only while the connection holds MrTable::mu() shared (it
// does for every read batch).
#ifndef RPMA_TCP_TCP_TARGET_H_
#define RPMA_TCP_TCP_TARGET_H_

#include <cstdint>
#include <memory>

#include "provider/provider.h"
#include "tcp/frame.h"

namespace rpma::prov::tcp {

class ProgressEngine;
class FrameReader;
class MrTable;
class OutQueue;
class TcpQp;
struct MrEntry;

class TcpTarget {
 public:
  // `caps`: what the device serves. Without native_flush /
  // native_atomic_write a native FLUSH / ATOMIC_WRITE request is refused
  // the way a NIC without them refuses it (Invalid Request NAK: the
  // requester's WR completes with IBV_WC_REM_INV_REQ_ERR, both QPs fail).
  TcpTarget(MrTable* mrs, ProgressEngine* engine, FrameReader* reader,
            OutQueue* out, const DeviceCaps& caps);

  void set_qp(TcpQp* qp) { qp_ = qp; }
  // The Pd whose registrations the peer's requests are checked against
  // (TcpConn::MoveToTable; caller holds the connection's mutex, no
  // request in progress).
  void set_mrs(MrTable* mrs) { mrs_ = mrs; }

  enum class Verdict {
    kOk,    // running (its payload is expected) or answered
    kRnr,   // no receive for a SEND / WRITE_IMM: retry the same header
            // later. The connection is counted as an RNR waiter of the
            // engine (AddRnrWaiter(1)); the caller uncounts it on unblock.
    kFail,  // answered with an error status: the QP fails (caller's
            // QpError); status() says which
  };

  // A request header of an established connection. Once the target failed
  // (or without a QP) requests are parsed and dropped unanswered.
  Verdict Begin(const FrameHeader& h);
  // A request the connection does not execute (it is disconnecting): its
  // payload is discarded, nothing is answered.
  void Drop(const FrameHeader& h);
  // The payload announced by Begin() is placed: completes the receive (if
  // any) and answers.
  Verdict Finish();

  // The request that waits for a receive (Begin() said kRnr) fails with
  // kRespRnrRetryExceeded; the target fails.
  void FailRnr() { Fail(kRespRnrRetryExceeded); }
  // The QP fails: a receive being filled is flushed and the rest of its
  // payload is discarded (no answer follows).
  void OnQpError();
  // Before placing more of a payload: when its region was deregistered,
  // or its floor was raised above the write's start (rpma_mr_advance), the
  // rest is discarded and the request fails at Finish() with a remote
  // access error. Caller holds MrTable::mu() shared.
  void CheckDestination();
  // The connection closed.
  void Reset();

  bool failed() const { return failed_; }
  uint64_t status() const { return status_; }

 private:
  Verdict Write(const FrameHeader& h);
  Verdict Read(const FrameHeader& h);
  Verdict AtomicWrite(const FrameHeader& h);
  Verdict Flush(const FrameHeader& h);
  Verdict Send(const FrameHeader& h);

  // Null when [addr, +len) of h's rkey lacks `need`; zero-length accesses
  // check no key (as verbs).
  std::shared_ptr<MrEntry> Check(const FrameHeader& h, uint64_t len, int need);
  bool TakeRecvOrWait();
  void Respond(uint64_t status, const void* payload = nullptr, size_t len = 0,
               std::shared_ptr<MrEntry> mr = nullptr);
  Verdict Fail(uint64_t status);
  // An opcode this device does not serve natively (RPMA_TCP_CAPS).
  Verdict Unsupported(const char* what);
  // The flush itself: a fence, then for a persistent flush the region's
  // persist method (pmem_persist.h).
  static uint64_t ExecuteFlush(const FrameHeader& h, const MrEntry& e);

  MrTable* mrs_;
  ProgressEngine* const engine_;
  FrameReader* const reader_;
  OutQueue* const out_;
  const DeviceCaps caps_;
  TcpQp* qp_ = nullptr;

  FrameHeader cur_;
  uint64_t status_ = kRespOk;  // of the current request
  RecvWr recv_;                // taken for the current request
  bool have_recv_ = false;
  bool ignore_ = false;  // the current request is parsed, not executed
  bool failed_ = false;  // our QP failed as a target: drop requests
  std::shared_ptr<MrEntry> dst_mr_;  // set while a payload goes to memory
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_TARGET_H_
