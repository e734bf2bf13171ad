// kv::server::AccessKeys — the --access_keys file: which keyspaces need a
// key, and the check of a presented key.
//
// Format: one `keyspace secret` per line (secret 16..64 bytes, no spaces:
// shorter ones are guessable, so Load refuses them);
// blank lines and lines starting with '#' are ignored. The file must be a
// regular file not readable or writable by group or others (like an ssh
// private key), or Load refuses it.
// Thread-safety: immutable after Load; Check may run concurrently.
#ifndef KV_SERVER_ACCESS_KEYS_H_
#define KV_SERVER_ACCESS_KEYS_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "kv/status.h"

namespace kv::server {

class AccessKeys {
 public:
  static constexpr size_t kMinAccessKey = 16;
  // No keys: every keyspace is open.
  AccessKeys() = default;
  // Errors: not_found / io_error (cannot read), permission_denied (group
  // or other may access it), invalid_argument (a malformed line: its
  // number; a bad keyspace name; a duplicate; a secret under 16 or over
  // 64 bytes).
  static Result<std::unique_ptr<AccessKeys>> Load(const std::string& path);
  // Parses file contents (Load after the permission check).
  static Result<std::unique_ptr<AccessKeys>> Parse(std::string_view text);

  // Whether `keyspace` is listed (needs a key).
  bool Protected(std::string_view keyspace) const;
  // Whether `key` is the keyspace's secret; constant time in the key's
  // and the secret's contents (length is not secret: both are padded to
  // 64 bytes). False for an unlisted keyspace.
  bool Check(std::string_view keyspace, std::string_view key) const;
  size_t size() const { return keys_.size(); }

 private:
  std::map<std::string, std::string, std::less<>> keys_;
};

// Compares a and b (each at most 64 bytes) without a data-dependent
// branch or early exit. Exposed for tests.
bool ConstantTimeEqual(std::string_view a, std::string_view b);

// The contents of a file that holds secrets: a regular file of at most
// 16 MiB that neither group nor others may access. `what` names it in
// errors ("access keys file"). Errors: not_found, io_error,
// invalid_argument (not a regular file, too large), permission_denied
// (the mode, with the chmod that fixes it).
Result<std::string> ReadPrivateFile(const std::string& path,
                                    const std::string& what);

// The cluster's peer key (kvserver --peer_key_file): one line of 16..64
// bytes without spaces (comments '#' and blank lines aside), the same
// file on every node. Peer kvservers present it in a HELLO with
// kHelloPeer. Errors: invalid_argument naming the line; ReadPrivateFile's.
Result<std::string> ParsePeerKey(std::string_view text);
Result<std::string> LoadPeerKey(const std::string& path);

}  // namespace kv::server

#endif  // KV_SERVER_ACCESS_KEYS_H_
