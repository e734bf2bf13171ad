// kv::e2e::RawClient — a protocol-level test client over librpma: connects
// with arbitrary private data, exposes the accept private data as bytes,
// sends arbitrary messages, receives raw replies, and posts one-sided
// reads and writes through any descriptor, forged ones included. It knows
// the protocol only through kv/protocol.h helpers it is handed; nothing
// here is the client library.
//
// Thread-safety: one object per thread. Every wait is bounded.
#ifndef KV_TESTS_E2E_RAW_CLIENT_H_
#define KV_TESTS_E2E_RAW_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kv/protocol.h"
#include "kv/status.h"

struct rpma_peer;
struct rpma_conn;
struct rpma_mr_local;
struct rpma_cq;

namespace kv::e2e {

using std::chrono::milliseconds;

class RawClient {
 public:
  static constexpr size_t kRecvSlots = 16;
  static constexpr size_t kDataSize = 1 << 20;  // read/write staging

  RawClient();
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // Connects to host:port sending `pdata` (std::nullopt: no private data
  // at all; the bytes verbatim otherwise, up to 56), with receives posted
  // first. ok once ESTABLISHED (the server's accept pdata is then in
  // accept_pdata()); unavailable when the connection was rejected, could
  // not be made, or ended before ESTABLISHED; timed_out.
  Status Connect(const std::string& host, int port,
                 std::optional<std::string> pdata,
                 milliseconds timeout = milliseconds(5000));
  // Connect with EncodeConnect of {flags, name}.
  Status ConnectTo(const std::string& host, int port, std::string_view name,
                   uint8_t flags = 0,
                   milliseconds timeout = milliseconds(5000));

  const std::string& accept_pdata() const { return accept_pdata_; }
  // DecodeAccept of accept_pdata().
  Status accept(protocol::Accept* out) const {
    return protocol::DecodeAccept(accept_pdata_.data(), accept_pdata_.size(),
                                  out);
  }

  // Sends `bytes` verbatim as one message (<= 4096).
  Status SendRaw(std::string_view bytes);
  // Sends a header of `type` + `payload` (request id `request_id`).
  Status SendMessage(protocol::Type type, std::string_view payload,
                     uint32_t request_id = 1);
  // Waits for the next received message (raw bytes). timed_out; unavailable
  // when the connection failed or closed first.
  Status Receive(std::string* message,
                 milliseconds timeout = milliseconds(5000));
  // Receive + DecodeHeader; *payload is the payload bytes.
  Status ReceiveMessage(protocol::Header* header, std::string* payload,
                        milliseconds timeout = milliseconds(5000));

  // One-sided operations through a descriptor (21 bytes, may be forged):
  // ok, or io_error naming the completion status (remote access error…).
  Status Write(const uint8_t* descriptor, uint64_t offset,
               std::string_view data,
               milliseconds timeout = milliseconds(5000));
  Status Read(const uint8_t* descriptor, uint64_t offset, size_t length,
              std::string* out, milliseconds timeout = milliseconds(5000));

  // Waits for the next connection event; returns it (rpma_conn_event as
  // int) or -1 on timeout / no connection.
  int NextEvent(milliseconds timeout = milliseconds(5000));
  // True once the connection is seen CLOSED or LOST (bounded wait).
  bool WaitClosed(milliseconds timeout = milliseconds(5000));
  // Disconnects and deletes the connection (no BYE).
  void Disconnect();
  // Deletes the connection without a disconnect (as if the process died).
  void Abandon();

  bool connected() const { return conn_ != nullptr; }
  // From now on received messages are dropped and their receives never
  // posted again: a peer that takes no replies.
  void StopTakingReplies() { take_replies_ = false; }

 private:
  Status PostRecv(size_t slot);
  // Waits for one completion of any kind; recv completions are queued.
  Status WaitCompletion(int want_opcode, milliseconds timeout,
                        uint32_t* byte_len, uint64_t* wr_id);

  rpma_peer* peer_ = nullptr;
  rpma_conn* conn_ = nullptr;
  rpma_mr_local* mr_ = nullptr;
  rpma_cq* cq_ = nullptr;
  std::vector<uint8_t> buf_;  // recv slots, send slot, data area
  std::string accept_pdata_;
  std::vector<std::string> received_;  // recv completions not yet taken
  bool closed_ = false;
  bool take_replies_ = true;
};

// Builds raw connect private data: EncodeConnect of {flags, name}.
std::string ConnectPdata(std::string_view name, uint8_t flags = 0);
// A HELLO payload (EncodeHello).
std::string HelloPayload(std::string_view name, std::string_view key,
                         uint8_t flags = 0);
// A COMMIT payload (EncodeCommit).
std::string CommitPayload(const protocol::Commit& c);

}  // namespace kv::e2e

#endif  // KV_TESTS_E2E_RAW_CLIENT_H_
