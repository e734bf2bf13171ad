// Session completion plumbing: reaping the CQ, reposting receives, and
// sending replies through a bounded set of send slots.
#include <librpma.h>

#include <thread>

#include "session.h"

namespace kv::server {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

bool Session::DrainSome() {
  if (!deferred_.empty()) {
    Drain();
    return true;
  }
  ibv_wc wcs[16];
  int got = 0;
  if (rpma_cq_get_wc(cq_, 16, wcs, &got) != 0 || got == 0) return false;
  for (int i = 0; i < got; i++) HandleCompletion(wcs[i]);
  FinishCommits();
  if (!deferred_.empty()) Drain();
  return true;
}

void Session::Drain() {
  for (;;) {
    // Receives reaped while a send waited for a slot (WaitSendSlot) come
    // first, in order; they raise no new CQ event, so they must not be
    // left behind when the CQ is empty.
    while (!deferred_.empty()) {
      ibv_wc wc = deferred_.front();
      deferred_.pop_front();
      HandleCompletion(wc);
    }
    FinishCommits();  // may defer receives again (its acks are sends)
    if (!deferred_.empty()) continue;
    ibv_wc wcs[16];
    int got = 0;
    int rc = rpma_cq_get_wc(cq_, 16, wcs, &got);
    if (rc) return;  // RPMA_E_NO_COMPLETION, or the CQ is gone
    for (int i = 0; i < got; i++) HandleCompletion(wcs[i]);
  }
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
    HandleMessage(buf_.data() + slot * kSlot, wc.byte_len);
  }
  if (end_ == End::kNone) RepostReceive(slot);
}

void Session::FinishCommits() {
  if (group_ != nullptr && group_->pending() > 0) {
    env_.stats->Add(env_.stats->commit_groups);
    group_->Finish();
  }
  // Send never comes back here (WaitSendSlot defers receives, it does not
  // handle them), so acks_ does not change while it is walked.
  for (const PendingAck& a : acks_) {
    uint8_t out[protocol::kMaxMessage - protocol::kHeaderSize];
    const size_t n = protocol::EncodeCommitAck(a.ack, out, sizeof(out));
    Send(protocol::Type::kCommitAck, a.request_id, out, n);
  }
  acks_.clear();  // keeps its capacity: no allocation per group
}

void Session::RepostReceive(size_t slot) {
  int rc = rpma_recv(conn_, mr_, slot * kSlot, kSlot,
                     reinterpret_cast<void*>(slot + 1));
  if (rc) {
    end_detail_ = std::string("rpma_recv: ") + rpma_err_2str(rc);
    EndWith(End::kPeerGone);
  }
}

bool Session::WaitSendSlot(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (free_send_.empty()) {
    ibv_wc wc;
    int rc = rpma_cq_get_wc(cq_, 1, &wc, nullptr);
    if (rc == 0) {
      if (wc.wr_id >= kSendBase) {
        HandleCompletion(wc);
      } else {
        deferred_.push_back(wc);  // handled in order after this send
      }
      continue;
    }
    if (rc != RPMA_E_NO_COMPLETION || Clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

void Session::Send(protocol::Type type, uint32_t request_id,
                   const uint8_t* payload, size_t len) {
  if (closed_) return;
  if (!WaitSendSlot(milliseconds(5000))) {
    end_detail_ = "client does not take its replies";
    EndWith(End::kPeerGone);
    return;
  }
  const size_t slot = free_send_.back();
  free_send_.pop_back();
  const size_t off = (recv_slots_ + slot) * kSlot;
  protocol::Header h;
  h.type = type;
  h.request_id = request_id;
  const size_t n = protocol::EncodeMessage(h, payload, len, buf_.data() + off);
  int rc = rpma_send(conn_, mr_, off, n, RPMA_F_COMPLETION_ALWAYS,
                     reinterpret_cast<void*>(kSendBase + slot));
  if (rc) {
    free_send_.push_back(slot);
    end_detail_ = std::string("rpma_send: ") + rpma_err_2str(rc);
    EndWith(End::kPeerGone);
  }
}

}  // namespace kv::server
