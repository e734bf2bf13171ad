// kvcli's connection to a kvserver keyspace: connects when a command first
// needs it, reconnects after a lost connection, switches keyspace (`use`),
// and turns connect errors into replies with hints a person can act on.
//
// Thread-safety: one Session per thread.
#ifndef KV_TOOLS_KVCLI_SESSION_H_
#define KV_TOOLS_KVCLI_SESSION_H_

#include <memory>
#include <string>

#include "kv/client/client.h"
#include "output.h"

namespace kv::kvcli {

class Session {
 public:
  explicit Session(ClientOptions options) : options_(std::move(options)) {}

  // The connected client, connecting first when there is none. On failure
  // returns nullptr and fills *reply with the connect error (exit code 3,
  // or 2 for invalid options) and its hint.
  Client* Connected(Reply* reply);
  // Connects to `keyspace` on the same server; only on success does it
  // replace the current connection (a failed `use` keeps the old one).
  bool Use(const std::string& keyspace, Reply* reply);
  // Forgets the connection after an operation failed with unavailable (the
  // next command reconnects).
  void Lost() { client_.reset(); }

  bool connected() const { return client_ != nullptr; }
  const ClientOptions& options() const { return options_; }
  // "127.0.0.1:7400/default> ", with " (not connected)" when the last
  // attempt failed.
  std::string Prompt() const;

 private:
  bool Connect(const ClientOptions& options, Reply* reply);

  ClientOptions options_;
  std::unique_ptr<Client> client_;
  bool last_connect_failed_ = false;
};

// A hint for an error of an operation on a connected client (connection
// lost, timed out, keyspace full …), or "" when the message says it all.
std::string OperationHint(const Status& status);

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_SESSION_H_
