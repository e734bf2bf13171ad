// kvserver admission: what the connect private data and HELLO decide.
#include <gtest/gtest.h>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

using protocol::Admit;

class ServerAdmissionTest : public ServerTest {};

TEST_F(ServerAdmissionTest, AdmitsDefaultKeyspaceWithGeometryAndGrant) {
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  EXPECT_EQ(a.segment_size, 1u << 20);
  EXPECT_EQ(a.grant.size, a.segment_size);
  EXPECT_GT(a.bucket_count, 0u);
  EXPECT_GT(a.max_inflight, 0);
  EXPECT_NE(a.session_id, 0u);
  EXPECT_EQ(a.flags & protocol::kAcceptPmem, 0);  // a file pool: page
}

TEST_F(ServerAdmissionTest, CommitsARecordWrittenIntoTheGrant) {
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  protocol::CommitAck ack;
  Status st = PutRaw(&c, a, a.grant, a.grant.start, "key", "value", &ack);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
  EXPECT_NE(ack.sequence, 0u);
  EXPECT_EQ(ack.flags & protocol::kAckHadPrevious, 0);
  // The record is readable through the read region where the ack says.
  std::string rec;
  st = c.Read(a.read_desc, a.log_offset + ack.log_offset, ack.length, &rec);
  ASSERT_TRUE(st.ok()) << st.ToString();
  record_format::RecordView view;
  ASSERT_TRUE(
      record_format::VerifyRecord(rec.data(), rec.size(), a.keyspace_id, &view)
          .ok());
  EXPECT_EQ(view.key, "key");
  EXPECT_EQ(view.value, "value");
  EXPECT_EQ(view.header.sequence, ack.sequence);
}

}  // namespace
}  // namespace kv::e2e
