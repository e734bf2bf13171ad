#include "verbs/verbs_cm_channel.h"

#include <cerrno>
#include <new>
#include <utility>

#include "log_internal.h"
#include "verbs/verbs_cm_id.h"
#include "verbs/verbs_mapping.h"

namespace rpma::prov::verbs {
namespace {

bool CarriesConnData(rdma_cm_event_type type) {
  return type == RDMA_CM_EVENT_CONNECT_REQUEST ||
         type == RDMA_CM_EVENT_ESTABLISHED || type == RDMA_CM_EVENT_REJECTED;
}

}  // namespace

VerbsCmChannel::~VerbsCmChannel() { rdma_destroy_event_channel(ch_); }

int VerbsCmChannel::GetEvent(CmEvent* event) {
  for (;;) {
    int rc = GetOneEvent(event);
    if (rc != kSkipped) return rc;
  }
}

int VerbsCmChannel::GetOneEvent(CmEvent* event) {
  rdma_cm_event* ev = nullptr;
  errno = 0;
  if (rdma_get_cm_event(ch_, &ev) != 0) {
    const int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK || e == ENODATA) return -ENODATA;
    return NegErrno(-1, e);
  }
  if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
    auto* id = static_cast<VerbsCmId*>(ev->id->context);
    // On IB/RoCE, DISCONNECTED is followed by TIMEWAIT_EXIT once the QP
    // leaves timewait; librpma maps both to RPMA_CONN_CLOSED, so an
    // application would see CLOSED twice. Only the first end is reported.
    if (id != nullptr && ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT &&
        id->closed_reported()) {
      rdma_ack_cm_event(ev);
      return kSkipped;
    }
    if (id != nullptr && (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
                          ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT))
      id->set_closed_reported();
  }
  CmEvent out;
  out.type = MapCmEvent(ev->event);
  if (CarriesConnData(ev->event) && ev->param.conn.private_data != nullptr &&
      ev->param.conn.private_data_len > 0) {
    const auto* p = static_cast<const uint8_t*>(ev->param.conn.private_data);
    out.private_data.assign(p, p + ev->param.conn.private_data_len);
  }
  if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
    // ev->id is a new id (it inherited the listener's null context); the
    // wrapper's constructor points its context at the wrapper, so later
    // events of this id, on this channel or after Migrate(), name it.
    rdma_cm_id* new_id = ev->id;
    std::unique_ptr<VerbsCmId> wrapper(new (std::nothrow)
                                           VerbsCmId(pd_, new_id, this));
    if (!wrapper) {
      // Ack first: rdma_destroy_id() waits for the event to be acked.
      rdma_ack_cm_event(ev);
      rdma_reject(new_id, nullptr, 0);
      rdma_destroy_id(new_id);
      return -ENOMEM;
    }
    wrapper->set_request_pdata(out.private_data);
    out.id = wrapper.get();
    out.new_id = std::move(wrapper);
  } else {
    auto* id = static_cast<VerbsCmId*>(ev->id->context);
    if (id != nullptr && id->passive() &&
        ev->event == RDMA_CM_EVENT_ESTABLISHED) {
      out.private_data = id->request_pdata();
    }
    out.id = id;
  }
  if (rdma_ack_cm_event(ev) != 0)
    RPMA_LOG_WARNING("rdma_ack_cm_event failed: errno %d", errno);
  *event = std::move(out);
  return 0;
}

VerbsListener::~VerbsListener() {
  if (rdma_destroy_id(id_) != 0)
    RPMA_LOG_WARNING("rdma_destroy_id failed: errno %d", errno);
}

}  // namespace rpma::prov::verbs
