#include "message_parser.h"

namespace kv::server {
namespace {

std::string TypeName(protocol::Type t) {
  return std::to_string(static_cast<int>(t));
}

}  // namespace

ClientMessage ParseClientMessage(const uint8_t* data, size_t len,
                                 bool hello_pending) {
  using Kind = ClientMessage::Kind;
  ClientMessage m;
  Status st = protocol::DecodeHeader(data, len, &m.header);
  if (!st.ok()) {
    m.error = st.message();
    return m;
  }
  const protocol::Header& h = m.header;
  const uint8_t* payload = data + protocol::kHeaderSize;
  if (hello_pending && h.type != protocol::Type::kHello) {
    m.error = "message type " + TypeName(h.type) + " before HELLO";
    return m;
  }
  switch (h.type) {
    case protocol::Type::kHello:
      if (!hello_pending) {
        m.error = "HELLO only after a connect with the HELLO flag, once";
        return m;
      }
      st = protocol::DecodeHello(payload, h.length, &m.hello);
      m.kind = st.ok() ? Kind::kHello : Kind::kBadHello;
      m.error = st.message();
      return m;
    case protocol::Type::kCommit:
      st = protocol::DecodeCommit(payload, h.length, &m.commit);
      m.kind = st.ok() ? Kind::kCommit : Kind::kError;
      m.error = st.message();
      return m;
    case protocol::Type::kRefill:
      m.kind = Kind::kRefill;
      // The flags byte (older clients may send none: not for a delete).
      m.refill_for_delete = h.length >= protocol::kRefillSize &&
                            (payload[0] & protocol::kRefillForDelete) != 0;
      return m;
    case protocol::Type::kInfo:
      st = protocol::DecodeInfo(payload, h.length, &m.topic);
      m.kind = st.ok() ? Kind::kInfo : Kind::kError;
      m.error = st.message();
      return m;
    case protocol::Type::kBye:
      m.kind = Kind::kBye;
      return m;
    default:
      m.error = "message type " + TypeName(h.type) + " is not a client message";
      return m;
  }
}

}  // namespace kv::server
