// The rpkv backend: kv::Client, one per thread; a kv::Batch carries the
// operations of one Execute when there are several (--qd > 1).
#include <sstream>

#include "backend.h"
#include "kv/client/client.h"

namespace kvbench {
namespace {

void FillReply(const kv::Status& st, Reply* r) {
  if (st.ok()) {
    r->outcome = Reply::Outcome::kOk;
  } else if (st.IsNotFound()) {
    r->outcome = Reply::Outcome::kNotFound;
  } else {
    r->outcome = Reply::Outcome::kError;
    r->error = st.ToString();
  }
}

bool IsConnectionError(const kv::Status& st) {
  return st.code() == kv::StatusCode::kUnavailable;
}

class RpkvBackend : public Backend {
 public:
  explicit RpkvBackend(std::unique_ptr<kv::Client> client)
      : client_(std::move(client)) {}

  kv::Status Execute(std::span<const Request> requests,
                     std::vector<Reply>* replies) override {
    replies->assign(requests.size(), Reply{});
    if (requests.size() == 1) return ExecuteOne(requests[0], &(*replies)[0]);
    batch_.Clear();
    for (const Request& q : requests) {
      switch (q.kind) {
        case Request::Kind::kGet:
          batch_.Get(q.key);
          break;
        case Request::Kind::kPut:
          batch_.Put(q.key, q.value);
          break;
        case Request::Kind::kDelete:
          batch_.Delete(q.key);
          break;
      }
    }
    kv::Status st = client_->Execute(&batch_);
    for (size_t i = 0; i < requests.size(); i++) {
      Reply& r = (*replies)[i];
      if (!st.ok()) {
        r.error = st.ToString();
        continue;
      }
      const kv::Batch::Result& res = batch_.result(i);
      FillReply(res.status, &r);
      if (r.outcome == Reply::Outcome::kOk &&
          requests[i].kind == Request::Kind::kGet) {
        r.value = res.value;
      }
    }
    return st;
  }

  kv::Status Ping() override { return client_->Ping().status(); }

 private:
  kv::Status ExecuteOne(const Request& q, Reply* r) {
    kv::Status st;
    switch (q.kind) {
      case Request::Kind::kGet:
        st = client_->Get(q.key, &r->value);
        break;
      case Request::Kind::kPut:
        st = client_->Put(q.key, q.value);
        break;
      case Request::Kind::kDelete:
        st = client_->Delete(q.key);
        break;
    }
    FillReply(st, r);
    return IsConnectionError(st) ? st : kv::Status::Ok();
  }

  std::unique_ptr<kv::Client> client_;
  kv::Batch batch_;
};

class RpkvFactory : public BackendFactory {
 public:
  explicit RpkvFactory(const RpkvTarget& t) {
    options_.server = t.server;
    options_.cluster = t.cluster;
    options_.cluster_name = t.cluster_name;
    options_.keyspace = t.keyspace;
    options_.access_key = t.access_key;
    options_.create_if_missing = t.create;
    options_.wait = t.wait == "poll"    ? kv::ClientOptions::Wait::kPoll
                    : t.wait == "block" ? kv::ClientOptions::Wait::kBlock
                                        : kv::ClientOptions::Wait::kAdaptive;
    options_.spin_us = t.spin_us;
    if (t.qd > options_.max_inflight) options_.max_inflight = t.qd;
  }

  std::string name() const override { return "rpkv"; }

  kv::Result<std::unique_ptr<Backend>> Connect() override {
    auto c = kv::Client::Connect(options_);
    if (!c.ok()) return c.status();
    return std::unique_ptr<Backend>(
        std::make_unique<RpkvBackend>(std::move(*c)));
  }

  kv::Result<Facts> Describe() override {
    auto c = kv::Client::Connect(options_);
    if (!c.ok()) return c.status();
    Facts facts;
    facts.emplace_back("client_max_value_size",
                       std::to_string((*c)->max_value_size()));
    auto info = (*c)->Info(kv::Client::InfoTopic::kServer);
    if (!info.ok()) return info.status();
    // "name value" lines: provider, pool granularity, geometry, version.
    std::istringstream lines(*info);
    std::string line;
    while (std::getline(lines, line)) {
      size_t sp = line.find(' ');
      if (line.empty()) continue;
      if (sp == std::string::npos) {
        facts.emplace_back(line, "");
      } else {
        facts.emplace_back(line.substr(0, sp), line.substr(sp + 1));
      }
    }
    return facts;
  }

 private:
  kv::ClientOptions options_;
};

}  // namespace

std::unique_ptr<BackendFactory> MakeRpkvFactory(const RpkvTarget& target) {
  return std::make_unique<RpkvFactory>(target);
}

}  // namespace kvbench
