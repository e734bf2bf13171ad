// Session completion plumbing: reaping the CQ (bounded per pass),
// reposting receives, and sending replies through a bounded set of send
// slots with an outbox behind them. Nothing here blocks.
#include <librpma.h>
#include <rpma_ext.h>

#include <algorithm>
#include <cstring>

#include "session.h"

namespace kv::server {

bool Session::Pump(size_t budget, size_t* handled_out) {
  if (handled_out != nullptr) *handled_out = 0;
  if (done() || phase_ != Phase::kOpen) {
    if (!done() && cq_ != nullptr) AdvanceEnd(Clock::now());
    return false;
  }
  size_t handled = 0;
  auto room = [&] { return budget == 0 || handled < budget; };
  for (;;) {
    // A reply waiting for a send slot holds back every later message (and
    // their receives stay unposted: the client cannot send more).
    if (!outbox_.empty()) {
      (void)ReapSends();
      FlushOutbox();
      if (!outbox_.empty()) break;
    }
    // Receives reaped while sends were reaped come first, in order.
    if (!deferred_.empty()) {
      if (!room()) break;
      ibv_wc wc = deferred_.front();
      deferred_.pop_front();
      HandleCompletion(wc);
      handled++;
      if (end_ != End::kNone) break;
      continue;
    }
    if (!room()) break;
    ibv_wc wcs[16];
    const size_t want =
        budget == 0 ? 16 : std::min<size_t>(16, budget - handled);
    int got = 0;
    if (rpma_cq_get_wc(cq_, static_cast<int>(want), wcs, &got) != 0 ||
        got == 0) {
      break;  // RPMA_E_NO_COMPLETION, or the CQ is gone
    }
    for (int i = 0; i < got; i++) {
      if (!outbox_.empty() || end_ != End::kNone) {
        // Handled after the reply that waits, or (ending) not at all —
        // but a send's completion still frees its slot.
        if (wcs[i].wr_id >= kSendBase) {
          HandleCompletion(wcs[i]);
        } else {
          deferred_.push_back(wcs[i]);
        }
        continue;
      }
      HandleCompletion(wcs[i]);
    }
    handled += static_cast<size_t>(got);
    if (end_ != End::kNone) break;
  }
  if (handled_out != nullptr) *handled_out = handled;
  if (end_ != End::kNone) {
    BeginEnd();
    return false;
  }
  // More may wait: the budget ran out with completions left, or receives
  // deferred behind an outbox that has drained since.
  return !room() || (!deferred_.empty() && outbox_.empty());
}

void Session::HandleCompletion(const ibv_wc& wc) {
  if (wc.wr_id >= kSendBase) {
    free_send_.push_back(wc.wr_id - kSendBase);
    if (wc.status != IBV_WC_SUCCESS) {
      end_detail_ = std::string("send failed: ") + ibv_wc_status_str(wc.status);
      EndWith(End::kPeerGone);
    }
    return;
  }
  if (wc.status != IBV_WC_SUCCESS) {
    // A flushed receive: the connection is in error or going away.
    if (end_detail_.empty()) {
      end_detail_ = std::string("receive: ") + ibv_wc_status_str(wc.status);
    }
    EndWith(End::kPeerGone);
    return;
  }
  const size_t slot = wc.wr_id - 1;
  if (slot >= recv_slots_) return;  // not ours; cannot happen
  last_message_ = Clock::now();     // --idle_timeout_ms counts from here
  if (end_ == End::kNone || end_ == End::kShutdown) {
    HandleMessage(buf_ + slot * kSlot, wc.byte_len);
  }
  if (end_ == End::kNone) RepostReceive(slot);
}

void Session::RepostReceive(size_t slot) {
  int rc = rpma_recv(conn_, mr_, slot * kSlot, kSlot,
                     reinterpret_cast<void*>(slot + 1));
  if (rc) {
    end_detail_ = std::string("rpma_recv: ") + rpma_err_2str(rc);
    EndWith(End::kPeerGone);
  }
}

bool Session::ReapSends() {
  for (;;) {
    ibv_wc wcs[16];
    int got = 0;
    if (rpma_cq_get_wc(cq_, 16, wcs, &got) != 0 || got == 0) break;
    for (int i = 0; i < got; i++) {
      if (wcs[i].wr_id >= kSendBase) {
        HandleCompletion(wcs[i]);
      } else {
        deferred_.push_back(wcs[i]);  // handled in order, later
      }
    }
  }
  return !free_send_.empty();
}

void Session::FlushOutbox() {
  while (!outbox_.empty() && !free_send_.empty() && !closed_) {
    PostSend(outbox_.front().data(), outbox_.front().size());
    outbox_.pop_front();
  }
  if (closed_) outbox_.clear();
}

void Session::PostSend(const uint8_t* msg, size_t n) {
  const size_t slot = free_send_.back();
  uint8_t* dst = buf_ + (recv_slots_ + slot) * kSlot;
  std::memcpy(dst, msg, n);
  PostSlot(slot, n);
}

void Session::PostSlot(size_t slot, size_t n) {
  free_send_.pop_back();  // slot is its back
  const size_t off = (recv_slots_ + slot) * kSlot;
  // Another ack of this pass follows at once, into a free slot: the
  // provider may send both in one go (one wake-up of the client, one
  // sendmsg on tcp). The last of the pass goes without, and so does one
  // with no slot after it (the next would wait in the outbox).
  const bool more = acks_to_follow_ > 0 && !free_send_.empty();
  int rc = rpma_send(conn_, mr_, off, n,
                     RPMA_F_COMPLETION_ALWAYS | (more ? RPMA_EXT_F_MORE : 0),
                     reinterpret_cast<void*>(kSendBase + slot));
  if (rc) {
    free_send_.push_back(slot);
    end_detail_ = std::string("rpma_send: ") + rpma_err_2str(rc);
    EndWith(End::kPeerGone);
  }
}

void Session::Send(protocol::Type type, uint32_t request_id,
                   const uint8_t* payload, size_t len) {
  if (closed_) return;
  protocol::Header h;
  h.type = type;
  h.request_id = request_id;
  if (outbox_.empty() && (!free_send_.empty() || ReapSends())) {
    // Encoded straight into the free slot (every reply passes here).
    const size_t slot = free_send_.back();
    uint8_t* dst = buf_ + (recv_slots_ + slot) * kSlot;
    PostSlot(slot, protocol::EncodeMessage(h, payload, len, dst));
    return;
  }
  // No slot free: the reply waits (bounded: kReplyTimeout, then the
  // session ends), and so do the messages after it.
  uint8_t msg[protocol::kMaxMessage];
  const size_t n = protocol::EncodeMessage(h, payload, len, msg);
  if (outbox_.empty()) outbox_since_ = Clock::now();
  outbox_.emplace_back(msg, msg + n);
}

}  // namespace kv::server
