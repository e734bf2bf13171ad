#include "session.h"

namespace kv::kvcli {
namespace {

bool Mentions(const Status& st, std::string_view text) {
  return st.message().find(text) != std::string::npos;
}

// What to try when Connect failed: the client's messages already name the
// cause; the hint names the command that fixes it.
std::string ConnectHint(const Status& st, const ClientOptions& o) {
  if (!o.cluster.empty()) {
    // The client's messages name etcd, the map or the keyspace; the hint
    // names the cluster commands (docs/cluster.md).
    if (st.code() == StatusCode::kUnavailable && Mentions(st, "refused")) {
      return "start a cluster: bash tools/run.sh --cluster (etcd and three "
             "nodes), or check --cluster=" +
             o.cluster;
    }
    if (st.code() == StatusCode::kNotFound) {
      return "see the cluster: kvadmin --cluster=" + o.cluster +
             " cluster status; make a keyspace: kvadmin cluster "
             "create-keyspace " +
             o.keyspace;
    }
    return "";
  }
  switch (st.code()) {
    case StatusCode::kUnavailable:
      if (Mentions(st, "refused") || Mentions(st, "is kvserver running")) {
        return "start a server: bash tools/run.sh, or kvserver --pool=PATH "
               "--listen=" +
               o.server + "; or pass --server=HOST:PORT";
      }
      return "";
    case StatusCode::kNotFound:
      if (Mentions(st, "--create")) return "";
      return "connect with --create (kvserver needs --allow_create), or run "
             "kvadmin keyspace create --pool=PATH --keyspace=" +
             o.keyspace;
    case StatusCode::kPermissionDenied:
      return o.access_key.empty()
                 ? "this keyspace needs an access key: --access_key=KEY or "
                   "RPKV_ACCESS_KEY=KEY"
                 : "check the key given with --access_key / RPKV_ACCESS_KEY";
    case StatusCode::kTimedOut:
      return "no answer from " + o.server +
             " in time: check the address and that kvserver is up";
    case StatusCode::kNoSpace:
      return "the keyspace has no free log segment: delete keys or create a "
             "larger keyspace";
    default:
      return "";
  }
}

}  // namespace

std::string OperationHint(const Status& st) {
  switch (st.code()) {
    case StatusCode::kUnavailable:
      return "the connection to the server was lost (a write in flight may or "
             "may not have been applied); the next command reconnects";
    case StatusCode::kTimedOut:
      return "the server did not answer in time; the next command reconnects";
    case StatusCode::kNoSpace:
      return "the keyspace is full: delete keys (deletes still work), or "
             "create a keyspace with a larger --log_size";
    case StatusCode::kCorruption:
      return "run kvadmin check --pool=PATH on the server's pool";
    default:
      return "";
  }
}

bool Session::Connect(const ClientOptions& o, Reply* reply) {
  auto c = Client::Connect(o);
  if (!c.ok()) {
    last_connect_failed_ = true;
    reply->status = c.status();
    reply->hint = ConnectHint(c.status(), o);
    reply->exit_code = c.status().IsInvalidArgument() ? 2 : 3;
    return false;
  }
  last_connect_failed_ = false;
  client_ = std::move(c).value();
  return true;
}

Client* Session::Connected(Reply* reply) {
  if (client_ == nullptr && !Connect(options_, reply)) return nullptr;
  return client_.get();
}

bool Session::Use(const std::string& keyspace, Reply* reply) {
  ClientOptions o = options_;
  o.keyspace = keyspace;
  std::unique_ptr<Client> old = std::move(client_);
  if (!Connect(o, reply)) {
    client_ = std::move(old);
    last_connect_failed_ = client_ == nullptr;
    return false;
  }
  options_ = o;
  return true;
}

std::string Session::Prompt() const {
  std::string p = options_.server + "/" + options_.keyspace;
  if (last_connect_failed_) p += " (not connected)";
  return p + "> ";
}

}  // namespace kv::kvcli
