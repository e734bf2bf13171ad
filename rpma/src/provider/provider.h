// The internal provider interface of rpkv's rpma layer.
//
// The librpma semantics (argument checks, ownership, event mapping,
// descriptors, flush types, APM emulation, RPMA_E_* codes) live once in
// rpma/src/*.cc, above this interface. A provider implements it twice over:
//   - tcp   (rpma/src/tcp/):   a software RNIC over TCP sockets;
//   - verbs (rpma/src/verbs/): rdma-core (librdmacm + libibverbs).
// The interface is shaped like verbs + rdma_cm so the verbs provider is a
// thin wrapper and the tcp provider emulates an RC queue pair.
//
// Conventions
//   - Every fallible call returns 0 or a negative errno value (-EINVAL,
//     -ENOMEM, -EAGAIN, -ENODATA, -ECONNREFUSED, ...). The semantic layer
//     maps them to RPMA_E_*. Out-parameters are written only on success.
//   - Each method below lists its errors; both providers return exactly
//     those for the listed conditions (rpma/tests/api/contract_test.cc runs
//     the same TEST_P suite on each). Besides them a provider may return
//     the device's own -errno (verbs) for conditions no contract names.
//   - An object of another provider (or of no provider) passed where one
//     of this provider's is expected: -EINVAL, never undefined behaviour.
//   - Destructors cannot fail: a failing ibv_destroy_* / rdma_destroy_*
//     is logged and the object forgotten. So librpma's RPMA_E_PROVIDER
//     from rpma_mr_dereg, rpma_conn_delete, rpma_ep_shutdown and
//     rpma_srq_delete is never returned (rpma/README.md).
//   - Objects are owned by std::unique_ptr held by the semantic layer.
//     Destruction order the semantic layer guarantees: QP (via its CmId)
//     before the CQs/SRQ it uses; CQs before their CompletionChannel; MRs,
//     CQs, SRQs, CmIds, Listeners and CmChannels before the Pd that made
//     them. Destructors never block on the network for more than a short,
//     bounded time (disconnect/delete must never hang).
//   - Thread-safety: everything on the data path (Qp::PostSend/PostRecv,
//     Srq::PostRecv, Cq::Poll/RequestNotify, CompletionChannel::GetEvent,
//     CmChannel::GetEvent) may be called from any thread concurrently with
//     anything else on other objects. Creating/destroying objects of one Pd
//     may happen from several threads (many connections of one peer).
//   - Completions are `struct ibv_wc` filled completely by the provider
//     (wr_id, status, opcode, byte_len, imm_data in network order with
//     IBV_WC_WITH_IMM in wc_flags, qp_num, vendor_err); for a non-success
//     status only wr_id, status, qp_num and vendor_err are meaningful.
#ifndef RPMA_PROVIDER_PROVIDER_H_
#define RPMA_PROVIDER_PROVIDER_H_

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace rpma::prov {

class Cq;
class CmChannel;
class CmId;
class Pd;

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

// Access rights of a registration (what the *NIC* may do with it).
enum Access : int {
  kAccessLocalWrite = 1 << 0,       // the local NIC may write (recv, read dst)
  kAccessRemoteWrite = 1 << 1,      // peers may RDMA WRITE / atomic-write here
  kAccessRemoteRead = 1 << 2,       // peers may RDMA READ here
  kAccessFlushVisibility = 1 << 3,  // peers may native-flush (visibility)
  kAccessFlushPersistent = 1 << 4,  // peers may native-flush (persistent)
};
inline constexpr int kAccessAll = kAccessLocalWrite | kAccessRemoteWrite |
                                  kAccessRemoteRead | kAccessFlushVisibility |
                                  kAccessFlushPersistent;

// A registered memory region. Immutable after creation; deregistered by
// its destructor, after which the provider never touches the memory again
// (a target-side access racing with the destructor either completes
// before it returns or fails with a remote access error).
class Mr {
 public:
  virtual ~Mr() = default;
  // rpkv extension (rpma_mr_advance): from its return on, every remote
  // access that touches [addr, addr + offset) fails with a remote access
  // error, and no remote write lands there any more (one accepted before
  // and still being placed stops). The bound only moves up. -EINVAL:
  // offset > length() or below the current bound; -EOPNOTSUPP: the
  // provider cannot (verbs: it would need memory-window rebinding).
  virtual int RaiseRemoteFloor(size_t /*offset*/) { return -EOPNOTSUPP; }
  void* addr() const { return addr_; }
  size_t length() const { return length_; }
  uint32_t lkey() const { return lkey_; }
  uint32_t rkey() const { return rkey_; }
  int access() const { return access_; }

 protected:
  void* addr_ = nullptr;
  size_t length_ = 0;
  uint32_t lkey_ = 0;
  uint32_t rkey_ = 0;
  int access_ = 0;
};

// ---------------------------------------------------------------------------
// Completions
// ---------------------------------------------------------------------------

// A pollable notification channel for one or more CQs (ibv_comp_channel).
// fd() is readable while at least one event is pending. The application
// may set O_NONBLOCK on fd(); GetEvent() then returns -EAGAIN instead of
// blocking.
class CompletionChannel {
 public:
  virtual ~CompletionChannel() = default;
  virtual int fd() const = 0;
  // Waits for the next event; *cq is the CQ that fired. -EAGAIN with
  // O_NONBLOCK and nothing pending.
  virtual int GetEvent(Cq** cq) = 0;
  // As GetEvent, for a caller that set O_NONBLOCK on fd() itself and owns
  // the fd (no application sees it: a connection group's channel): never
  // blocks, and the provider need not read the fd's flags to know that.
  virtual int TryGetEvent(Cq** cq) { return GetEvent(cq); }
  // Acknowledges n events of cq got here, as cq->AckEvents(n), for a
  // caller that may race with cq's destruction: verbs' destroy waits for
  // the acknowledgement (cq is alive until then); tcp's acknowledgement
  // is nothing, and it does not touch cq.
  virtual void Ack(Cq* cq, unsigned n);
};

// A completion queue (ibv_cq). Created armed-less; RequestNotify() arms it
// so that the next completion added produces exactly one channel event.
class Cq {
 public:
  virtual ~Cq() = default;
  // Moves up to n completions into wc; returns how many (0 if none).
  // -EINVAL for n <= 0 or a null wc; -EOVERFLOW after an overrun in tcp's
  // strict mode; -EIO (verbs) when the device fails.
  virtual int Poll(int n, struct ibv_wc* wc) = 0;
  // 0; the device's -errno (verbs).
  virtual int RequestNotify() = 0;
  // Acknowledges n events got through GetEvent (ibv_ack_cq_events).
  virtual void AckEvents(unsigned n) = 0;
  virtual CompletionChannel* channel() const = 0;
};

inline void CompletionChannel::Ack(Cq* cq, unsigned n) { cq->AckEvents(n); }

// ---------------------------------------------------------------------------
// Work requests
// ---------------------------------------------------------------------------

enum class Opcode {
  kRead,          // remote [remote_addr, +sge.length) -> local sge
  kWrite,         // local sge -> remote
  kWriteWithImm,  // as kWrite, then consumes a receive at the target
  kAtomicWrite,   // 8 bytes of atomic_data -> remote (8-byte aligned)
  kFlush,         // native flush of [remote_addr, +flush_length)
  kSend,          // local sge -> the target's next receive
  kSendWithImm,
};

// One scatter/gather element. length 0 (and addr null) = no data.
struct Sge {
  void* addr = nullptr;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

enum class FlushType { kPersistent = 0, kVisibility = 1 };

struct SendWr {
  Opcode opcode = Opcode::kSend;
  uint64_t wr_id = 0;
  // Completion generated on success only if signaled; errors always
  // complete. Unsignaled WRs keep their send-queue slot until a later
  // signaled WR of the same QP completes (RC semantics): posting beyond
  // sq_size outstanding slots fails with -ENOMEM.
  bool signaled = false;
  // Wait for all earlier reads/flushes/atomics of this QP to complete
  // before executing (IBV_SEND_FENCE).
  bool fence = false;
  // The sge's bytes are copied at post time; lkey is ignored
  // (IBV_SEND_INLINE). Only for lengths <= max inline (8 on verbs).
  bool inline_data = false;
  // RPMA_EXT_F_MORE: the poster posts again at once; a provider may hold
  // this WR back and send it with the next one (tcp: one sendmsg).
  bool more = false;
  Sge sge;
  uint64_t remote_addr = 0;  // absolute remote virtual address
  uint32_t rkey = 0;
  uint32_t imm_data = 0;  // network byte order, as it will appear in ibv_wc
  uint8_t atomic_data[8] = {};
  FlushType flush_type = FlushType::kPersistent;
  uint64_t flush_length = 0;
};

struct RecvWr {
  uint64_t wr_id = 0;
  Sge sge;  // length 0 = zero-byte receive
};

// Completion opcodes reported per Opcode (both providers): kRead RDMA_READ;
// kWrite/kWriteWithImm RDMA_WRITE; kAtomicWrite RDMA_WRITE (as librpma's
// emulation reports it); kFlush RDMA_READ (as librpma's APM reports it);
// kSend/kSendWithImm SEND. Receives: RECV (byte_len = bytes received), or
// RECV_RDMA_WITH_IMM for a write with immediate (byte_len = bytes written
// by that write, as mlx5 and rxe report it).

// A shared receive queue (ibv_srq).
class Srq {
 public:
  virtual ~Srq() = default;
  virtual int PostRecv(const RecvWr& wr) = 0;  // -ENOMEM when full
};

// Queue sizes are minimums: a device may round them up (mlx5 to a power
// of two), so "-ENOMEM past sq_size" holds only for some post beyond it.

struct QpInit {
  Cq* send_cq = nullptr;  // required
  Cq* recv_cq = nullptr;  // required (may equal send_cq)
  Srq* srq = nullptr;     // optional: receives come from here
  uint32_t sq_size = 10;
  uint32_t rq_size = 10;
};

// A reliable-connected queue pair. Owned by its CmId.
class Qp {
 public:
  virtual ~Qp() = default;
  virtual uint32_t qp_num() const = 0;
  // -ENOMEM: the send queue is full; -EINVAL: the QP never connected, or
  // an unknown opcode; -EOPNOTSUPP (verbs): kFlush, or kAtomicWrite on a
  // device without native atomic write (the semantic layer never posts
  // them then; tcp posts both always). In error: accepted and flushed.
  // A responder whose device lacks native flush / atomic write refuses
  // such a request as a NIC does: the WR completes with
  // IBV_WC_REM_INV_REQ_ERR and both QPs go to error (tcp: a device whose
  // RPMA_TCP_CAPS leaves them off).
  virtual int PostSend(const SendWr& wr) = 0;
  virtual int PostRecv(const RecvWr& wr) = 0;  // -ENOMEM beyond rq_size
};

// ---------------------------------------------------------------------------
// Connection management (rdma_cm)
// ---------------------------------------------------------------------------

enum class CmEventType {
  kConnectRequest,  // passive: a client called Connect(); new_id is set
  kEstablished,     // both sides; private_data = the peer's (accept data
                    // on the active side)
  kRejected,        // active: the server rejected, or nobody listens
  kUnreachable,     // active: the address could not be reached in time
  kConnectError,    // connection failed during establishment
  kDisconnected,    // either side called Disconnect(), or the peer died
  kTimewaitExit,
  kDeviceRemoval,
  kOther,  // anything else (mapped to RPMA_E_UNKNOWN)
};

struct CmEvent {
  CmEventType type = CmEventType::kOther;
  CmId* id = nullptr;                 // the id the event belongs to
  std::unique_ptr<CmId> new_id;       // kConnectRequest only; caller owns it
  std::vector<uint8_t> private_data;  // as sent by the peer (<= 255 bytes)
};

// Private data limits of rdma_cm over InfiniBand/RoCE: the IB CM's REQ and
// REP private data (92 and 196 bytes) minus rdma_cm's 36-byte header on
// the REQ. Every provider refuses more (CmId::Connect / CmId::Accept), so
// what works over tcp works over a NIC.
inline constexpr uint8_t kMaxConnectPrivateData = 56;
inline constexpr uint8_t kMaxAcceptPrivateData = 196;

// A pollable queue of CM events (rdma_event_channel). fd() is readable
// while at least one event is pending; with O_NONBLOCK set on fd(),
// GetEvent() returns -ENODATA when none is pending (librpma maps that to
// RPMA_E_NO_EVENT). Events are returned already acknowledged.
class CmChannel {
 public:
  virtual ~CmChannel() = default;
  virtual int fd() const = 0;
  virtual int GetEvent(CmEvent* event) = 0;
  // As CompletionChannel::TryGetEvent: -ENODATA when none is pending.
  virtual int TryGetEvent(CmEvent* event) { return GetEvent(event); }
};

// One side of one connection (rdma_cm_id). Destroying it destroys its QP,
// drops its pending events and, if still connected, tears the connection
// down (the peer then sees kDisconnected) without blocking.
class CmId {
 public:
  virtual ~CmId() = default;
  // Creates the QP; at most once. -EINVAL: a second call, a missing CQ,
  // or CQs/SRQ of another provider.
  virtual int CreateQp(const QpInit& init) = 0;
  virtual Qp* qp() const = 0;
  // rpkv extension (rpma_conn_req_set_peer): a passive id whose request
  // is not accepted yet moves its QP into `pd` (same device, same QpInit:
  // the CQs are the device's, not the Pd's). From then on the peer's
  // one-sided operations are checked against `pd`'s registrations only,
  // and local buffers must be registered with `pd`. Receives posted
  // before are lost (the caller forbids them). -EINVAL: no QP, an active
  // id, an accepted id, a QP with an SRQ, or a Pd of another provider;
  // the device's -errno (verbs, which recreates the QP: on failure it
  // recreates it in the old Pd; if even that fails the id has no QP and
  // -EIO is returned). -EOPNOTSUPP: a provider without it.
  virtual int MoveQp(Pd* /*pd*/) { return -EOPNOTSUPP; }
  // rpkv extension (rpma_conn_req_set_group): an id whose connection is
  // not established yet (passive: not accepted; active: Connect() not
  // called) replaces its QP with one made from `init` (other CQs), in the
  // same Pd. Receives posted before are lost (the caller forbids them).
  // The old QP no longer refers to its CQs once this returns 0.
  // -EINVAL: no QP yet, an established or connecting id, a missing CQ or
  // CQs/SRQ of another provider; the device's -errno (verbs: on failure
  // the QP is recreated from the old init; if even that fails the id has
  // no QP and -EIO is returned). -EOPNOTSUPP: a provider without it.
  virtual int ReplaceQp(const QpInit& /*init*/) { return -EOPNOTSUPP; }
  // Future events of this id go to `channel`; events of this id already
  // queued on its old channel move along (as rdma_migrate_id). -EINVAL: a
  // null channel or another provider's.
  virtual int Migrate(CmChannel* channel) = 0;
  // Active side: puts the connection request on the wire (the first and
  // only moment anything is sent). Events then arrive on the id's channel.
  // -EINVAL: len > kMaxConnectPrivateData (nothing is sent), len > 0 with
  // null pdata, a second call, or no channel yet (Migrate() first).
  // The peer may receive the private data zero-padded to
  // kMaxConnectPrivateData (IB/RoCE always deliver the whole field; tcp
  // does so in strict mode), never shorter than sent.
  virtual int Connect(const void* pdata, uint8_t len) = 0;
  // Passive side: accepts the request with private data. -EINVAL:
  // len > kMaxAcceptPrivateData (the request stays pending: Reject() it or
  // destroy the id, and the client sees kRejected), len > 0 with null
  // pdata, or an id that is not a pending request. Padding as Connect(),
  // to kMaxAcceptPrivateData.
  virtual int Accept(const void* pdata, uint8_t len) = 0;
  // Passive side: rejects the request; the client sees kRejected.
  virtual int Reject() = 0;
  // Starts (or, after kDisconnected was received, completes) teardown.
  // The disconnect rule of IB/RoCE/rxe, which every caller must allow for:
  // the side that calls Disconnect() first gets its own kDisconnected only
  // after the peer has called Disconnect() too (or destroyed its id, or
  // died), or after a provider timeout of a few seconds; the peer gets
  // kDisconnected at once and must answer with Disconnect() (or by
  // destroying its id). tcp replies on the application's behalf unless in
  // strict mode (RPMA_TCP_STRICT=1), which models the rule.
  virtual int Disconnect() = 0;
};

class Listener {
 public:
  virtual ~Listener() = default;  // stops listening; accepted ids survive
};

// ---------------------------------------------------------------------------
// Device and protection domain
// ---------------------------------------------------------------------------

// What a device can do natively. The semantic layer reads these once per
// peer (rpma_peer_new) and chooses per connection: without native_flush a
// flush is librpma's read-after-write (an 8-byte kRead), without
// native_atomic_write an atomic write is a fenced 8-byte inline kWrite.
// Most RNICs in the field (ConnectX-4/5/6 on rdma-core 44) have neither;
// the tcp device reports them as RPMA_TCP_CAPS says (tcp_device.h).
struct DeviceCaps {
  bool odp = false;
  bool native_atomic_write = false;  // Opcode::kAtomicWrite supported
  bool native_flush = false;         // Opcode::kFlush supported
  // iWARP places RDMA READ responses as remote writes, so a READ_DST
  // region needs kAccessRemoteWrite too (librpma adds it when the device's
  // transport is IBV_TRANSPORT_IWARP). Off on IB/RoCE and, by default, tcp.
  bool iwarp = false;
};

// A protection domain (ibv_pd) plus everything created under it. In the
// tcp provider a Pd owns the progress engine (one per peer, started on
// first need) that serves its listeners' and connections' one-sided
// operations; a connection moved into another Pd (CmId::MoveQp) stays on
// its listener's engine.
class Pd {
 public:
  virtual ~Pd() = default;
  // -EINVAL: null addr, length 0, or access bits outside kAccessAll;
  // the device's -errno (verbs; EOPNOTSUPP is retried with ODP when the
  // device has it).
  virtual int RegMr(void* addr, size_t length, int access,
                    std::unique_ptr<Mr>* out) = 0;
  // rpkv extension (rpma_conn_mr_reg): as RegMr, but remote access is
  // granted only through `qp` (a QP of this Pd): any other QP, even of
  // this Pd and with the right rkey and address, gets a remote access
  // error. Once `qp` is destroyed the region cannot be reached remotely.
  // -EINVAL: as RegMr, or qp null / not a QP of this Pd; -EOPNOTSUPP: the
  // provider cannot (verbs: would need type-2 memory windows).
  virtual int RegMrForQp(Qp* /*qp*/, void* /*addr*/, size_t /*length*/,
                         int /*access*/, std::unique_ptr<Mr>* /*out*/) {
    return -EOPNOTSUPP;
  }
  virtual int CreateCompletionChannel(
      std::unique_ptr<CompletionChannel>* out) = 0;
  // `channel` may be null (a CQ that is only polled). -EINVAL: cqe <= 0,
  // or a channel of another provider.
  virtual int CreateCq(int cqe, CompletionChannel* channel,
                       std::unique_ptr<Cq>* out) = 0;
  // -EINVAL for max_wr 0 (tcp; verbs: the device's answer).
  virtual int CreateSrq(uint32_t max_wr, std::unique_ptr<Srq>* out) = 0;
  virtual int CreateCmChannel(std::unique_ptr<CmChannel>* out) = 0;
  // Listens on addr:port; kConnectRequest events go to `channel`.
  // -EADDRINUSE, -EADDRNOTAVAIL, -EINVAL (unresolvable, null port, or a
  // channel of another provider) as appropriate.
  virtual int Listen(const char* addr, const char* port, CmChannel* channel,
                     std::unique_ptr<Listener>* out) = 0;
  // Active side: resolves addr:port (within timeout_ms) and returns an id
  // with no channel and nothing sent on the wire. timeout_ms bounds
  // address and route resolution only (as rdma_resolve_addr/route). What
  // bounds the connection after Connect() is the provider's: on verbs the
  // kernel CM's retries (a host that answers ARP but not the request gives
  // kUnreachable after about a minute); tcp gives kUnreachable when the
  // TCP connect or its hello is not answered within timeout_ms, and waits
  // up to 30 s for the server application to accept or reject.
  virtual int CreateActiveId(const char* addr, const char* port, int timeout_ms,
                             std::unique_ptr<CmId>* out) = 0;
};

// One RDMA device (or the tcp provider's synthetic one for an address).
// Devices are owned by the registry and live until process exit (librpma
// has no release for contexts).
class Device {
 public:
  virtual ~Device() = default;
  virtual struct ibv_context* context() = 0;
  virtual DeviceCaps caps() const = 0;
  virtual int AllocPd(std::unique_ptr<Pd>* out) = 0;
  virtual const char* provider_name() const = 0;  // "tcp" or "verbs"
};

// ---------------------------------------------------------------------------
// Device discovery: provider entry points. The registry
// (provider/device_registry.h) owns every device they return, maps
// contexts back to devices and does the RPMA_PROVIDER selection.
// ---------------------------------------------------------------------------

// The provider's device for an address (`local` =
// RPMA_UTIL_IBV_CONTEXT_LOCAL), registered on first use.
// -ENODEV when the provider has no device for the address; -EINVAL when
// the address does not resolve (tcp also: RPMA_TCP_CAPS is malformed).
int TcpGetDevice(const char* addr, bool local, Device** out);
int VerbsGetDevice(const char* addr, bool local, Device** out);

// A verbs Device wrapping a real ibv_context (opened by the application
// itself, e.g. with ibv_open_device), registered on first use; null if it
// cannot be wrapped.
Device* VerbsDeviceForContext(struct ibv_context* ctx);

// True if libibverbs sees at least one RDMA device (cheap, silent).
bool VerbsHasDevices();

}  // namespace rpma::prov

#endif  // RPMA_PROVIDER_PROVIDER_H_
