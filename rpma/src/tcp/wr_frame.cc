// Work request encoding; see wr_frame.h.
#include "tcp/wr_frame.h"

#include <cerrno>

namespace rpma::prov::tcp {
namespace {

uint8_t DataFrameType(Opcode op) {
  switch (op) {
    case Opcode::kWriteWithImm:
      return kFrameWriteImm;
    case Opcode::kSend:
      return kFrameSend;
    case Opcode::kSendWithImm:
      return kFrameSendImm;
    default:
      return kFrameWrite;
  }
}

}  // namespace

int BuildRequestFrame(const SendWr& wr, RequestFrame* out) {
  RequestFrame r;
  FrameHeader& h = r.header;
  h.addr = wr.remote_addr;
  h.rkey = wr.rkey;
  r.pending.wr_id = wr.wr_id;
  r.pending.opcode = wr.opcode;
  r.pending.signaled = wr.signaled;
  switch (wr.opcode) {
    case Opcode::kRead:
      if (wr.sge.length > kMaxIoLength) return -EINVAL;
      if (wr.sge.length > 0 && wr.sge.addr == nullptr) return -EINVAL;
      h.type = kFrameRead;
      h.value = wr.sge.length;
      r.pending.read_dst = static_cast<uint8_t*>(wr.sge.addr);
      r.pending.length = wr.sge.length;
      break;
    case Opcode::kWrite:
    case Opcode::kWriteWithImm:
    case Opcode::kSend:
    case Opcode::kSendWithImm:
      h.type = DataFrameType(wr.opcode);
      if (wr.opcode == Opcode::kWriteWithImm ||
          wr.opcode == Opcode::kSendWithImm) {
        h.imm = wr.imm_data;
      }
      if (wr.sge.length > kMaxIoLength ||
          (wr.sge.length > 0 && wr.sge.addr == nullptr)) {
        return -EINVAL;
      }
      if (wr.inline_data && wr.sge.length > kMaxInline) return -EINVAL;
      h.length = wr.sge.length;
      r.payload = wr.sge.addr;
      r.copy = wr.inline_data && wr.sge.length > 0;
      break;
    case Opcode::kAtomicWrite:
      h.type = kFrameAtomicWrite;
      // Byte-wise little-endian so the target stores the very same bytes.
      for (int i = 7; i >= 0; --i) h.value = (h.value << 8) | wr.atomic_data[i];
      break;
    case Opcode::kFlush:
      h.type = kFrameFlush;
      h.value = wr.flush_length;
      if (wr.flush_type == FlushType::kVisibility) {
        h.flags = kFlagFlushVisibility;
      }
      break;
    default:
      return -EINVAL;
  }
  *out = r;
  return 0;
}

enum ibv_wc_status WcStatus(uint64_t resp_status) {
  switch (resp_status) {
    case kRespOk:
      return IBV_WC_SUCCESS;
    case kRespRemoteAccess:
      return IBV_WC_REM_ACCESS_ERR;
    case kRespRemoteInvalid:
      return IBV_WC_REM_INV_REQ_ERR;
    case kRespRnrRetryExceeded:
      return IBV_WC_RNR_RETRY_EXC_ERR;
    default:
      return IBV_WC_REM_OP_ERR;
  }
}

}  // namespace rpma::prov::tcp
