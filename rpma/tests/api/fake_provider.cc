// The recording, failure-injecting provider; see fake_provider.h.
#include "fake_provider.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "provider/device_registry.h"
#include "tcp/tcp_device.h"

namespace rpma_test {

using rpma::prov::CmChannel;
using rpma::prov::CmEvent;
using rpma::prov::CmId;
using rpma::prov::CompletionChannel;
using rpma::prov::Cq;
using rpma::prov::Listener;
using rpma::prov::Mr;
using rpma::prov::Pd;
using rpma::prov::Qp;
using rpma::prov::QpInit;
using rpma::prov::RecvWr;
using rpma::prov::SendWr;
using rpma::prov::Srq;

namespace {

std::string Fmt(const char* fmt, long a, long b = 0) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), fmt, a, b);
  return buf;
}

class FakeMr : public Mr {
 public:
  FakeMr(FakeDevice* dev, std::unique_ptr<Mr> inner)
      : dev_(dev), inner_(std::move(inner)) {
    addr_ = inner_->addr();
    length_ = inner_->length();
    lkey_ = inner_->lkey();
    rkey_ = inner_->rkey();
    access_ = inner_->access();
  }
  ~FakeMr() override { dev_->Record("~Mr"); }
  int RaiseRemoteFloor(size_t offset) override {
    if (int e = dev_->Inject("RaiseRemoteFloor")) return e;
    return inner_->RaiseRemoteFloor(offset);
  }

 private:
  FakeDevice* const dev_;
  std::unique_ptr<Mr> inner_;
};

class FakeCompletionChannel : public CompletionChannel {
 public:
  FakeCompletionChannel(FakeDevice* dev,
                        std::unique_ptr<CompletionChannel> inner)
      : dev_(dev), inner_(std::move(inner)) {}
  ~FakeCompletionChannel() override;
  int fd() const override { return inner_->fd(); }
  int GetEvent(Cq** cq) override;
  CompletionChannel* inner() const { return inner_.get(); }
  int cqs = 0;  // live CQs on it (guarded by dev_->mu())

 private:
  FakeDevice* const dev_;
  std::unique_ptr<CompletionChannel> inner_;
};

}  // namespace

class FakeCq : public Cq {
 public:
  FakeCq(FakeDevice* dev, std::unique_ptr<Cq> inner, FakeCompletionChannel* ch)
      : dev_(dev), inner_(std::move(inner)), ch_(ch) {
    std::lock_guard<std::mutex> lock(dev_->mu());
    dev_->cqs[inner_.get()] = this;
    if (ch_ != nullptr) ch_->cqs++;
  }
  ~FakeCq() override {
    {
      std::lock_guard<std::mutex> lock(dev_->mu());
      if (qps > 0) dev_->Record("VIOLATION Cq destroyed under a live QP");
      dev_->cqs.erase(inner_.get());
      if (ch_ != nullptr) ch_->cqs--;
    }
    dev_->Record("~Cq");
  }
  int Poll(int n, struct ibv_wc* wc) override {
    if (int e = dev_->Inject("Poll")) return e;
    return inner_->Poll(n, wc);
  }
  int RequestNotify() override {
    if (int e = dev_->Inject("RequestNotify")) return e;
    return inner_->RequestNotify();
  }
  void AckEvents(unsigned n) override { inner_->AckEvents(n); }
  CompletionChannel* channel() const override { return ch_; }
  Cq* inner() const { return inner_.get(); }
  int qps = 0;  // live QPs using it (guarded by dev_->mu())

 private:
  FakeDevice* const dev_;
  std::unique_ptr<Cq> inner_;
  FakeCompletionChannel* const ch_;
};

namespace {

FakeCompletionChannel::~FakeCompletionChannel() {
  {
    std::lock_guard<std::mutex> lock(dev_->mu());
    if (cqs > 0)
      dev_->Record("VIOLATION CompletionChannel destroyed under a live CQ");
  }
  dev_->Record("~CompletionChannel");
}

int FakeCompletionChannel::GetEvent(Cq** cq) {
  if (int e = dev_->Inject("GetCqEvent")) return e;
  Cq* inner = nullptr;
  int rc = inner_->GetEvent(&inner);
  if (rc != 0) return rc;
  std::lock_guard<std::mutex> lock(dev_->mu());
  auto it = dev_->cqs.find(inner);
  *cq = it != dev_->cqs.end() ? it->second : nullptr;
  return 0;
}

class FakeSrq : public Srq {
 public:
  FakeSrq(FakeDevice* dev, std::unique_ptr<Srq> inner)
      : dev_(dev), inner_(std::move(inner)) {}
  ~FakeSrq() override { dev_->Record("~Srq"); }
  int PostRecv(const RecvWr& wr) override {
    if (int e = dev_->Inject("SrqPostRecv")) return e;
    return inner_->PostRecv(wr);
  }
  Srq* inner() const { return inner_.get(); }

 private:
  FakeDevice* const dev_;
  std::unique_ptr<Srq> inner_;
};

class FakeQp : public Qp {
 public:
  FakeQp(FakeDevice* dev, Qp* inner) : dev_(dev), inner_(inner) {}
  Qp* inner() const { return inner_; }
  uint32_t qp_num() const override { return inner_->qp_num(); }
  int PostSend(const SendWr& wr) override {
    dev_->Record(Fmt("PostSend op=%ld flags=%ld", static_cast<long>(wr.opcode),
                     (wr.signaled ? 1 : 0) | (wr.fence ? 2 : 0) |
                         (wr.inline_data ? 4 : 0) | (wr.more ? 8 : 0)));
    if (int e = dev_->Inject("PostSend")) return e;
    return inner_->PostSend(wr);
  }
  int PostRecv(const RecvWr& wr) override {
    if (int e = dev_->Inject("PostRecv")) return e;
    return inner_->PostRecv(wr);
  }

 private:
  FakeDevice* const dev_;
  Qp* const inner_;  // owned by the inner CmId
};

class FakeListener : public Listener {
 public:
  FakeListener(FakeDevice* dev, std::unique_ptr<Listener> inner)
      : dev_(dev), inner_(std::move(inner)) {}
  ~FakeListener() override {
    inner_.reset();
    dev_->Record("~Listener");
  }

 private:
  FakeDevice* const dev_;
  std::unique_ptr<Listener> inner_;
};

}  // namespace

class FakeCmChannel : public CmChannel {
 public:
  FakeCmChannel(FakeDevice* dev, std::unique_ptr<CmChannel> inner)
      : dev_(dev), inner_(std::move(inner)) {}
  ~FakeCmChannel() override;
  int fd() const override { return inner_->fd(); }
  int GetEvent(CmEvent* event) override;
  CmChannel* inner() const { return inner_.get(); }

 private:
  FakeDevice* const dev_;
  std::unique_ptr<CmChannel> inner_;
};

// The tcp Pd inside a FakePd; null for anything else (after FakePd).
Pd* FakePdInner(Pd* pd);

class FakeCmId : public CmId {
 public:
  FakeCmId(FakeDevice* dev, std::unique_ptr<CmId> inner, FakeCmChannel* ch)
      : dev_(dev), inner_(std::move(inner)), channel_(ch) {
    std::lock_guard<std::mutex> lock(dev_->mu());
    dev_->ids[inner_.get()] = this;
    dev_->live_ids.insert(this);
  }
  ~FakeCmId() override {
    {
      std::lock_guard<std::mutex> lock(dev_->mu());
      dev_->ids.erase(inner_.get());
      dev_->live_ids.erase(this);
      for (FakeCq* cq : {send_cq_, recv_cq_}) {
        bool live = false;
        for (auto& kv : dev_->cqs) live = live || kv.second == cq;
        if (cq != nullptr && live) cq->qps--;
      }
    }
    qp_.reset();
    inner_.reset();  // the QP, then the id
    dev_->Record("~CmId");
  }
  // init with the fake CQs replaced by the tcp ones they wrap; false when
  // a CQ is missing or not a fake one.
  static bool Unwrap(const QpInit& init, QpInit* in, FakeCq** scq,
                     FakeCq** rcq) {
    *scq = dynamic_cast<FakeCq*>(init.send_cq);
    *rcq = dynamic_cast<FakeCq*>(init.recv_cq);
    if (*scq == nullptr || *rcq == nullptr) return false;
    *in = init;
    in->send_cq = (*scq)->inner();
    in->recv_cq = (*rcq)->inner();
    return true;
  }
  int CreateQp(const QpInit& init) override {
    if (int e = dev_->Inject("CreateQp")) return e;
    FakeCq* scq = nullptr;
    FakeCq* rcq = nullptr;
    QpInit in;
    if (!Unwrap(init, &in, &scq, &rcq)) return -EINVAL;
    if (init.srq != nullptr) {
      auto* srq = dynamic_cast<FakeSrq*>(init.srq);
      if (srq == nullptr) return -EINVAL;
      in.srq = srq->inner();
    }
    int rc = inner_->CreateQp(in);
    if (rc != 0) return rc;
    qp_ = std::make_unique<FakeQp>(dev_, inner_->qp());
    {
      std::lock_guard<std::mutex> lock(dev_->mu());
      send_cq_ = scq;
      recv_cq_ = rcq;
      scq->qps++;
      if (rcq != scq)
        rcq->qps++;
      else
        recv_cq_ = nullptr;  // counted once
    }
    dev_->Record(Fmt("CreateQp sq=%ld rq=%ld", init.sq_size, init.rq_size));
    return 0;
  }
  Qp* qp() const override { return qp_.get(); }
  int ReplaceQp(const QpInit& init) override {
    dev_->Record("ReplaceQp");
    if (int e = dev_->Inject("ReplaceQp")) return e;
    FakeCq* scq = nullptr;
    FakeCq* rcq = nullptr;
    QpInit in;
    if (!Unwrap(init, &in, &scq, &rcq)) return -EINVAL;
    int rc = inner_->ReplaceQp(in);
    if (rc != 0) return rc;
    qp_ = std::make_unique<FakeQp>(dev_, inner_->qp());
    std::lock_guard<std::mutex> lock(dev_->mu());
    for (FakeCq* cq : {send_cq_, recv_cq_}) {
      if (cq != nullptr) cq->qps--;  // the old QP is gone
    }
    send_cq_ = scq;
    recv_cq_ = rcq != scq ? rcq : nullptr;  // counted once
    scq->qps++;
    if (rcq != scq) rcq->qps++;
    return 0;
  }
  int MoveQp(Pd* pd) override {
    dev_->Record("MoveQp");
    if (int e = dev_->Inject("MoveQp")) return e;
    Pd* inner = FakePdInner(pd);
    if (inner == nullptr) return -EINVAL;
    return inner_->MoveQp(inner);
  }
  int Migrate(CmChannel* channel) override {
    if (int e = dev_->Inject("Migrate")) return e;
    auto* ch = dynamic_cast<FakeCmChannel*>(channel);
    if (ch == nullptr) return -EINVAL;
    int rc = inner_->Migrate(ch->inner());
    if (rc != 0) return rc;
    std::lock_guard<std::mutex> lock(dev_->mu());
    channel_ = ch;
    dev_->Record("Migrate");
    return 0;
  }
  int Connect(const void* pdata, uint8_t len) override {
    dev_->Record(Fmt("Connect len=%ld", len));
    if (int e = dev_->Inject("Connect")) return e;
    return inner_->Connect(pdata, len);
  }
  int Accept(const void* pdata, uint8_t len) override {
    dev_->Record(Fmt("Accept len=%ld", len));
    if (int e = dev_->Inject("Accept")) return e;
    return inner_->Accept(pdata, len);
  }
  int Reject() override {
    dev_->Record("Reject");
    if (int e = dev_->Inject("Reject")) return e;
    return inner_->Reject();
  }
  int Disconnect() override {
    dev_->Record("Disconnect");
    if (int e = dev_->Inject("Disconnect")) return e;
    return inner_->Disconnect();
  }
  FakeCmChannel* channel() const { return channel_; }  // under dev_->mu()

 private:
  FakeDevice* const dev_;
  std::unique_ptr<CmId> inner_;
  FakeCmChannel* channel_;
  std::unique_ptr<FakeQp> qp_;
  FakeCq* send_cq_ = nullptr;
  FakeCq* recv_cq_ = nullptr;
};

FakeCmChannel::~FakeCmChannel() {
  {
    std::lock_guard<std::mutex> lock(dev_->mu());
    for (FakeCmId* id : dev_->live_ids) {
      // verbs: rdma_destroy_id() of such an id touches the freed channel.
      if (id->channel() == this)
        dev_->Record("VIOLATION CmChannel destroyed under a live CmId");
    }
  }
  inner_.reset();  // drops (rejects) pending requests: their ids are inner
  dev_->Record("~CmChannel");
}

int FakeCmChannel::GetEvent(CmEvent* event) {
  if (int e = dev_->Inject("GetCmEvent")) return e;
  CmEvent ev;
  int rc = inner_->GetEvent(&ev);
  if (rc != 0) return rc;
  if (ev.new_id != nullptr) {
    auto id = std::make_unique<FakeCmId>(dev_, std::move(ev.new_id), this);
    ev.id = id.get();
    ev.new_id = std::move(id);
  } else {
    std::lock_guard<std::mutex> lock(dev_->mu());
    auto it = dev_->ids.find(ev.id);
    ev.id = it != dev_->ids.end() ? it->second : nullptr;
  }
  dev_->Record(Fmt("CmEvent %ld", static_cast<long>(ev.type)));
  *event = std::move(ev);
  return 0;
}

namespace {

class FakePd : public Pd {
 public:
  FakePd(FakeDevice* dev, std::unique_ptr<Pd> inner)
      : dev_(dev), inner_(std::move(inner)) {}
  ~FakePd() override {
    inner_.reset();
    dev_->Record("~Pd");
  }
  Pd* inner() const { return inner_.get(); }
  int RegMrForQp(Qp* qp, void* addr, size_t length, int access,
                 std::unique_ptr<Mr>* out) override {
    dev_->Record("RegMrForQp");
    if (int e = dev_->Inject("RegMrForQp")) return e;
    auto* fqp = dynamic_cast<FakeQp*>(qp);
    if (fqp == nullptr) return -EINVAL;
    std::unique_ptr<Mr> mr;
    int rc = inner_->RegMrForQp(fqp->inner(), addr, length, access, &mr);
    if (rc != 0) return rc;
    *out = std::make_unique<FakeMr>(dev_, std::move(mr));
    return 0;
  }
  int RegMr(void* addr, size_t length, int access,
            std::unique_ptr<Mr>* out) override {
    dev_->Record(
        Fmt("RegMr access=0x%lx len=%ld", access, static_cast<long>(length)));
    if (int e = dev_->Inject("RegMr")) return e;
    std::unique_ptr<Mr> mr;
    int rc = inner_->RegMr(addr, length, access, &mr);
    if (rc != 0) return rc;
    *out = std::make_unique<FakeMr>(dev_, std::move(mr));
    return 0;
  }
  int CreateCompletionChannel(
      std::unique_ptr<CompletionChannel>* out) override {
    if (int e = dev_->Inject("CreateCompletionChannel")) return e;
    std::unique_ptr<CompletionChannel> ch;
    int rc = inner_->CreateCompletionChannel(&ch);
    if (rc != 0) return rc;
    *out = std::make_unique<FakeCompletionChannel>(dev_, std::move(ch));
    dev_->Record("CreateCompletionChannel");
    return 0;
  }
  int CreateCq(int cqe, CompletionChannel* channel,
               std::unique_ptr<Cq>* out) override {
    if (int e = dev_->Inject("CreateCq")) return e;
    FakeCompletionChannel* ch = nullptr;
    if (channel != nullptr) {
      ch = dynamic_cast<FakeCompletionChannel*>(channel);
      if (ch == nullptr) return -EINVAL;
    }
    std::unique_ptr<Cq> cq;
    int rc = inner_->CreateCq(cqe, ch != nullptr ? ch->inner() : nullptr, &cq);
    if (rc != 0) return rc;
    *out = std::make_unique<FakeCq>(dev_, std::move(cq), ch);
    dev_->Record(Fmt("CreateCq cqe=%ld", cqe));
    return 0;
  }
  int CreateSrq(uint32_t max_wr, std::unique_ptr<Srq>* out) override {
    if (int e = dev_->Inject("CreateSrq")) return e;
    std::unique_ptr<Srq> srq;
    int rc = inner_->CreateSrq(max_wr, &srq);
    if (rc != 0) return rc;
    *out = std::make_unique<FakeSrq>(dev_, std::move(srq));
    dev_->Record("CreateSrq");
    return 0;
  }
  int CreateCmChannel(std::unique_ptr<CmChannel>* out) override {
    if (int e = dev_->Inject("CreateCmChannel")) return e;
    std::unique_ptr<CmChannel> ch;
    int rc = inner_->CreateCmChannel(&ch);
    if (rc != 0) return rc;
    *out = std::make_unique<FakeCmChannel>(dev_, std::move(ch));
    dev_->Record("CreateCmChannel");
    return 0;
  }
  int Listen(const char* addr, const char* port, CmChannel* channel,
             std::unique_ptr<Listener>* out) override {
    if (int e = dev_->Inject("Listen")) return e;
    auto* ch = dynamic_cast<FakeCmChannel*>(channel);
    if (ch == nullptr) return -EINVAL;
    std::unique_ptr<Listener> l;
    int rc = inner_->Listen(addr, port, ch->inner(), &l);
    if (rc != 0) return rc;
    *out = std::make_unique<FakeListener>(dev_, std::move(l));
    dev_->Record("Listen");
    return 0;
  }
  int CreateActiveId(const char* addr, const char* port, int timeout_ms,
                     std::unique_ptr<CmId>* out) override {
    if (int e = dev_->Inject("CreateActiveId")) return e;
    std::unique_ptr<CmId> id;
    int rc = inner_->CreateActiveId(addr, port, timeout_ms, &id);
    if (rc != 0) return rc;
    *out = std::make_unique<FakeCmId>(dev_, std::move(id), nullptr);
    dev_->Record("CreateActiveId");
    return 0;
  }

 private:
  FakeDevice* const dev_;
  std::unique_ptr<Pd> inner_;
};

}  // namespace

Pd* FakePdInner(Pd* pd) {
  auto* fpd = dynamic_cast<FakePd*>(pd);
  return fpd != nullptr ? fpd->inner() : nullptr;
}

FakeDevice* FakeDevice::Create(const char* addr, rpma::prov::DeviceCaps caps) {
  // The inner tcp device serves what this one claims (an emulated tcp
  // target refuses native flush / atomic write).
  rpma::prov::DeviceCaps inner_caps;
  inner_caps.native_flush = caps.native_flush;
  inner_caps.native_atomic_write = caps.native_atomic_write;
  inner_caps.iwarp = caps.iwarp;
  rpma::prov::Device* inner = nullptr;
  if (rpma::prov::tcp::GetDeviceWithCaps(addr, true, inner_caps, &inner) != 0)
    return nullptr;
  auto* dev = new FakeDevice(inner, caps);
  rpma::prov::DeviceRegistry::Instance().Adopt(
      std::unique_ptr<rpma::prov::Device>(dev));
  return dev;
}

FakeDevice::FakeDevice(rpma::prov::Device* inner, rpma::prov::DeviceCaps caps)
    : inner_(inner), caps_(caps) {
  std::memset(&dev_, 0, sizeof(dev_));
  std::memset(&ctx_, 0, sizeof(ctx_));
  dev_.node_type = caps.iwarp ? IBV_NODE_RNIC : IBV_NODE_CA;
  dev_.transport_type = caps.iwarp ? IBV_TRANSPORT_IWARP : IBV_TRANSPORT_IB;
  std::snprintf(dev_.name, sizeof(dev_.name), "rpma_fake");
  ctx_.device = &dev_;
  ctx_.cmd_fd = -1;
  ctx_.async_fd = -1;
}

int FakeDevice::AllocPd(std::unique_ptr<Pd>* out) {
  if (int e = Inject("AllocPd")) return e;
  std::unique_ptr<Pd> pd;
  int rc = inner_->AllocPd(&pd);
  if (rc != 0) return rc;
  *out = std::make_unique<FakePd>(this, std::move(pd));
  Record("AllocPd");
  return 0;
}

void FakeDevice::Record(const std::string& what) {
  std::lock_guard<std::mutex> lock(log_mu_);
  log_.push_back(what);
}

std::vector<std::string> FakeDevice::log() const {
  std::lock_guard<std::mutex> lock(log_mu_);
  return log_;
}

void FakeDevice::ClearLog() {
  std::lock_guard<std::mutex> lock(log_mu_);
  log_.clear();
}

std::vector<std::string> FakeDevice::Matching(const std::string& prefix) const {
  std::vector<std::string> out;
  for (const auto& e : log())
    if (e.compare(0, prefix.size(), prefix) == 0) out.push_back(e);
  return out;
}

int FakeDevice::Find(const std::string& prefix, int from) const {
  std::vector<std::string> l = log();
  for (int i = from; i < static_cast<int>(l.size()); ++i)
    if (l[i].compare(0, prefix.size(), prefix) == 0) return i;
  return -1;
}

void FakeDevice::Fail(const std::string& op, int err, int nth) {
  std::lock_guard<std::mutex> lock(log_mu_);
  std::vector<int>& v = fail_[op];
  if (static_cast<int>(v.size()) < nth) v.resize(nth, 0);
  v[nth - 1] = err;
}

int FakeDevice::Inject(const std::string& op) {
  std::lock_guard<std::mutex> lock(log_mu_);
  auto it = fail_.find(op);
  if (it == fail_.end() || it->second.empty()) return 0;
  int e = it->second.front();
  it->second.erase(it->second.begin());
  if (e != 0) log_.push_back("INJECTED " + op);
  return e;
}

}  // namespace rpma_test
