// kv_e2e_raw_putter HOST PORT KEYSPACE N: a client process for crash
// tests. Connects, puts keys "k0".."k{N-1}" (value "v<i>") through the raw
// protocol, printing "acked <i>" after each acknowledged commit, then
// writes one more record ("uncommitted") without committing it, prints
// "mid-put" and waits to be killed (SIGKILL from the test).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "kv/index_format.h"
#include "kv/record_format.h"
#include "raw_client.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s HOST PORT KEYSPACE N\n", argv[0]);
    return 2;
  }
  using namespace kv;
  e2e::RawClient c;
  Status st = c.ConnectTo(argv[1], atoi(argv[2]), argv[3]);
  protocol::Accept a;
  if (st.ok()) st = c.accept(&a);
  if (!st.ok() || a.admit != protocol::Admit::kOk) {
    fprintf(stderr, "connect: %s %s\n", st.ToString().c_str(),
            a.reason.c_str());
    return 1;
  }
  // Grants are lazy: the first REFILL takes one.
  {
    protocol::Header h;
    std::string payload;
    protocol::RefillAck ack;
    st = c.SendMessage(protocol::Type::kRefill, "", 0x7fff0001);
    if (st.ok()) st = c.ReceiveMessage(&h, &payload);
    if (st.ok()) {
      st = protocol::DecodeRefillAck(
          reinterpret_cast<const uint8_t*>(payload.data()), payload.size(),
          a.segment_size, &ack);
    }
    if (!st.ok() || ack.status != StatusCode::kOk) {
      fprintf(stderr, "refill: %s %s\n", st.ToString().c_str(),
              ack.message.c_str());
      return 1;
    }
    a.grant = ack.grant;
  }
  uint64_t tail = a.grant.start;
  const int n = atoi(argv[4]);
  for (int i = 0; i <= n; i++) {
    const std::string key = i < n ? "k" + std::to_string(i) : "uncommitted";
    const std::string value = "v" + std::to_string(i);
    std::string rec(record_format::RecordSize(key.size(), value.size()), '\0');
    record_format::EncodeRecord(rec.data(), a.keyspace_id, 0, false, key,
                                value);
    st = c.Write(a.grant.write_desc, tail - a.grant.start, rec);
    if (!st.ok()) return 1;
    if (i == n) break;
    protocol::Commit cm;
    cm.segment = a.grant.segment;
    cm.grant_id = a.grant.grant_id;
    cm.offset = tail;
    cm.length = static_cast<uint32_t>(rec.size());
    cm.key_hash = index_format::HashKey(key);
    st = c.SendMessage(protocol::Type::kCommit, e2e::CommitPayload(cm), i);
    protocol::Header h;
    std::string payload;
    if (st.ok()) st = c.ReceiveMessage(&h, &payload);
    protocol::CommitAck ack;
    if (st.ok()) {
      st = protocol::DecodeCommitAck(
          reinterpret_cast<const uint8_t*>(payload.data()), payload.size(),
          &ack);
    }
    if (!st.ok() || ack.status != StatusCode::kOk) return 1;
    printf("acked %d\n", i);
    fflush(stdout);
    tail += rec.size();
  }
  printf("mid-put\n");
  fflush(stdout);
  for (;;) pause();
}
