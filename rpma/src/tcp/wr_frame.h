// Work request -> request frame: the pure encoding of the tcp provider's
// initiator (no I/O, no state), as the verbs provider's BuildSendWr.
#ifndef RPMA_TCP_WR_FRAME_H_
#define RPMA_TCP_WR_FRAME_H_

#include <cstdint>

#include "provider/provider.h"
#include "tcp/frame.h"
#include "tcp/tcp_qp.h"

namespace rpma::prov::tcp {

// Largest inline payload (IBV_SEND_INLINE): copied at post time.
inline constexpr uint32_t kMaxInline = 64;

struct RequestFrame {
  FrameHeader header;
  // The payload (header.length bytes) is sent from here: the posted sge,
  // which belongs to the provider until the WR completes, or, when
  // `copy` is set (inline), bytes to be copied before the post returns.
  const void* payload = nullptr;
  bool copy = false;
  PendingWr pending;  // what the response completes
};

// Encodes wr. Returns 0, or -EINVAL (nothing written to *out) for an
// unknown opcode, a length above kMaxIoLength, a non-empty sge without an
// address, or an inline payload above kMaxInline.
int BuildRequestFrame(const SendWr& wr, RequestFrame* out);

// Work completion status the initiator reports for a RESP status.
enum ibv_wc_status WcStatus(uint64_t resp_status);

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_WR_FRAME_H_
