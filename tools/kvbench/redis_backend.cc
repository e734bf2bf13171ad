// The Redis backend: one hiredis connection per thread. Execute() with n
// requests appends all n commands and then reads the n replies (Redis
// pipelining), so --qd means the same operations in flight as on rpkv.
// GET of a missing key is a nil reply (not found); SET replies +OK; DEL
// replies with the number of keys removed.
#include <hiredis/hiredis.h>

#include <cstring>
#include <sstream>

#include "backend.h"
#include "kv/endpoint.h"

namespace kvbench {
namespace {

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

kv::Result<ContextPtr> Dial(const std::string& server) {
  auto ep = kv::Endpoint::Parse(server);
  if (!ep.ok()) return ep.status();
  timeval timeout{5, 0};
  ContextPtr c(
      redisConnectWithTimeout(ep->host.c_str(), std::stoi(ep->port), timeout));
  if (c == nullptr) return kv::Status::Unavailable("redis: out of memory");
  if (c->err) {
    return kv::Status::Unavailable("cannot connect to redis at " + server +
                                   ": " + c->errstr +
                                   " — is redis-server running?");
  }
  if (redisSetTimeout(c.get(), timeval{10, 0}) != REDIS_OK) {
    return kv::Status::Unavailable("redis: cannot set the reply timeout");
  }
  return c;
}

kv::Status ContextError(redisContext* c) {
  return kv::Status::Unavailable(std::string("redis connection: ") +
                                 (c->err ? c->errstr : "no reply"));
}

class RedisBackend : public Backend {
 public:
  explicit RedisBackend(ContextPtr c) : c_(std::move(c)) {}

  kv::Status Execute(std::span<const Request> requests,
                     std::vector<Reply>* replies) override {
    replies->assign(requests.size(), Reply{});
    for (const Request& q : requests) Append(q);
    for (size_t i = 0; i < requests.size(); i++) {
      void* raw = nullptr;
      if (redisGetReply(c_.get(), &raw) != REDIS_OK || raw == nullptr) {
        kv::Status st = ContextError(c_.get());
        for (Reply& r : *replies) r.error = st.ToString();
        return st;
      }
      Decode(requests[i].kind, ReplyPtr(static_cast<redisReply*>(raw)),
             &(*replies)[i]);
    }
    return kv::Status::Ok();
  }

  kv::Status Ping() override {
    ReplyPtr r(static_cast<redisReply*>(redisCommand(c_.get(), "PING")));
    if (r == nullptr) return ContextError(c_.get());
    if (r->type != REDIS_REPLY_STATUS) {
      return kv::Status::Unavailable("redis: PING did not answer PONG");
    }
    return kv::Status::Ok();
  }

 private:
  void Append(const Request& q) {
    const char* argv[3];
    size_t len[3];
    int argc = 2;
    argv[1] = q.key.data();
    len[1] = q.key.size();
    switch (q.kind) {
      case Request::Kind::kGet:
        argv[0] = "GET";
        break;
      case Request::Kind::kPut:
        argv[0] = "SET";
        argv[2] = q.value.data();
        len[2] = q.value.size();
        argc = 3;
        break;
      case Request::Kind::kDelete:
        argv[0] = "DEL";
        break;
    }
    len[0] = std::strlen(argv[0]);
    // Only fails on out-of-memory; the reply loop then reports the error.
    (void)redisAppendCommandArgv(c_.get(), argc, argv, len);
  }

  static void Decode(Request::Kind kind, ReplyPtr reply, Reply* r) {
    switch (reply->type) {
      case REDIS_REPLY_NIL:
        r->outcome = Reply::Outcome::kNotFound;
        return;
      case REDIS_REPLY_ERROR:
        r->error = std::string("redis: ") + reply->str;
        return;
      case REDIS_REPLY_STRING:
        if (kind == Request::Kind::kGet) {
          r->outcome = Reply::Outcome::kOk;
          r->value.assign(reply->str, reply->len);
          return;
        }
        break;
      case REDIS_REPLY_STATUS:
        if (kind == Request::Kind::kPut) {
          r->outcome = Reply::Outcome::kOk;
          return;
        }
        break;
      case REDIS_REPLY_INTEGER:
        if (kind == Request::Kind::kDelete) {
          r->outcome = Reply::Outcome::kOk;
          return;
        }
        break;
      default:
        break;
    }
    r->error = "redis: unexpected reply type " + std::to_string(reply->type);
  }

  ContextPtr c_;
};

class RedisFactory : public BackendFactory {
 public:
  explicit RedisFactory(const RedisTarget& t) : target_(t) {}
  std::string name() const override { return "redis"; }

  kv::Result<std::unique_ptr<Backend>> Connect() override {
    auto c = Dial(target_.server);
    if (!c.ok()) return c.status();
    return std::unique_ptr<Backend>(
        std::make_unique<RedisBackend>(std::move(*c)));
  }

  kv::Result<Facts> Describe() override {
    auto c = Dial(target_.server);
    if (!c.ok()) return c.status();
    Facts facts;
    ReplyPtr info(
        static_cast<redisReply*>(redisCommand(c->get(), "INFO server")));
    if (info == nullptr) return ContextError(c->get());
    if (info->type == REDIS_REPLY_STRING) {
      std::istringstream lines(std::string(info->str, info->len));
      std::string line;
      while (std::getline(lines, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.rfind("redis_version:", 0) == 0) {
          facts.emplace_back("redis_version", line.substr(14));
        }
      }
    }
    for (const char* param : {"appendonly", "appendfsync", "save"}) {
      ReplyPtr r(static_cast<redisReply*>(
          redisCommand(c->get(), "CONFIG GET %s", param)));
      if (r == nullptr) return ContextError(c->get());
      if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
          r->element[1]->type == REDIS_REPLY_STRING) {
        facts.emplace_back(param,
                           std::string(r->element[1]->str, r->element[1]->len));
      }
    }
    return facts;
  }

 private:
  RedisTarget target_;
};

}  // namespace

std::unique_ptr<BackendFactory> MakeRedisFactory(const RedisTarget& target) {
  return std::make_unique<RedisFactory>(target);
}

}  // namespace kvbench
