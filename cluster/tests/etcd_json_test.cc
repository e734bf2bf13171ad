// The gateway's JSON: requests as etcd 3.4 reads them, answers as it
// writes them (captured from a real etcd 3.4.23), and hostile answers.
#include "etcd_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace kv::cluster::etcd_json {
namespace {

using nlohmann::json;

constexpr char kHeader[] =
    R"("header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952","revision":"9","raft_term":"2"})";

std::string Answer(const std::string& rest) {
  return std::string("{") + kHeader + (rest.empty() ? "" : "," + rest) + "}";
}

TEST(EtcdJsonTest, PrefixEndIncrementsTheLastByteBelow0xff) {
  EXPECT_EQ(PrefixEnd("a/"), "a0");
  EXPECT_EQ(PrefixEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(PrefixEnd(std::string("\xff\xff", 2)), std::string(1, '\0'));
  EXPECT_EQ(PrefixEnd(""), std::string(1, '\0'));
}

TEST(EtcdJsonTest, RequestsUseBase64AndInt64Strings) {
  json put = json::parse(PutRequest("foo", "bar", 9007199254740993));
  EXPECT_EQ(put["key"], "Zm9v");
  EXPECT_EQ(put["value"], "YmFy");
  EXPECT_EQ(put["lease"], "9007199254740993");  // beyond a double's 2^53
  EXPECT_FALSE(json::parse(PutRequest("k", "", 0)).contains("lease"));
  json txn =
      json::parse(TxnRequest({Compare::ModRevisionIs("a", 4),
                              Compare::Absent("b"), Compare::ValueIs("c", "x")},
                             {TxnOp::Put("a", "2", 7)}, {TxnOp::Delete("b")}));
  EXPECT_EQ(txn["compare"][0]["target"], "MOD");
  EXPECT_EQ(txn["compare"][0]["mod_revision"], "4");
  EXPECT_EQ(txn["compare"][0]["result"], "EQUAL");
  EXPECT_EQ(txn["compare"][1]["target"], "CREATE");
  EXPECT_EQ(txn["compare"][1]["create_revision"], "0");
  EXPECT_EQ(txn["compare"][2]["value"], "eA==");
  EXPECT_EQ(txn["success"][0]["request_put"]["lease"], "7");
  EXPECT_EQ(txn["failure"][0]["request_delete_range"]["key"], "Yg==");
  json w = json::parse(WatchCreateRequest("a/", "a0", 12));
  EXPECT_EQ(w["create_request"]["start_revision"], "12");
  EXPECT_EQ(w["create_request"]["range_end"], "YTA=");
  EXPECT_FALSE(
      json::parse(WatchCreateRequest("a/", "a0", 0))["create_request"].contains(
          "start_revision"));
}

TEST(EtcdJsonTest, DecodesRealAnswers) {
  Result<Range> r = DecodeRange(Answer(
      R"("kvs":[{"key":"Zm9v","create_revision":"2","mod_revision":"5","version":"2","value":"YmFy","lease":"2324035767045864970"}],"count":"1")"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->revision, 9);
  ASSERT_EQ(r->kvs.size(), 1u);
  EXPECT_EQ(r->kvs[0].key, "foo");
  EXPECT_EQ(r->kvs[0].value, "bar");
  EXPECT_EQ(r->kvs[0].create_revision, 2);
  EXPECT_EQ(r->kvs[0].mod_revision, 5);
  EXPECT_EQ(r->kvs[0].lease, 2324035767045864970);
  Result<Range> empty = DecodeRange(Answer(""));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->kvs.empty());
  EXPECT_EQ(DecodePut(Answer("")).value(), 9);
  Result<DeleteResult> d = DecodeDeleteRange(Answer(R"("deleted":"1")"));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->deleted);
  EXPECT_FALSE(DecodeDeleteRange(Answer(""))->deleted);
  Result<TxnResult> t = DecodeTxn(Answer(
      R"("succeeded":true,"responses":[{"response_put":{"header":{"revision":"9"}}}])"));
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->succeeded);
  EXPECT_FALSE(DecodeTxn(Answer(""))->succeeded);
  Result<Lease> l =
      DecodeLeaseGrant(Answer(R"("ID":"2324035767045864970","TTL":"2")"));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->id, 2324035767045864970);
  EXPECT_EQ(l->ttl_s, 2);
  std::string ka = "{\"result\":" + Answer(R"("ID":"77","TTL":"5")") + "}\n";
  EXPECT_EQ(DecodeLeaseKeepAlive(ka, 77).value(), 5);
  EXPECT_TRUE(DecodeHeaderOnly(Answer("")).ok());
}

TEST(EtcdJsonTest, KeepAliveWithoutTtlIsNotFoundAndOfAnotherLeaseCorrupt) {
  std::string gone = "{\"result\":" + Answer(R"("ID":"77")") + "}";
  EXPECT_TRUE(DecodeLeaseKeepAlive(gone, 77).status().IsNotFound());
  std::string other = "{\"result\":" + Answer(R"("ID":"78","TTL":"5")") + "}";
  EXPECT_TRUE(DecodeLeaseKeepAlive(other, 77).status().IsCorruption());
}

TEST(EtcdJsonTest, DecodesWatchLines) {
  Result<WatchMessage> created = DecodeWatchLine(
      "{\"result\":{" + std::string(kHeader) + ",\"created\":true}}");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_TRUE(created->created);
  EXPECT_EQ(created->header_revision, 9);
  Result<WatchMessage> ev = DecodeWatchLine(
      "{\"result\":{" + std::string(kHeader) +
      R"(,"events":[{"kv":{"key":"YQ==","create_revision":"4","mod_revision":"8","version":"3","value":"Mw=="}},{"type":"DELETE","kv":{"key":"YQ==","mod_revision":"9"}}]}})");
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  ASSERT_EQ(ev->events.size(), 2u);
  EXPECT_EQ(ev->events[0].type, WatchEvent::Type::kPut);
  EXPECT_EQ(ev->events[0].value, "3");
  EXPECT_EQ(ev->events[1].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(ev->events[1].mod_revision, 9);
  Result<WatchMessage> compacted = DecodeWatchLine(
      R"({"result":{"header":{"cluster_id":"1","member_id":"2","raft_term":"2"},"canceled":true,"compact_revision":"6"}})");
  ASSERT_TRUE(compacted.ok()) << compacted.status().ToString();
  EXPECT_TRUE(compacted->canceled);
  EXPECT_EQ(compacted->compact_revision, 6);
}

TEST(EtcdJsonTest, MapsEtcdErrorsToStatus) {
  struct Case {
    const char* body;
    StatusCode code;
  } cases[] = {
      {R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5})",
       StatusCode::kNotFound},
      {R"({"error":"etcdserver: key is not provided","code":3})",
       StatusCode::kInvalidArgument},
      {R"({"error":"etcdserver: mvcc: required revision has been compacted","code":11})",
       StatusCode::kNotFound},
      {R"({"error":"etcdserver: mvcc: required revision is a future revision","code":11})",
       StatusCode::kInvalidArgument},
      {R"({"error":"etcdserver: no leader","code":14})",
       StatusCode::kUnavailable},
      {R"({"error":"etcdserver: request timed out","code":14})",
       StatusCode::kTimedOut},
      {R"({"error":"etcdserver: mvcc: database space exceeded","code":8})",
       StatusCode::kNoSpace},
      {R"({"error":"etcdserver: user name is empty","code":7})",
       StatusCode::kPermissionDenied},
      {R"({"error":{"grpc_code":14,"http_code":503,"message":"no leader","http_status":"Service Unavailable"}})",
       StatusCode::kUnavailable},
      {R"({"error":"weird","code":99})", StatusCode::kIoError},
      {"<html>404 page not found</html>", StatusCode::kCorruption},
      {R"({"error":"x","code":0})", StatusCode::kCorruption},
      {R"({"error":"x","code":"five"})", StatusCode::kCorruption},
      {R"({"nothing":1})", StatusCode::kCorruption},
  };
  for (const Case& c : cases) {
    Status s = DecodeError("put", 400, c.body);
    EXPECT_EQ(s.code(), c.code) << c.body << " -> " << s.ToString();
  }
  // An error answer where a success was expected gives etcd's error.
  EXPECT_TRUE(
      DecodePut(R"({"error":"etcdserver: requested lease not found","code":5})")
          .status()
          .IsNotFound());
}

TEST(EtcdJsonTest, HostileAnswersAreCorruption) {
  const std::string kv = R"("create_revision":"2","mod_revision":"5")";
  const std::string hostile[] = {
      "",
      "{",
      Answer("").substr(0, 40),  // truncated
      "[]",
      "null",
      "{\"header\":[]}",
      "{\"header\":{}}",  // revision 0
      "{\"header\":{\"revision\":\"-1\"}}",
      "{\"header\":{\"revision\":\"9223372036854775808\"}}",  // > int64
      "{\"header\":{\"revision\":99999999999999999999999}}",  // a double
      "{\"header\":{\"revision\":18446744073709551615}}",
      "{\"header\":{\"revision\":1.5}}",
      "{\"header\":{\"revision\":\"12abc\"}}",
      "{\"header\":{\"revision\":\" 12\"}}",
      "{\"header\":{\"revision\":true}}",
      Answer(R"("kvs":{})"),
      Answer(R"("kvs":[1])"),
      Answer(R"("kvs":[{"key":"Zm9v!",)" + kv + "}]"),  // bad base64
      Answer(R"("kvs":[{"key":"Zg=",)" + kv + "}]"),    // truncated base64
      Answer(R"("kvs":[{"key":5,)" + kv + "}]"),        // wrong type
      Answer(R"("kvs":[{)" + kv + "}]"),                // no key
      Answer(
          R"("kvs":[{"key":"Zg==","create_revision":"0","mod_revision":"5"}])"),
      Answer(
          R"("kvs":[{"key":"Zg==","create_revision":"6","mod_revision":"5"}])"),
      Answer(
          R"("kvs":[{"key":"Zg==","create_revision":"2","mod_revision":"10"}])"),  // > header
      Answer(R"("kvs":[{"key":"Zg==","lease":"-4",)" + kv + "}]"),
      Answer(R"("kvs":[{"key":"Zw==",)" + kv + R"(},{"key":"Zg==",)" + kv +
             "}]"),  // unsorted
  };
  for (const std::string& h : hostile) {
    Result<Range> r = DecodeRange(h);
    EXPECT_FALSE(r.ok()) << h;
    EXPECT_TRUE(r.status().IsCorruption())
        << h << " -> " << r.status().ToString();
  }
  EXPECT_TRUE(
      DecodeDeleteRange(Answer(R"("deleted":"2")")).status().IsCorruption());
  EXPECT_TRUE(
      DecodeTxn(Answer(R"("succeeded":"true")")).status().IsCorruption());
  EXPECT_TRUE(DecodeLeaseGrant(Answer(R"("ID":"0","TTL":"5")"))
                  .status()
                  .IsCorruption());
  EXPECT_TRUE(DecodeLeaseGrant(Answer(R"("ID":"5","TTL":"-5")"))
                  .status()
                  .IsCorruption());
  EXPECT_TRUE(
      DecodeLeaseKeepAlive("{\"result\":7}", 1).status().IsCorruption());
  EXPECT_TRUE(DecodeLeaseKeepAlive(Answer(R"("ID":"1","TTL":"5")"), 1)
                  .status()
                  .IsCorruption());
  // Two objects where one is expected.
  EXPECT_TRUE(DecodePut(Answer("") + Answer("")).status().IsCorruption());
}

TEST(EtcdJsonTest, HostileWatchLinesAreCorruption) {
  const std::string h = std::string("{\"result\":{") + kHeader;
  const std::string hostile[] = {
      "{\"result\":[]}",
      "{}",
      h + R"(,"events":{}}})",
      h + R"(,"events":[{"type":"EXPLODE","kv":{"key":"YQ==","mod_revision":"3"}}]}})",
      h + R"(,"events":[{"type":"PUT"}]}})",
      h + R"(,"events":[{"kv":{"key":"","mod_revision":"3"}}]}})",
      h + R"(,"events":[{"kv":{"key":"YQ==","mod_revision":"0"}}]}})",
      h + R"(,"events":[{"kv":{"key":"YQ==","mod_revision":"10"}}]}})",  // >
                                                                         // header
      h + R"(,"events":[{"kv":{"key":"YQ==","mod_revision":"5"}},{"kv":{"key":"YQ==","mod_revision":"4"}}]}})",
      h + R"(,"compact_revision":"-2"}})",
      h + R"(,"created":"yes"}})",
  };
  for (const std::string& line : hostile) {
    Result<WatchMessage> m = DecodeWatchLine(line);
    EXPECT_TRUE(m.status().IsCorruption())
        << line << " -> " << m.status().ToString();
  }
}

TEST(EtcdJsonTest, DeeplyNestedJsonDoesNotCrash) {
  std::string deep(100000, '[');
  EXPECT_TRUE(DecodeRange(deep).status().IsCorruption());
  deep += std::string(100000, ']');
  EXPECT_TRUE(DecodeWatchLine(deep).status().IsCorruption());
}

}  // namespace
}  // namespace kv::cluster::etcd_json
