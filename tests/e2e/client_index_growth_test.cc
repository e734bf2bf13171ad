// End-to-end: a keyspace's index grows online (issue 21) under clients
// that hold its old geometry. A kvserver whose keyspaces start with a
// 16-bucket index (--index_capacity=64) takes thousands of new keys, so
// the index doubles several times while clients that were admitted
// before keep reading one-sided: every key is found with its value, no
// absent key is found, a key is never reported absent while it exists
// (the readers' fence: docs/protocol.md, "Get"), scans miss no key, and
// clients admitted later get the current geometry in their accept data.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client_fixture.h"
#include "kv/crc32c.h"
#include "kv/index_format.h"
#include "kv/protocol.h"
#include "linearizability.h"
#include "raw_client.h"

namespace kv::e2e {
namespace {

namespace ix = kv::index_format;

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "<tag>:<pad>:<crc>": unique per tag, and a torn or mixed value fails
// the CRC.
std::string MakeValue(const std::string& tag, size_t pad) {
  const std::string body =
      tag + ":" + std::string(pad, static_cast<char>('a' + tag.size() % 26));
  return body + ":" + std::to_string(Crc32c(body.data(), body.size()));
}

bool ValueIntact(const std::string& v) {
  const size_t colon = v.rfind(':');
  if (colon == std::string::npos) return false;
  const std::string body = v.substr(0, colon);
  return std::to_string(Crc32c(body.data(), body.size())) ==
         v.substr(colon + 1);
}

// The value text of INFO stats line `name` (whole lines only: index_load
// is a decimal), "" when missing.
std::string StatText(Client* c, const std::string& name) {
  auto text = c->Info(Client::InfoTopic::kStats);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  if (!text.ok()) return "";
  const std::string t = "\n" + *text;
  const size_t at = t.find("\n" + name + " ");
  if (at == std::string::npos) return "";
  const size_t begin = at + name.size() + 2;
  return t.substr(begin, t.find('\n', begin) - begin);
}

uint64_t StatNumber(Client* c, const std::string& name) {
  const std::string v = StatText(c, name);
  EXPECT_FALSE(v.empty()) << "no '" << name << "' in the stats";
  return v.empty() ? 0 : std::stoull(v);
}

class IndexGrowthTest : public ClientTest {
 protected:
  // Keyspaces start with 16 buckets (64 keys / 4), 136 slots, and grow
  // as keys arrive (at a load of 0.25 of the slots today).
  std::vector<std::string> ServerFlags() override {
    std::vector<std::string> f = ClientTest::ServerFlags();
    f.push_back("--index_capacity=64");
    return f;
  }
  static constexpr uint64_t kInitialBuckets = 16;

  uint64_t Buckets(Client* c) {
    return StatNumber(c, "keyspace.default.index_buckets");
  }
  uint64_t Growths(Client* c) {
    return StatNumber(c, "keyspace.default.index_growths");
  }
  // The bucket count once no growth is under way: a commit may start one
  // after its acknowledgement, so the last put's ack does not say that
  // the index is done growing. Bounded (10 s).
  uint64_t SettledBuckets(Client* c, const std::string& keyspace = "default") {
    const std::string name = "keyspace." + keyspace + ".index_buckets";
    uint64_t last = StatNumber(c, name);
    for (int i = 0; i < 100; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const uint64_t now = StatNumber(c, name);
      if (now == last) return now;
      last = now;
    }
    ADD_FAILURE() << "the index of '" << keyspace << "' kept growing";
    return last;
  }

  // Puts keys prefix0..prefix(n-1) (value MakeValue(key, pad)) in batches.
  void PutKeys(Client* c, const std::string& prefix, int n, size_t pad = 60) {
    for (int i = 0; i < n;) {
      Batch b;
      for (int j = 0; j < 100 && i < n; j++, i++) {
        const std::string k = prefix + std::to_string(i);
        b.Put(k, MakeValue(k, pad));
      }
      Status st = c->Execute(&b);
      ASSERT_TRUE(st.ok()) << st.ToString();
      for (size_t j = 0; j < b.size(); j++) {
        ASSERT_TRUE(b.result(j).status.ok()) << b.result(j).status.ToString();
      }
    }
  }
};

// A client admitted while the index had 16 buckets, its slot cache warm,
// reads a key whose home bucket the growths moved: its old neighbourhood
// no longer holds the key, so only the fence (the header read after it)
// tells "moved" from "absent". One refresh adopts the current geometry.
TEST_F(IndexGrowthTest, AClientWithTheOldGeometryFindsMovedKeys) {
  auto reader = Open();
  auto writer = Open();
  ASSERT_TRUE(reader && writer);
  ASSERT_EQ(Buckets(reader.get()), kInitialBuckets);
  // Keys the reader reads (and caches) before any growth: too few to
  // grow 16 buckets (a load of 0.16).
  std::vector<std::string> early;
  for (int i = 0; i < 20; i++) early.push_back("early" + std::to_string(i));
  for (const std::string& k : early) {
    ASSERT_TRUE(writer->Put(k, MakeValue(k, 60)).ok());
    std::string v;
    ASSERT_TRUE(reader->Get(k, &v).ok()) << k;
    EXPECT_EQ(v, MakeValue(k, 60));
  }
  ASSERT_EQ(Growths(reader.get()), 0u);

  PutKeys(writer.get(), "k", 3000);
  const uint64_t buckets = SettledBuckets(writer.get());
  ASSERT_GE(Growths(writer.get()), 3u);
  ASSERT_GE(buckets, kInitialBuckets * 8);
  EXPECT_EQ(reader->stats().index_refreshes, 0u);

  // An early key whose home bucket moved: found at once, with one refresh.
  std::string moved;
  for (const std::string& k : early) {
    const uint64_t h = ix::HashKey(k);
    if (ix::HomeBucket(h, kInitialBuckets) != ix::HomeBucket(h, buckets)) {
      moved = k;
      break;
    }
  }
  ASSERT_FALSE(moved.empty()) << "no early key changed its home bucket";
  std::string v;
  Status st = reader->Get(moved, &v);
  ASSERT_TRUE(st.ok()) << moved << ": " << st.ToString();
  EXPECT_EQ(v, MakeValue(moved, 60));
  EXPECT_EQ(reader->stats().index_refreshes, 1u);

  // Every key, single gets and a batch with many in flight.
  for (const std::string& k : early) {
    st = reader->Get(k, &v);
    ASSERT_TRUE(st.ok()) << k << ": " << st.ToString();
    EXPECT_EQ(v, MakeValue(k, 60)) << k;
  }
  Batch b;
  for (int i = 0; i < 3000; i++) b.Get("k" + std::to_string(i));
  ASSERT_TRUE(reader->Execute(&b).ok());
  for (int i = 0; i < 3000; i++) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_TRUE(b.result(i).status.ok())
        << k << ": " << b.result(i).status.ToString();
    EXPECT_EQ(b.result(i).value, MakeValue(k, 60)) << k;
  }
  // Absent keys stay absent (the fence agrees once the geometry is current).
  for (int i = 0; i < 200; i++) {
    st = reader->Get("absent" + std::to_string(i), &v);
    EXPECT_TRUE(st.IsNotFound()) << i << ": " << st.ToString();
  }
  EXPECT_EQ(reader->stats().index_refreshes, 1u);
  // The writer never read: it still holds the first geometry, and its
  // first get of an absent key refreshes it before saying not found.
  st = writer->Get("absent-too", &v);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_EQ(writer->stats().index_refreshes, 1u);
}

// A stale client's get of an absent key is not_found only after the
// refresh; deletes after growth are seen as absences too.
TEST_F(IndexGrowthTest, AbsentAndDeletedKeysAreNotFoundAcrossGrowths) {
  auto reader = Open();
  auto writer = Open();
  ASSERT_TRUE(reader && writer);
  PutKeys(writer.get(), "d", 1500);
  SettledBuckets(writer.get());
  ASSERT_GE(Growths(writer.get()), 2u);
  for (int i = 0; i < 1500; i += 3) {
    ASSERT_TRUE(writer->Delete("d" + std::to_string(i)).ok()) << i;
  }
  std::string v;
  for (int i = 0; i < 1500; i++) {
    const std::string k = "d" + std::to_string(i);
    Status st = reader->Get(k, &v);
    if (i % 3 == 0) {
      EXPECT_TRUE(st.IsNotFound()) << k << ": " << st.ToString();
    } else {
      ASSERT_TRUE(st.ok()) << k << ": " << st.ToString();
      EXPECT_EQ(v, MakeValue(k, 60));
    }
  }
  EXPECT_EQ(reader->stats().index_refreshes, 1u);
}

// The accept data (inline name) and the WELCOME (HELLO: a name over 40
// bytes) carry the index's current bucket count: a client admitted after
// the growths reads absent keys without any refresh, and the index header
// a raw client reads says what the accept said.
TEST_F(IndexGrowthTest, ClientsAdmittedLaterGetTheCurrentGeometry) {
  const std::string long_name(50, 'g');
  {
    auto writer = Open();
    ASSERT_TRUE(writer);
    PutKeys(writer.get(), "k", 1500);
    ClientOptions o = Options();
    o.keyspace = long_name;
    o.create_if_missing = true;
    auto other = Open(o);
    ASSERT_TRUE(other);
    PutKeys(other.get(), "k", 1500);
    SettledBuckets(writer.get());
    SettledBuckets(other.get(), long_name);
  }
  for (const std::string& name : {std::string("default"), long_name}) {
    ClientOptions o = Options();
    o.keyspace = name;
    auto late = Open(o);
    ASSERT_TRUE(late);
    std::string v;
    for (int i = 0; i < 100; i++) {
      EXPECT_TRUE(late->Get("none" + std::to_string(i), &v).IsNotFound());
      ASSERT_TRUE(late->Get("k" + std::to_string(i * 7), &v).ok()) << i;
    }
    EXPECT_EQ(late->stats().index_refreshes, 0u) << name;
    const uint64_t buckets =
        StatNumber(late.get(), "keyspace." + name + ".index_buckets");
    EXPECT_GE(buckets, kInitialBuckets * 4) << name;
    auto server = late->Info(Client::InfoTopic::kServer);
    ASSERT_TRUE(server.ok());
    EXPECT_NE(server->find("bucket_count " + std::to_string(buckets) + "\n"),
              std::string::npos)
        << *server;
  }
  // What a reader finds at read-region offset 0: the header of the
  // accept's geometry.
  RawClient raw;
  ASSERT_TRUE(raw.ConnectTo(server_.host(), server_.port(), "default").ok());
  protocol::Accept a;
  ASSERT_TRUE(raw.accept(&a).ok());
  ASSERT_EQ(a.admit, protocol::Admit::kOk) << a.reason;
  std::string bytes;
  ASSERT_TRUE(raw.Read(a.read_desc, 0, ix::kIndexHeaderSize, &bytes).ok());
  ix::IndexHeader h;
  ASSERT_TRUE(ix::DecodeIndexHeader(
      reinterpret_cast<const uint8_t*>(bytes.data()), &h));
  EXPECT_EQ(h.bucket_count, a.bucket_count);
  EXPECT_GE(h.generation, 3u);
  EXPECT_GE(a.index_offset, ix::kIndexHeaderSize);
}

// INFO stats per keyspace: index_buckets, index_growths, index_load
// (used / slots, three digits).
TEST_F(IndexGrowthTest, InfoShowsTheIndexGeometryAndLoad) {
  auto c = Open();
  ASSERT_TRUE(c);
  EXPECT_EQ(Buckets(c.get()), kInitialBuckets);
  EXPECT_EQ(Growths(c.get()), 0u);
  EXPECT_EQ(StatText(c.get(), "keyspace.default.index_load"), "0.000");
  PutKeys(c.get(), "k", 2000);
  const uint64_t buckets = SettledBuckets(c.get());
  const uint64_t growths = Growths(c.get());
  EXPECT_GE(growths, 3u);
  EXPECT_EQ(buckets, kInitialBuckets << growths);
  const uint64_t used =
      StatNumber(c.get(), "keyspace.default.index_slots_used");
  const uint64_t slots = StatNumber(c.get(), "keyspace.default.index_slots");
  EXPECT_EQ(used, 2000u);
  EXPECT_EQ(slots, ix::PhysicalBuckets(buckets) * ix::kSlotsPerBucket);
  const std::string load = StatText(c.get(), "keyspace.default.index_load");
  char want[32];
  snprintf(want, sizeof(want), "%.3f",
           static_cast<double>(used) / static_cast<double>(slots));
  EXPECT_EQ(load, want);
}

// 8 clients, admitted before the first growth, put, delete and get
// self-checking values on keys that keep arriving, across at least three
// growths. The history must be linearizable per key: no wrong value, no
// wrong not_found.
TEST_F(IndexGrowthTest, EightClientsAcrossGrowthsAreLinearizable) {
  constexpr int kClients = 8, kOpsPerClient = 1200, kKeys = 1500;
  std::vector<std::unique_ptr<Client>> clients;
  for (int w = 0; w < kClients; w++) {
    clients.push_back(Open());
    ASSERT_TRUE(clients.back());
  }
  std::mutex mu;
  std::vector<HistoryOp> history;
  std::atomic<int> torn{0}, errors{0};
  std::atomic<uint64_t> refreshes{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kClients; w++) {
    threads.emplace_back([&, w] {
      Client* c = clients[w].get();
      std::mt19937 rng(100 + w);
      std::vector<HistoryOp> mine;
      for (int n = 0; n < kOpsPerClient; n++) {
        HistoryOp o;
        // New keys arrive over the run (the index grows throughout);
        // half the ops go to the keys already in play.
        const int horizon = 1 + (kKeys * (n + 1)) / kOpsPerClient;
        o.key = "key" + std::to_string(rng() % horizon);
        const int dice = static_cast<int>(rng() % 10);
        o.call = Now();
        Status st;
        if (dice < 5) {
          o.kind = HistoryOp::kPut;
          o.value = MakeValue(std::to_string(w) + "-" + std::to_string(n),
                              rng() % 100);
          st = c->Put(o.key, o.value);
        } else if (dice < 6) {
          o.kind = HistoryOp::kDelete;
          st = c->Delete(o.key);
        } else {
          o.kind = HistoryOp::kGet;
          st = c->Get(o.key, &o.value);
          o.found = st.ok();
          if (st.IsNotFound()) st = Status::Ok();
          if (o.found && !ValueIntact(o.value)) torn++;
        }
        o.ret = Now();
        if (!st.ok()) {
          errors++;
          ADD_FAILURE() << o.key << ": " << st.ToString();
          continue;
        }
        mine.push_back(std::move(o));
      }
      refreshes += c->stats().index_refreshes;
      std::lock_guard<std::mutex> lock(mu);
      history.insert(history.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GE(Growths(clients[0].get()), 3u);
  // The clients did learn of growths from the header (they read with a
  // stale geometry at times), so the fence was exercised.
  EXPECT_GT(refreshes.load(), 0u);
  ASSERT_EQ(history.size(), size_t{kClients * kOpsPerClient});
  EXPECT_EQ(NonLinearizableKeys(history), std::vector<std::string>{});
}

// Scans while the index grows: every key present from before the scan to
// after it is given (by Scan once; by ScanPage at least once — a slot the
// growth moved from behind the cursor to ahead of it is given twice).
TEST_F(IndexGrowthTest, ScansDuringGrowthGiveEveryKeyPresentThroughout) {
  auto writer = Open();
  auto scanner = Open();
  ASSERT_TRUE(writer && scanner);
  constexpr int kStable = 100;
  PutKeys(writer.get(), "stable", kStable);
  std::atomic<bool> done{false};
  std::atomic<int> scans{0}, pages{0};
  std::mutex mu;
  std::vector<std::string> problems;
  auto problem = [&](const std::string& p) {
    std::lock_guard<std::mutex> lock(mu);
    if (problems.size() < 20) problems.push_back(p);
  };
  std::thread scan_thread([&] {
    bool paged = false;
    while (!done.load() || scans.load() < 2) {
      std::map<std::string, int> given;
      Status st;
      if (paged) {
        // Small pages: one scan spans many round trips, so growths land
        // between and within pages.
        uint64_t cursor = 0;
        do {
          auto next = scanner->ScanPage(
              cursor, "stable", 10,
              [&](std::string_view k, std::string_view v) {
                given[std::string(k)]++;
                if (v != MakeValue(std::string(k), 60)) {
                  problem("wrong value for " + std::string(k));
                }
              });
          if (!next.ok()) {
            st = next.status();
            break;
          }
          cursor = *next;
          pages++;
        } while (cursor != 0);
      } else {
        st = scanner->Scan("stable", 0,
                           [&](std::string_view k, std::string_view v) {
                             given[std::string(k)]++;
                             if (v != MakeValue(std::string(k), 60)) {
                               problem("wrong value for " + std::string(k));
                             }
                             return true;
                           });
      }
      if (!st.ok()) {
        problem(std::string(paged ? "ScanPage" : "Scan") + ": " +
                st.ToString());
        return;
      }
      for (int i = 0; i < kStable; i++) {
        const std::string k = "stable" + std::to_string(i);
        auto it = given.find(k);
        if (it == given.end()) {
          problem(std::string(paged ? "ScanPage" : "Scan") + " missed " + k);
        } else if (!paged && it->second != 1) {
          problem("Scan gave " + k + " " + std::to_string(it->second) +
                  " times");
        }
      }
      if (given.size() != static_cast<size_t>(kStable)) {
        problem("scan gave " + std::to_string(given.size()) + " keys");
      }
      scans++;
      paged = !paged;
    }
  });
  PutKeys(writer.get(), "grow", 4000);
  done = true;
  scan_thread.join();
  for (const std::string& p : problems) ADD_FAILURE() << p;
  EXPECT_GE(Growths(writer.get()), 3u);
  EXPECT_GE(scans.load(), 2);
  EXPECT_GT(scanner->stats().index_refreshes, 0u);
  // After the run a scan of everything gives every key once.
  std::set<std::string> all;
  ASSERT_TRUE(scanner
                  ->Scan("", 0,
                         [&](std::string_view k, std::string_view) {
                           EXPECT_TRUE(all.insert(std::string(k)).second) << k;
                           return true;
                         })
                  .ok());
  EXPECT_EQ(all.size(), size_t{kStable + 4000});
}

// A scanner admitted at 16 buckets scans after the index grew: it reads
// the 16-bucket index, then the header, and goes on to the grown end —
// every key, by Scan and by a ScanPage loop.
TEST_F(IndexGrowthTest, AStaleScannerScansTheWholeGrownIndex) {
  auto scan_all = Open();
  auto scan_paged = Open();
  auto writer = Open();
  ASSERT_TRUE(scan_all && scan_paged && writer);
  PutKeys(writer.get(), "k", 1000);
  ASSERT_GE(Growths(writer.get()), 3u);
  std::set<std::string> all;
  ASSERT_TRUE(scan_all
                  ->Scan("", 0,
                         [&](std::string_view k, std::string_view v) {
                           EXPECT_EQ(v, MakeValue(std::string(k), 60));
                           EXPECT_TRUE(all.insert(std::string(k)).second) << k;
                           return true;
                         })
                  .ok());
  EXPECT_EQ(all.size(), 1000u);
  EXPECT_EQ(scan_all->stats().index_refreshes, 1u);
  std::set<std::string> paged;
  uint64_t cursor = 0;
  int pages = 0;
  do {
    auto next = scan_paged->ScanPage(cursor, "", 50,
                                     [&](std::string_view k, std::string_view) {
                                       paged.insert(std::string(k));
                                     });
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    cursor = *next;
    ASSERT_LT(++pages, 1000);
  } while (cursor != 0);
  EXPECT_EQ(paged, all);
  EXPECT_EQ(scan_paged->stats().index_refreshes, 1u);
}

// A ScanPage cursor past the end of the index a client knows is valid
// once the header shows the index grew (a cursor from another client's
// page); past the grown index it is still invalid_argument.
TEST_F(IndexGrowthTest, ACursorPastTheOldIndexIsValidAfterAGrowth) {
  auto stale = Open();
  auto writer = Open();
  ASSERT_TRUE(stale && writer);
  PutKeys(writer.get(), "k", 1500);
  const uint64_t buckets = SettledBuckets(writer.get());
  ASSERT_GT(buckets, kInitialBuckets);
  const uint64_t old_slots =
      ix::PhysicalBuckets(kInitialBuckets) * ix::kSlotsPerBucket;
  const uint64_t slots = ix::PhysicalBuckets(buckets) * ix::kSlotsPerBucket;
  int given = 0;
  auto next =
      stale->ScanPage(old_slots + 8, "", 10,
                      [&](std::string_view, std::string_view) { given++; });
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_GT(given, 0);
  EXPECT_EQ(stale->stats().index_refreshes, 1u);
  next = stale->ScanPage(slots, "", 10,
                         [&](std::string_view, std::string_view) {});
  EXPECT_EQ(next.status().code(), StatusCode::kInvalidArgument)
      << next.status().ToString();
}

}  // namespace
}  // namespace kv::e2e
