// The verbs provider's CM event channel (rdma_event_channel) and listener.
//
// Ownership: VerbsCmChannel owns its rdma_event_channel, VerbsListener its
// listening rdma_cm_id. Ids born from a connection request are handed to
// the caller as new VerbsCmIds (CmEvent::new_id), which survive the
// listener. Every id using a channel is destroyed or migrated before the
// channel (provider.h), as rdma_destroy_event_channel() requires.
//
// Thread-safety: GetEvent may run concurrently with anything on other
// objects.
#ifndef RPMA_VERBS_VERBS_CM_CHANNEL_H_
#define RPMA_VERBS_VERBS_CM_CHANNEL_H_

#include <rdma/rdma_cma.h>

#include "provider/provider.h"

namespace rpma::prov::verbs {

class VerbsPd;

class VerbsCmChannel final : public CmChannel {
 public:
  // Takes ownership of ch. pd (used for the QPs of ids born from connection
  // requests on this channel) must outlive it.
  VerbsCmChannel(VerbsPd* pd, struct rdma_event_channel* ch)
      : pd_(pd), ch_(ch) {}
  ~VerbsCmChannel() override;

  struct rdma_event_channel* channel() const {
    return ch_;
  }
  int fd() const override { return ch_->fd; }
  // rdma_get_cm_event() + rdma_ack_cm_event(). kConnectRequest carries the
  // new id in new_id (and id == new_id.get()); other events name the
  // VerbsCmId they belong to (null for the listening id itself). Private
  // data is copied for CONNECT_REQUEST, ESTABLISHED and REJECTED (on the
  // passive side ESTABLISHED repeats the request's data, the peer's); on
  // InfiniBand/RoCE the CM reports the full private-data field, so it may
  // be longer than what the peer sent (librpma behaves alike).
  // -ENODATA on an O_NONBLOCK fd with nothing pending; -ENOMEM (the request
  // is then rejected); else rdma_get_cm_event()'s -errno.
  // A TIMEWAIT_EXIT after the id's DISCONNECTED is acknowledged and
  // skipped (one end of a connection is reported once).
  int GetEvent(CmEvent* event) override;

 private:
  static constexpr int kSkipped = 1;
  int GetOneEvent(CmEvent* event);  // 0, -errno or kSkipped

  VerbsPd* const pd_;
  struct rdma_event_channel* const ch_;
};

class VerbsListener final : public Listener {
 public:
  explicit VerbsListener(struct rdma_cm_id* id) : id_(id) {}
  ~VerbsListener() override;  // rdma_destroy_id(): stops listening

 private:
  struct rdma_cm_id* const id_;
};

}  // namespace rpma::prov::verbs

#endif  // RPMA_VERBS_VERBS_CM_CHANNEL_H_
