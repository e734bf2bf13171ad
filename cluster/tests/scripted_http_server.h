// kv::cluster::testing::ScriptedHttpServer: a peer on 127.0.0.1 that plays
// etcd badly on purpose. It accepts connections one at a time; the i-th
// connection gets the i-th scripted reply (the last one again once the
// script is used up): it reads the request, records its body, writes the
// reply's bytes exactly as given, keeps the connection open for the
// reply's hold time (a stream that stays up) and closes it.
//
// Thread-safety: one thread of its own; requests() may be called from
// the test thread at any time. The destructor stops and joins it.
#ifndef KV_CLUSTER_TESTS_SCRIPTED_HTTP_SERVER_H_
#define KV_CLUSTER_TESTS_SCRIPTED_HTTP_SERVER_H_

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kv/endpoint.h"

namespace kv::cluster::testing {

struct ScriptedReply {
  std::string bytes;  // status line, headers and body, sent verbatim
  std::chrono::milliseconds hold{0};
};

// A complete HTTP/1.1 answer with a Content-Length.
std::string HttpReply(int status, const std::string& body);
// The head of an answer whose body runs until the connection closes (how
// a watch stream looks), followed by `body`.
std::string HttpStream(const std::string& body);

class ScriptedHttpServer {
 public:
  explicit ScriptedHttpServer(std::vector<ScriptedReply> script);
  ~ScriptedHttpServer();
  ScriptedHttpServer(const ScriptedHttpServer&) = delete;
  ScriptedHttpServer& operator=(const ScriptedHttpServer&) = delete;

  Endpoint endpoint() const { return {"127.0.0.1", std::to_string(port_)}; }
  // The request bodies received so far, in order.
  std::vector<std::string> requests() const;

 private:
  void Serve();
  void Answer(int fd, const ScriptedReply& reply);

  const std::vector<ScriptedReply> script_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

}  // namespace kv::cluster::testing

#endif  // KV_CLUSTER_TESTS_SCRIPTED_HTTP_SERVER_H_
