// What EtcdHttp does beyond the contract: its options, failover between
// endpoints, the messages for an unreachable etcd, hostile answers (a
// scripted HTTP peer plays a broken etcd), and the watch's resume request.
#include "kv/cluster/etcd_http.h"

#include <gtest/gtest.h>

#include "etcd_process.h"
#include "scripted_http_server.h"

namespace kv::cluster::testing {
namespace {

using std::chrono::milliseconds;

std::unique_ptr<EtcdHttp> Open(std::vector<Endpoint> eps,
                               milliseconds timeout = milliseconds(2000),
                               size_t max_answer = 64 << 20) {
  EtcdHttp::Options o;
  o.endpoints = std::move(eps);
  o.connect_timeout = milliseconds(500);
  o.request_timeout = timeout;
  o.max_answer_bytes = max_answer;
  Result<std::unique_ptr<EtcdHttp>> e = EtcdHttp::Open(std::move(o));
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(e.value()) : nullptr;
}

Endpoint ClosedPort() { return {"127.0.0.1", std::to_string(PickFreePort())}; }

bool Has(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

const char kHeader[] = R"("header":{"revision":"9"})";

std::string WatchLine(const std::string& fields) {
  return std::string(R"({"result":{)") + kHeader + "," + fields + "}}\n";
}
std::string Event(int rev, const char* key_b64) {
  return std::string(R"({"kv":{"key":")") + key_b64 +
         R"(","create_revision":"1","mod_revision":")" + std::to_string(rev) +
         R"(","value":"eA=="}})";
}

TEST(EtcdHttpTest, OpenRefusesBadOptions) {
  EXPECT_TRUE(EtcdHttp::Open(EtcdHttp::Options{}).status().IsInvalidArgument());
  EtcdHttp::Options o;
  o.endpoints = {ClosedPort()};
  o.request_timeout = milliseconds(0);
  EXPECT_TRUE(EtcdHttp::Open(o).status().IsInvalidArgument());
  EXPECT_TRUE(
      EtcdHttp::Open("http://127.0.0.1:2379").status().IsInvalidArgument());
  EXPECT_TRUE(EtcdHttp::Open("etcd://127.0.0.1:2379").ok());
}

TEST(EtcdHttpTest, RefusedConnectionIsUnavailableAndSaysWhatToDo) {
  Endpoint down = ClosedPort();
  auto etcd = Open({down});
  for (Status s : {etcd->Get("k").status(), etcd->Put("k", "v").status(),
                   etcd->LeaseGrant(5).status()}) {
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_TRUE(
        Has(s, "etcd at " + down.ToString() + " refused the connection"))
        << s.ToString();
    EXPECT_TRUE(Has(s, "is etcd running?")) << s.ToString();
  }
  auto w = etcd->Watch("m/", 0);
  ASSERT_TRUE(w.ok());
  Result<std::vector<WatchEvent>> got = (*w)->Next(milliseconds(300));
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Has(got.status(), "is etcd running?")) << got.status().ToString();
}

TEST(EtcdHttpTest, AllEndpointsDownNamesThemAll) {
  Endpoint a = ClosedPort(), b = ClosedPort();
  Status s = Open({a, b})->Get("k").status();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Has(s, "no etcd endpoint of etcd://" + a.ToString() + "," +
                         b.ToString() + " answered"))
      << s.ToString();
}

class EtcdHttpRealTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string skip = EtcdBinaryMissing();
    if (!skip.empty()) GTEST_SKIP() << skip;
    Status s = etcd_.Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  EtcdProcess etcd_;
};

TEST_F(EtcdHttpRealTest, FailsOverToTheNextEndpointWhenOneIsDown) {
  auto etcd = Open({ClosedPort(), etcd_.endpoint()});
  Result<int64_t> put = etcd->Put("k", "v");  // a write that never left
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  Result<Range> got = etcd->Get("k");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->kvs.at(0).value, "v");
  auto w = etcd->Watch("k", *put);
  ASSERT_TRUE(w.ok());
  Result<std::vector<WatchEvent>> events = (*w)->Next(milliseconds(5000));
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ(events->at(0).mod_revision, *put);
}

// A write that may have reached etcd is not sent again elsewhere (it could
// apply twice); a read is.
TEST_F(EtcdHttpRealTest, SilentEndpointTimesOutAndOnlyReadsMoveOn) {
  ScriptedHttpServer silent({{"", milliseconds(3000)}});
  auto etcd = Open({silent.endpoint(), etcd_.endpoint()}, milliseconds(300));
  Status put = etcd->Put("k", "v").status();
  EXPECT_EQ(put.code(), StatusCode::kTimedOut) << put.ToString();
  EXPECT_TRUE(Has(put, "did not answer put within 300 ms")) << put.ToString();
  auto direct = Open({etcd_.endpoint()});
  Result<Range> r = direct->Get("k");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->kvs.empty()) << "the put was retried on the second endpoint";
  Result<Range> read = etcd->Get("k");
  EXPECT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_TRUE(etcd->Put("k", "v").ok());  // now on the endpoint that answered
}

TEST(EtcdHttpTest, HostileAnswersAreErrorsNamingTheEndpoint) {
  struct Case {
    std::string reply;
    StatusCode code;
    const char* says;
  } cases[] = {
      {HttpReply(200, "not json"), StatusCode::kCorruption, "not JSON"},
      {HttpReply(200, "{\"header\":{\"revision\":\"x\"}}"),
       StatusCode::kCorruption, "not an int64"},
      {HttpReply(404, "404 page not found"), StatusCode::kCorruption,
       "etcd 3.4 or newer"},
      {HttpReply(200, std::string(4096, ' ')), StatusCode::kCorruption,
       "larger than 1024 bytes"},
      {HttpReply(
           200,
           std::string("{") + kHeader +
               R"(,"kvs":[{"key":"b3RoZXI=","create_revision":"1","mod_revision":"1"}]})"),
       StatusCode::kCorruption, "another key"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"hea",
       StatusCode::kUnavailable, "failed during get"},
      {HttpReply(503, R"({"error":"etcdserver: no leader","code":14})"),
       StatusCode::kUnavailable, "no leader"},
  };
  for (const Case& c : cases) {
    ScriptedHttpServer peer({{c.reply, milliseconds(0)}});
    auto etcd = Open({peer.endpoint()}, milliseconds(2000), 1024);
    Status s = etcd->Get("k").status();
    EXPECT_EQ(s.code(), c.code) << c.reply << " -> " << s.ToString();
    EXPECT_TRUE(Has(s, c.says)) << s.ToString();
    EXPECT_TRUE(Has(s, peer.endpoint().ToString())) << s.ToString();
  }
}

// The resume rule, seen from the wire: after the stream drops, the next
// request asks for the last delivered revision + 1.
TEST(EtcdHttpTest, WatchResumesFromLastPlusOneAfterTheStreamDrops) {
  ScriptedHttpServer peer({
      {HttpStream(WatchLine(R"("created":true)") +
                  WatchLine(R"("events":[)" + Event(5, "bS8x") + "," +
                            Event(6, "bS8y") + "]")),
       milliseconds(0)},
      {HttpStream(WatchLine(R"("created":true)") +
                  WatchLine(R"("events":[)" + Event(7, "bS8z") + "]")),
       milliseconds(3000)},
  });
  auto etcd = Open({peer.endpoint()});
  auto w = etcd->Watch("m/", 5);
  ASSERT_TRUE(w.ok());
  std::vector<int64_t> revs;
  for (int i = 0; i < 20 && revs.size() < 3; ++i) {
    Result<std::vector<WatchEvent>> got = (*w)->Next(milliseconds(300));
    for (const WatchEvent& e : got.ok() ? *got : std::vector<WatchEvent>{}) {
      revs.push_back(e.mod_revision);
    }
  }
  EXPECT_EQ(revs, (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ((*w)->next_revision(), 8);
  std::vector<std::string> requests = peer.requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_NE(requests[0].find(R"("start_revision":"5")"), std::string::npos)
      << requests[0];
  EXPECT_NE(requests[1].find(R"("start_revision":"7")"), std::string::npos)
      << requests[1];
}

// A peer that sends an already delivered revision again is refused: the
// caller sees corruption, and the watch does not move backwards.
TEST(EtcdHttpTest, WatchRefusesARepeatedRevisionAndOutOfPrefixKeys) {
  const std::string created = WatchLine(R"("created":true)");
  ScriptedHttpServer peer({
      {HttpStream(created +
                  WatchLine(R"("events":[)" + Event(5, "bS8x") + "]")),
       milliseconds(0)},
      // Held open: the client drops it, and its next connection waits.
      {HttpStream(created +
                  WatchLine(R"("events":[)" + Event(5, "bS8x") + "]")),
       milliseconds(1000)},
      {HttpStream(created +
                  WatchLine(R"("events":[)" + Event(6, "eg==") + "]")),
       milliseconds(0)},
  });
  auto etcd = Open({peer.endpoint()});
  auto w = etcd->Watch("m/", 5);
  ASSERT_TRUE(w.ok());
  // Each stream also ends (unavailable) before the next connection, and a
  // call may see several connections: look for both refusals.
  bool repeat = false, outside = false;
  for (int i = 0; i < 30 && !(repeat && outside); ++i) {
    Result<std::vector<WatchEvent>> got = (*w)->Next(milliseconds(200));
    if (got.ok()) {
      for (const WatchEvent& e : *got) EXPECT_EQ(e.mod_revision, 5);
      continue;
    }
    const Status& s = got.status();
    EXPECT_TRUE(s.IsCorruption() || s.code() == StatusCode::kUnavailable)
        << s.ToString();
    repeat |= s.IsCorruption() && Has(s, "before the watch's next revision 6");
    outside |= s.IsCorruption() && Has(s, "outside the prefix");
  }
  EXPECT_TRUE(repeat);
  EXPECT_TRUE(outside);
  EXPECT_EQ((*w)->next_revision(), 6);
}

TEST(EtcdHttpTest, WatchRefusedByEtcdIsItsError) {
  ScriptedHttpServer peer(
      {{HttpStream(
            R"({"error":{"grpc_code":3,"http_code":400,"message":"bad range"}})"
            "\n"),
        milliseconds(0)}});
  auto etcd = Open({peer.endpoint()});
  auto w = etcd->Watch("m/", 0);
  ASSERT_TRUE(w.ok());
  Result<std::vector<WatchEvent>> got = (*w)->Next(milliseconds(300));
  EXPECT_TRUE(got.status().IsInvalidArgument()) << got.status().ToString();
  EXPECT_TRUE(Has(got.status(), "bad range")) << got.status().ToString();
}

}  // namespace
}  // namespace kv::cluster::testing
