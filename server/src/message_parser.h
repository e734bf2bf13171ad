// kv::server::ParseClientMessage — what a received message asks for, or
// why it is refused: one pure decision, used by Session (and fuzzed).
//
// A message that cannot be parsed (header, payload, a type a client may
// not send, anything but HELLO while HELLO is pending, HELLO when it is
// not) yields kError with the text the ERROR reply carries — except a
// HELLO whose payload is bad, which is a refused HELLO (kBadHello: the
// reply is a WELCOME with a refusal, as for any failed admission).
// Thread-safety: pure.
#ifndef KV_SERVER_MESSAGE_PARSER_H_
#define KV_SERVER_MESSAGE_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "kv/protocol.h"

namespace kv::server {

struct ClientMessage {
  enum class Kind { kError, kBadHello, kHello, kCommit, kRefill, kInfo, kBye };
  Kind kind = Kind::kError;
  protocol::Header header;  // valid unless the header itself was bad
  std::string error;        // kError / kBadHello: why
  protocol::Hello hello;
  protocol::Commit commit;
  protocol::InfoTopic topic = protocol::InfoTopic::kPing;
  bool refill_for_delete = false;  // kRefill
};

ClientMessage ParseClientMessage(const uint8_t* data, size_t len,
                                 bool hello_pending);

}  // namespace kv::server

#endif  // KV_SERVER_MESSAGE_PARSER_H_
