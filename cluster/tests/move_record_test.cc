// MoveRecord and MoveProgress (move_record.h): their rules, their JSON,
// hostile values.
#include "kv/cluster/move_record.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kv/cluster_slots.h"

namespace kv::cluster {
namespace {

MoveRecord Sample() {
  MoveRecord r;
  r.keyspace = "users";
  r.shard = 3;
  r.source = 1;
  r.target = 2;
  r.epoch = 4;
  return r;
}

// A valid record's JSON with member `name` replaced by `value` (raw JSON),
// or removed when `value` is empty.
std::string With(const std::string& name, const std::string& value) {
  std::string members[][2] = {
      {"format", "1"},
      {"keyspace", "\"users\""},
      {"shard", "3"},
      {"source", "1"},
      {"target", "2"},
      {"epoch", "4"},
      {"phase", "\"copy\""},
      {"paused", "false"},
      {"rate_bytes_per_s", "0"},
      {"last_sequence", "0"},
      {"reason", "\"\""},
  };
  std::string out = "{";
  for (auto& [n, v] : members) {
    if (n == name) {
      if (value.empty()) continue;
      v = value;
    }
    out += (out.size() > 1 ? "," : "") + ("\"" + n + "\":") + v;
  }
  return out + "}";
}

TEST(MovePhaseTest, NamesRoundTrip) {
  for (MovePhase p : {MovePhase::kCopy, MovePhase::kReady, MovePhase::kHandoff,
                      MovePhase::kReleased, MovePhase::kCancel}) {
    Result<MovePhase> back = ParseMovePhase(MovePhaseName(p));
    ASSERT_TRUE(back.ok()) << MovePhaseName(p);
    EXPECT_EQ(*back, p);
  }
  EXPECT_EQ(MovePhaseName(MovePhase::kHandoff), "handoff");
  for (const char* bad : {"", "Copy", "copy ", "done", "released\n"}) {
    EXPECT_EQ(ParseMovePhase(bad).status().code(), StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(MoveRecordTest, RoundTripsEveryField) {
  MoveRecord r = Sample();
  EXPECT_EQ(r.Encode(),
            R"({"epoch":4,"format":1,"keyspace":"users","last_sequence":0,)"
            R"("paused":false,"phase":"copy","rate_bytes_per_s":0,)"
            R"("reason":"","shard":3,"source":1,"target":2})");
  std::vector<MoveRecord> cases = {r};
  r.keyspace = std::string(kMaxClusterKeyspaceNameSize, 'k');
  r.shard = kMaxShardId;
  r.source = 4294967295u;
  r.target = 1;
  r.epoch = 4294967295u;
  r.phase = MovePhase::kCancel;
  r.paused = true;
  r.rate_bytes_per_s = UINT64_MAX;
  r.last_sequence = UINT64_MAX;
  r.reason = std::string(MoveRecord::kMaxReason, '~');
  cases.push_back(r);
  r.phase = MovePhase::kReleased;
  r.reason = "target node 2 is not live";
  cases.push_back(r);
  r.join = true;  // encoded only when true
  cases.push_back(r);
  EXPECT_NE(r.Encode().find(R"("join":true)"), std::string::npos);
  for (const MoveRecord& c : cases) {
    ASSERT_TRUE(c.Validate().ok()) << c.Validate().ToString();
    Result<MoveRecord> back =
        MoveRecord::Decode(c.keyspace, c.shard, c.Encode());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, c);
    EXPECT_LE(c.Encode().size(), MoveRecord::kMaxJsonBytes);
  }
}

TEST(MoveRecordTest, ValidateRefusesEachBadField) {
  const struct {
    void (*edit)(MoveRecord*);
    const char* says;
  } cases[] = {
      {[](MoveRecord* r) { r->keyspace = ""; }, "1..63 bytes"},
      {[](MoveRecord* r) { r->keyspace = "a/b"; }, "[A-Za-z0-9_.-]"},
      {[](MoveRecord* r) { r->keyspace = std::string(58, 'n'); },
       "at most 57 bytes"},
      {[](MoveRecord* r) { r->shard = 1024; }, "shard id above 1023"},
      {[](MoveRecord* r) { r->source = 0; }, "node id 0 is not a node"},
      {[](MoveRecord* r) { r->target = 0; }, "node id 0 is not a node"},
      {[](MoveRecord* r) { r->target = r->source; },
       "source and target are node 1"},
      {[](MoveRecord* r) { r->epoch = 0; }, "epoch 0"},
      {[](MoveRecord* r) { r->reason = std::string(201, 'r'); },
       "a reason over 200 bytes"},
      {[](MoveRecord* r) { r->reason = "line\nbreak"; },
       "outside printable ASCII"},
      {[](MoveRecord* r) { r->reason = "caf\xc3\xa9"; },
       "outside printable ASCII"},
  };
  for (const auto& c : cases) {
    MoveRecord r = Sample();
    c.edit(&r);
    Status st = r.Validate();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.says;
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.message();
  }
}

TEST(MoveRecordTest, DecodeTrustsNothing) {
  const struct {
    std::string json;
    const char* says;
  } cases[] = {
      {"", "not a JSON object"},
      {"null", "not a JSON object"},
      {"[]", "not a JSON object"},
      {"{", "not a JSON object"},
      {"\"copy\"", "not a JSON object"},
      {std::string(2000, ' '), "larger than 1024 bytes"},
      {std::string(100, '{'), "nested too deeply"},
      {With("x", "") + "x", "not a JSON object"},
      {With("format", ""), "\"format\" must be an integer in 1..1"},
      {With("format", "0"), "\"format\" must be an integer in 1..1"},
      {With("format", "\"1\""), "\"format\""},
      {With("format", "-1"), "\"format\""},
      {With("keyspace", ""), "\"keyspace\" must be a string"},
      {With("keyspace", "7"), "\"keyspace\" must be a string"},
      {With("keyspace", "\"" + std::string(58, 'u') + "\""),
       "\"keyspace\" is longer than 57 bytes"},
      {With("keyspace", "\"orders\""),
       "the value is the record of 'orders'/3, not of the shard its key "
       "names"},
      {With("shard", "4"), "the value is the record of 'users'/4"},
      {With("shard", "1024"), "\"shard\" must be an integer in 0..1023"},
      {With("shard", ""), "\"shard\""},
      {With("source", ""), "\"source\" must be an integer in 1..4294967295"},
      {With("source", "0"), "\"source\""},
      {With("source", "4294967296"), "\"source\""},
      {With("source", "1.5"), "\"source\""},
      {With("source", "2"), "source and target are node 2"},
      {With("target", "-2"), "\"target\""},
      {With("target", "null"), "\"target\""},
      {With("epoch", "0"), "\"epoch\" must be an integer in 1..4294967295"},
      {With("epoch", "[4]"), "\"epoch\""},
      {With("phase", ""), "\"phase\" must be a string"},
      {With("phase", "3"), "\"phase\" must be a string"},
      {With("phase", "\"done\""),
       "phase 'done' is not one of copy, ready, handoff, released, cancel"},
      {With("phase", "\"" + std::string(100, 'p') + "\""),
       "\"phase\" is longer than 16 bytes"},
      {With("paused", ""), "\"paused\" must be true or false"},
      {With("paused", "0"), "\"paused\" must be true or false"},
      {With("paused", "\"false\""), "\"paused\""},
      {With("rate_bytes_per_s", "-1"), "\"rate_bytes_per_s\""},
      {With("rate_bytes_per_s", "18446744073709551616"),
       "\"rate_bytes_per_s\""},
      {With("rate_bytes_per_s", ""), "\"rate_bytes_per_s\""},
      {With("last_sequence", "1e3"), "\"last_sequence\""},
      {With("last_sequence", ""), "\"last_sequence\""},
      {With("reason", ""), "\"reason\" must be a string"},
      {With("reason", "\"" + std::string(201, 'r') + "\""),
       "\"reason\" is longer than 200 bytes"},
      {With("reason", "\"tab\\there\""), "outside printable ASCII"},
      {With("reason", "\"nul\\u0000\""), "outside printable ASCII"},
  };
  for (const auto& c : cases) {
    Result<MoveRecord> d = MoveRecord::Decode("users", 3, c.json);
    ASSERT_FALSE(d.ok()) << c.json.substr(0, 120);
    EXPECT_EQ(d.status().code(), StatusCode::kCorruption) << c.json;
    EXPECT_NE(d.status().message().find(c.says), std::string::npos)
        << c.json.substr(0, 120) << " -> " << d.status().message();
    EXPECT_NE(d.status().message().find("move record 'users'/3"),
              std::string::npos)
        << d.status().message();
  }
  // The baseline of the edits above decodes.
  ASSERT_TRUE(MoveRecord::Decode("users", 3, With("x", "")).ok());
  // The key names another shard than the value.
  EXPECT_EQ(MoveRecord::Decode("users", 4, With("x", "")).status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(MoveRecord::Decode("orders", 3, With("x", "")).status().code(),
            StatusCode::kCorruption);
  // A hostile keyspace from a key is quoted bounded.
  Result<MoveRecord> d =
      MoveRecord::Decode(std::string(5000, 'k'), 3, With("x", ""));
  ASSERT_FALSE(d.ok());
  EXPECT_LT(d.status().message().size(), 400u);
}

TEST(MoveRecordTest, AJoinThatIsNotABooleanIsCorruption) {
  std::string json = Sample().Encode();
  json.insert(1, R"("join":1,)");
  EXPECT_EQ(MoveRecord::Decode("users", 3, json).status().code(),
            StatusCode::kCorruption);
}

TEST(MoveRecordTest, NewerFormatIsRefusedAsInvalidArgument) {
  Result<MoveRecord> d = MoveRecord::Decode("users", 3, With("format", "2"));
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(d.status().message().find(
                "format 2 is newer than this build reads (1): upgrade rpkv"),
            std::string::npos)
      << d.status().message();
}

TEST(MoveRecordTest, UnknownMembersAreIgnored) {
  std::string json = With("x", "");
  json.insert(1, R"("added_later":{"nested":[1,2]},"note":"hi",)");
  Result<MoveRecord> d = MoveRecord::Decode("users", 3, json);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, Sample());
}

MoveProgress SampleProgress() {
  MoveProgress p;
  p.phase = MovePhase::kReady;
  p.keys_copied = 100;
  p.bytes_copied = 123456;
  p.keys_total = 99;
  p.keys_forwarded = 7;
  p.updated_unix_ms = 1764000000000;
  return p;
}

TEST(MoveProgressTest, RoundTrips) {
  MoveProgress p = SampleProgress();
  EXPECT_EQ(p.Encode(),
            R"({"bytes_copied":123456,"format":1,"keys_copied":100,)"
            R"("keys_forwarded":7,"keys_total":99,"phase":"ready",)"
            R"("updated_unix_ms":1764000000000})");
  MoveProgress max = p;
  max.keys_copied = max.bytes_copied = max.keys_total = max.keys_forwarded =
      max.updated_unix_ms = UINT64_MAX;
  for (const MoveProgress& c : {p, max, MoveProgress{}}) {
    Result<MoveProgress> back = MoveProgress::Decode(c.Encode());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, c);
    EXPECT_LE(c.Encode().size(), MoveProgress::kMaxJsonBytes);
  }
}

TEST(MoveProgressTest, DecodeTrustsNothing) {
  const std::string good = SampleProgress().Encode();
  auto without = [&](const std::string& member) {
    const size_t at = good.find("\"" + member + "\"");
    const size_t end = good.find_first_of(",}", at);
    std::string s = good;
    s.erase(at, end - at + (s[end] == ',' ? 1 : 0));
    if (s[s.size() - 2] == ',') s.erase(s.size() - 2, 1);
    return s;
  };
  const struct {
    std::string json;
    const char* says;
  } cases[] = {
      {"", "not a JSON object"},
      {"[1]", "not a JSON object"},
      {"{\"format\":1", "not a JSON object"},
      {std::string(600, ' '), "larger than 512 bytes"},
      {std::string(50, '['), "nested too deeply"},
      {without("format"), "\"format\" must be an integer in 1..1"},
      {without("phase"), "\"phase\" must be a string"},
      {without("keys_copied"), "\"keys_copied\" must be an integer"},
      {without("bytes_copied"), "\"bytes_copied\""},
      {without("keys_total"), "\"keys_total\""},
      {without("keys_forwarded"), "\"keys_forwarded\""},
      {without("updated_unix_ms"), "\"updated_unix_ms\""},
      {R"({"format":1,"phase":"copying","keys_copied":0,"bytes_copied":0,)"
       R"("keys_total":0,"keys_forwarded":0,"updated_unix_ms":0})",
       "phase 'copying' is not one of"},
      {R"({"format":1,"phase":"copy","keys_copied":-1,"bytes_copied":0,)"
       R"("keys_total":0,"keys_forwarded":0,"updated_unix_ms":0})",
       "\"keys_copied\""},
      {R"({"format":1,"phase":"copy","keys_copied":0,"bytes_copied":"0",)"
       R"("keys_total":0,"keys_forwarded":0,"updated_unix_ms":0})",
       "\"bytes_copied\""},
      {R"({"format":1,"phase":"copy","keys_copied":0,"bytes_copied":0,)"
       R"("keys_total":0.5,"keys_forwarded":0,"updated_unix_ms":0})",
       "\"keys_total\""},
  };
  for (const auto& c : cases) {
    Result<MoveProgress> d = MoveProgress::Decode(c.json);
    ASSERT_FALSE(d.ok()) << c.json.substr(0, 120);
    EXPECT_EQ(d.status().code(), StatusCode::kCorruption) << c.json;
    EXPECT_NE(d.status().message().find(c.says), std::string::npos)
        << c.json.substr(0, 120) << " -> " << d.status().message();
    EXPECT_EQ(d.status().message().rfind("move progress: ", 0), 0u)
        << d.status().message();
  }
  Result<MoveProgress> newer = MoveProgress::Decode(
      R"({"format":9,"phase":"copy","keys_copied":0,"bytes_copied":0,)"
      R"("keys_total":0,"keys_forwarded":0,"updated_unix_ms":0})");
  EXPECT_EQ(newer.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(newer.status().message().find("upgrade rpkv"), std::string::npos);
  std::string extra = good;
  extra.insert(1, R"("eta_ms":5,"per_stripe":[[1]],)");
  Result<MoveProgress> d = MoveProgress::Decode(extra);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, SampleProgress());
}

}  // namespace
}  // namespace kv::cluster
