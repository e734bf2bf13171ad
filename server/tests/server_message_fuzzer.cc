// libFuzzer target: everything kvserver parses from a peer — connect
// private data (Admission::ParseConnect), received messages in both
// session states (ParseClientMessage), and an access keys file
// (AccessKeys::Parse). The first byte picks the parser. Each must return
// a decision without crashing, reading out of bounds or leaking, and a
// successful parse must re-encode to what was decoded.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "access_keys.h"
#include "admission.h"
#include "message_parser.h"

using namespace kv;
using namespace kv::server;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0] % 3;
  data++;
  size--;
  // A private copy of exactly `size` bytes, so ASan sees any overread.
  std::unique_ptr<uint8_t[]> buf(new uint8_t[size == 0 ? 1 : size]);
  if (size != 0) std::memcpy(buf.get(), data, size);
  switch (which) {
    case 0: {
      ConnectRequest cr;
      Refusal r;
      if (Admission::ParseConnect(size == 0 ? nullptr : buf.get(), size, &cr,
                                  &r)) {
        uint8_t out[protocol::kConnectSize];
        protocol::EncodeConnect(cr.connect, out);
        protocol::Connect back;
        if (!protocol::DecodeConnect(out, sizeof(out), &back).ok() ||
            back.name != cr.connect.name || back.flags != cr.connect.flags) {
          __builtin_trap();
        }
      } else if (r.reason.empty()) {
        __builtin_trap();  // every refusal says why
      }
      break;
    }
    case 1: {
      for (bool hello_pending : {false, true}) {
        ClientMessage m = ParseClientMessage(buf.get(), size, hello_pending);
        if (m.kind == ClientMessage::Kind::kError && m.error.empty()) {
          __builtin_trap();
        }
        if (m.kind == ClientMessage::Kind::kCommit) {
          uint8_t out[protocol::kCommitSize];
          protocol::EncodeCommit(m.commit, out);
          protocol::Commit back;
          if (!protocol::DecodeCommit(out, sizeof(out), &back).ok() ||
              back.offset != m.commit.offset || back.flags != m.commit.flags ||
              back.grant_id != m.commit.grant_id) {
            __builtin_trap();
          }
        }
      }
      break;
    }
    default: {
      auto keys = AccessKeys::Parse(
          std::string_view(reinterpret_cast<const char*>(buf.get()), size));
      if (keys.ok()) (void)(*keys)->Check("default", "key");
      break;
    }
  }
  return 0;
}
