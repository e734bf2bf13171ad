#include "kv/cluster/membership.h"

namespace kv::cluster {

Result<std::unique_ptr<Membership>> Membership::Join(
    Etcd& etcd, Options options, std::function<void()> on_fence) {
  Result<EtcdKeys> keys = EtcdKeys::ForCluster(options.cluster);
  if (!keys.ok()) return keys.status();
  NodeRegistration reg{options.node_id, options.address, options.started_ms};
  KV_RETURN_IF_ERROR(reg.Validate());

  std::unique_ptr<Clock> own_clock;
  if (options.clock == nullptr) own_clock = std::make_unique<SteadyClock>();
  std::unique_ptr<Membership> m(new Membership(
      etcd, std::move(options), std::move(on_fence), std::move(own_clock)));
  m->registration_ = reg;
  m->key_ = keys->node(reg.node_id);

  Membership* self = m.get();
  Result<std::unique_ptr<LeaseKeeper>> keeper =
      LeaseKeeper::Grant(etcd, *m->clock_, m->options_.lease, [self] {
        if (self->on_fence_) self->on_fence_();
      });
  if (!keeper.ok()) return keeper.status();
  m->keeper_ = std::move(*keeper);

  // Created only while absent: a second live node with our id is refused.
  Result<TxnResult> t =
      etcd.Txn({Compare::Absent(m->key_)},
               {TxnOp::Put(m->key_, reg.Encode(), m->keeper_->lease_id())}, {});
  if (t.ok() && t->succeeded) return m;

  (void)m->keeper_->Revoke();  // leave nothing behind; it expires anyway
  if (!t.ok()) return t.status();
  Result<Range> holder = etcd.Get(m->key_);
  if (!holder.ok()) return holder.status();
  if (holder->kvs.empty()) {
    return Status::Busy("node id " + std::to_string(reg.node_id) +
                        " was registered a moment ago and is free now; "
                        "join again");
  }
  Result<NodeRegistration> other =
      NodeRegistration::Decode(holder->kvs[0].value);
  if (!other.ok()) {
    return Status::Corruption(m->key_ + " holds a bad registration (" +
                              other.status().message() +
                              "); delete the key with etcdctl if no node " +
                              std::to_string(reg.node_id) + " runs");
  }
  return Status::Busy("node id " + std::to_string(reg.node_id) +
                      " is already registered by a live node at " +
                      other->address + " (lease " +
                      std::to_string(holder->kvs[0].lease) +
                      "); stop that node or pick another node id — its "
                      "registration goes when its lease expires");
}

Membership::~Membership() {
  if (keeper_) keeper_->Stop();
}

Result<std::unique_ptr<Membership>> Membership::Rejoin() {
  if (!keeper_->fenced()) {
    return Status::InvalidArgument(
        "Rejoin: the membership is not fenced (Leave first to re-register)");
  }
  KV_RETURN_IF_ERROR(keeper_->Revoke());
  return Join(etcd_, options_, on_fence_);
}

Status Membership::Leave() { return keeper_->Revoke(); }

}  // namespace kv::cluster
