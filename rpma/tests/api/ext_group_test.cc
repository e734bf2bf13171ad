// rpma_conn_group_* and rpma_conn_req_set_group (rpma_ext.h): errors, the
// descriptors a member costs, completions and events of many members
// through one fd, one-sided reads served while only the group is driven,
// and members deleted with reports pending.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "ext_fixture.h"

namespace rpma_test {
namespace {

int OpenFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) n++;
  closedir(d);
  return n;
}

class GroupTest : public ExtFixture {
 protected:
  void SetUp() override {
    ExtFixture::SetUp();
    ASSERT_EQ(rpma_conn_group_new(lobby_, &group_), 0);
    ASSERT_EQ(
        rpma_mr_reg(lobby_, rbuf_, sizeof(rbuf_), RPMA_MR_USAGE_RECV, &rmr_),
        0);
    ASSERT_EQ(
        rpma_mr_reg(cli_, sbuf_, sizeof(sbuf_), RPMA_MR_USAGE_SEND, &smr_), 0);
  }
  void TearDown() override {
    for (struct rpma_conn*& c : members_) {
      if (c == nullptr) continue;
      (void)rpma_conn_disconnect(c);
      EXPECT_EQ(rpma_conn_delete(&c), 0);
    }
    for (struct rpma_conn*& c : clients_) {
      if (c == nullptr) continue;
      (void)rpma_conn_disconnect(c);
      EXPECT_EQ(rpma_conn_delete(&c), 0);
    }
    EXPECT_EQ(rpma_conn_group_delete(&group_), 0);
    EXPECT_EQ(group_, nullptr);
    EXPECT_EQ(rpma_conn_group_delete(&cgroup_), 0);
    if (rmr_ != nullptr) EXPECT_EQ(rpma_mr_dereg(&rmr_), 0);
    if (smr_ != nullptr) EXPECT_EQ(rpma_mr_dereg(&smr_), 0);
    ExtFixture::TearDown();
  }

  // The group's next report within timeout_ms: 0 and *conn / *what, or
  // RPMA_E_NO_EVENT.
  int Next(struct rpma_conn** conn, int* what, int timeout_ms = 5000) {
    int fd = -1;
    EXPECT_EQ(rpma_conn_group_get_fd(group_, &fd), 0);
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(timeout_ms);
    for (;;) {
      int rc = rpma_conn_group_next(group_, conn, what);
      if (rc != RPMA_E_NO_EVENT) return rc;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return RPMA_E_NO_EVENT;
      (void)Readable(fd, static_cast<int>(left.count()));
    }
  }

  // A member connection (server side, in the group, `recvs` receives
  // posted) and its client, both ESTABLISHED; the server's ESTABLISHED is
  // taken through the group.
  void Member(int recvs, struct rpma_conn** server, struct rpma_conn** client,
              bool client_grouped = false) {
    struct rpma_conn_req* creq = nullptr;
    ASSERT_EQ(rpma_conn_req_new(cli_, kAddr, port_.c_str(), nullptr, &creq), 0);
    if (client_grouped) {
      if (cgroup_ == nullptr) {
        ASSERT_EQ(rpma_conn_group_new(cli_, &cgroup_), 0);
      }
      ASSERT_EQ(rpma_conn_req_set_group(creq, cgroup_), 0);
    }
    ASSERT_EQ(rpma_conn_req_connect(&creq, nullptr, client), 0);
    clients_.push_back(*client);
    struct rpma_conn_req* req = NextReq();
    ASSERT_NE(req, nullptr);
    ASSERT_EQ(rpma_conn_req_set_group(req, group_), 0);
    for (int i = 0; i < recvs; i++) {
      ASSERT_EQ(rpma_conn_req_recv(req, rmr_, 0, 64, nullptr), 0);
    }
    ASSERT_EQ(rpma_conn_req_connect(&req, nullptr, server), 0);
    members_.push_back(*server);
    struct rpma_conn* who = nullptr;
    int what = 0;
    ASSERT_EQ(Next(&who, &what), 0);
    EXPECT_EQ(who, *server);
    EXPECT_EQ(what, RPMA_CONN_GROUP_EVENT);
    enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    ASSERT_EQ(rpma_conn_next_event(*server, &ev), 0);
    EXPECT_EQ(ev, RPMA_CONN_ESTABLISHED);
    EXPECT_EQ(rpma_conn_next_event(*server, &ev), RPMA_E_NO_EVENT);
    if (client_grouped) {
      ClientEstablished(*client);
    } else {
      ASSERT_EQ(NextEvent(*client, &ev), 0);
      EXPECT_EQ(ev, RPMA_CONN_ESTABLISHED);
    }
  }

  void ClientEstablished(struct rpma_conn* client) {
    int fd = -1;
    ASSERT_EQ(rpma_conn_group_get_fd(cgroup_, &fd), 0);
    struct rpma_conn* who = nullptr;
    int what = 0;
    for (int i = 0; i < 100; i++) {
      if (rpma_conn_group_next(cgroup_, &who, &what) == 0) break;
      (void)Readable(fd, 50);
    }
    ASSERT_EQ(who, client);
    ASSERT_EQ(what, RPMA_CONN_GROUP_EVENT);
    enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    ASSERT_EQ(rpma_conn_next_event(client, &ev), 0);
    EXPECT_EQ(ev, RPMA_CONN_ESTABLISHED);
  }

  void Send(struct rpma_conn* client) {
    ASSERT_EQ(
        rpma_send(client, smr_, 0, 8, RPMA_F_COMPLETION_ON_ERROR, nullptr), 0);
  }

  struct rpma_conn_group* group_ = nullptr;
  struct rpma_conn_group* cgroup_ = nullptr;  // the clients', when grouped
  char rbuf_[64] = {};
  char sbuf_[64] = "abcdefg";
  struct rpma_mr_local* rmr_ = nullptr;
  struct rpma_mr_local* smr_ = nullptr;
  std::vector<struct rpma_conn*> members_;
  std::vector<struct rpma_conn*> clients_;
};

TEST_F(GroupTest, NullArguments) {
  struct rpma_conn_group* g = nullptr;
  EXPECT_EQ(rpma_conn_group_new(nullptr, &g), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_group_new(lobby_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_group_delete(nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_group_delete(&g), 0);  // NULL *group_ptr
  int fd = -1;
  EXPECT_EQ(rpma_conn_group_get_fd(nullptr, &fd), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_group_get_fd(group_, nullptr), RPMA_E_INVAL);
  struct rpma_conn* c = nullptr;
  int what = 0;
  EXPECT_EQ(rpma_conn_group_next(nullptr, &c, &what), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_group_next(group_, nullptr, &what), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_group_next(group_, &c, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_req_set_group(nullptr, group_), RPMA_E_INVAL);
}

TEST_F(GroupTest, AnEmptyGroupHasNothingToReport) {
  struct rpma_conn* c = nullptr;
  int what = 0;
  EXPECT_EQ(rpma_conn_group_next(group_, &c, &what), RPMA_E_NO_EVENT);
  EXPECT_EQ(c, nullptr);  // not written on failure
  int fd = -1;
  ASSERT_EQ(rpma_conn_group_get_fd(group_, &fd), 0);
  EXPECT_FALSE(Readable(fd, 0));
}

TEST_F(GroupTest, DeleteRefusesAGroupWithMembersAndKeepsIt) {
  struct rpma_conn* c = StartClient();
  clients_.push_back(c);
  struct rpma_conn_req* req = NextReq();
  ASSERT_NE(req, nullptr);
  ASSERT_EQ(rpma_conn_req_set_group(req, group_), 0);
  struct rpma_conn_group* g = group_;
  EXPECT_EQ(rpma_conn_group_delete(&g), RPMA_E_INVAL);  // a request
  EXPECT_EQ(g, group_);
  struct rpma_conn* server = nullptr;
  ASSERT_EQ(rpma_conn_req_connect(&req, nullptr, &server), 0);
  EXPECT_EQ(rpma_conn_group_delete(&g), RPMA_E_INVAL);  // its connection
  EXPECT_EQ(g, group_);
  EXPECT_EQ(rpma_conn_delete(&server), 0);
  // A deleted request uncounts too.
  struct rpma_conn* c2 = StartClient();
  clients_.push_back(c2);
  req = NextReq();
  ASSERT_NE(req, nullptr);
  ASSERT_EQ(rpma_conn_req_set_group(req, group_), 0);
  EXPECT_EQ(rpma_conn_req_delete(&req), 0);
  // (TearDown deletes the group: no member is left.)
}

TEST_F(GroupTest, SetGroupRefusals) {
  struct rpma_conn* c = StartClient();
  clients_.push_back(c);
  struct rpma_conn_req* req = NextReq();
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(rpma_conn_req_set_group(req, nullptr), RPMA_E_INVAL);
  ASSERT_EQ(rpma_conn_req_recv(req, rmr_, 0, 64, nullptr), 0);
  EXPECT_EQ(rpma_conn_req_set_group(req, group_), RPMA_E_INVAL);  // recv
  EXPECT_EQ(rpma_conn_req_delete(&req), 0);

  // librpma's shared completion channel.
  struct rpma_conn_cfg* cfg = nullptr;
  ASSERT_EQ(rpma_conn_cfg_new(&cfg), 0);
  ASSERT_EQ(rpma_conn_cfg_set_compl_channel(cfg, true), 0);
  struct rpma_conn* c2 = StartClient();
  clients_.push_back(c2);
  req = NextReq(cfg);
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(rpma_conn_req_set_group(req, group_), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_req_delete(&req), 0);
  EXPECT_EQ(rpma_conn_cfg_delete(&cfg), 0);

  // Twice; the request stays usable after each refusal.
  struct rpma_conn* c3 = StartClient();
  clients_.push_back(c3);
  req = NextReq();
  ASSERT_NE(req, nullptr);
  ASSERT_EQ(rpma_conn_req_set_group(req, group_), 0);
  EXPECT_EQ(rpma_conn_req_set_group(req, group_), RPMA_E_INVAL);
  struct rpma_conn* server = nullptr;
  ASSERT_EQ(rpma_conn_req_connect(&req, nullptr, &server), 0);
  members_.push_back(server);
}

TEST_F(GroupTest, AMemberCostsNoDescriptorButItsSocket) {
  if (TestVerbsIp() != nullptr) GTEST_SKIP() << "counts tcp sockets";
  constexpr int kPairs = 40;
  // Warm-up pair: the engine, the listener's lazily made parts.
  struct rpma_conn* s = nullptr;
  struct rpma_conn* c = nullptr;
  Member(1, &s, &c, true);
  const int before = OpenFds();
  for (int i = 0; i < kPairs; i++) {
    Member(1, &s, &c, true);
    if (HasFatalFailure()) return;
  }
  const int grown = OpenFds() - before;
  // Two sockets per pair (both ends live in this process), nothing else;
  // librpma's own channels cost 4 more descriptors per connection.
  EXPECT_LE(grown, 2 * kPairs)
      << grown << " descriptors for " << kPairs << " pairs";
}

TEST_F(GroupTest, CompletionsOfManyMembersComeThroughOneFd) {
  constexpr int kMembers = 8;
  std::vector<struct rpma_conn*> servers(kMembers), clients(kMembers);
  for (int i = 0; i < kMembers; i++) {
    Member(2, &servers[i], &clients[i]);
    if (HasFatalFailure()) return;
  }
  // A member's CQ is the group's to wait on.
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(servers[0], &cq), 0);
  EXPECT_EQ(rpma_cq_wait(cq), RPMA_E_SHARED_CHANNEL);
  int gfd = -1, efd = -1;
  ASSERT_EQ(rpma_conn_group_get_fd(group_, &gfd), 0);
  ASSERT_EQ(rpma_conn_get_event_fd(servers[0], &efd), 0);
  EXPECT_EQ(efd, gfd);

  for (int i = kMembers - 1; i >= 0; i -= 2) Send(clients[i]);
  std::set<struct rpma_conn*> fired;
  size_t receives = 0;
  while (fired.size() < kMembers / 2) {
    struct rpma_conn* who = nullptr;
    int what = 0;
    ASSERT_EQ(Next(&who, &what), 0) << fired.size() << " fired";
    ASSERT_EQ(what, RPMA_CONN_GROUP_COMPLETION);
    fired.insert(who);
    struct rpma_cq* wcq = nullptr;
    ASSERT_EQ(rpma_conn_get_cq(who, &wcq), 0);
    struct ibv_wc wc;
    while (rpma_cq_get_wc(wcq, 1, &wc, nullptr) == 0) {
      EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
      EXPECT_EQ(wc.opcode, IBV_WC_RECV);
      receives++;
    }
  }
  EXPECT_EQ(receives, static_cast<size_t>(kMembers / 2));
  for (int i = kMembers - 1; i >= 0; i -= 2) {
    EXPECT_EQ(fired.count(servers[i]), 1u) << i;
  }
  struct rpma_conn* who = nullptr;
  int what = 0;
  EXPECT_EQ(Next(&who, &what, 100), RPMA_E_NO_EVENT);
}

TEST_F(GroupTest, AHangUpIsReportedAsTheMembersEvent) {
  struct rpma_conn *s1 = nullptr, *c1 = nullptr, *s2 = nullptr, *c2 = nullptr;
  Member(1, &s1, &c1);
  Member(1, &s2, &c2);
  ASSERT_EQ(rpma_conn_disconnect(c2), 0);
  bool closed = false;
  for (int i = 0; i < 4 && !closed; i++) {
    struct rpma_conn* who = nullptr;
    int what = 0;
    ASSERT_EQ(Next(&who, &what), 0);
    ASSERT_EQ(who, s2);                           // never the other member
    if (what != RPMA_CONN_GROUP_EVENT) continue;  // the flushed receive
    enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    ASSERT_EQ(rpma_conn_next_event(s2, &ev), 0);
    EXPECT_EQ(ev, RPMA_CONN_CLOSED);
    closed = true;
  }
  EXPECT_TRUE(closed);
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  EXPECT_EQ(rpma_conn_next_event(s1, &ev), RPMA_E_NO_EVENT);  // never blocks
}

TEST_F(GroupTest, OneSidedReadsAreServedWhileOnlyTheGroupIsDriven) {
  struct rpma_conn *s = nullptr, *c = nullptr;
  Member(1, &s, &c);
  // A thread drives the group the way a server worker does; the client
  // reads the server's region again and again.
  std::atomic<bool> stop{false};
  std::thread driver([&] {
    int fd = -1;
    (void)rpma_conn_group_get_fd(group_, &fd);
    while (!stop.load()) {
      (void)Readable(fd, 10);
      struct rpma_conn* who = nullptr;
      int what = 0;
      while (rpma_conn_group_next(group_, &who, &what) == 0) {
      }
    }
  });
  Pair p{c, s};
  for (int i = 0; i < 50; i++) {
    ASSERT_EQ(Op(p, mr_a_, 0, false), IBV_WC_SUCCESS) << i;
  }
  EXPECT_TRUE(AllAre(cbuf_, 0, 8, 'A'));
  stop.store(true);
  driver.join();
}

TEST_F(GroupTest, ADeletedMemberIsNeverReported) {
  struct rpma_conn *s1 = nullptr, *c1 = nullptr, *s2 = nullptr, *c2 = nullptr;
  Member(2, &s1, &c1);
  Member(2, &s2, &c2);
  Send(c1);
  Send(c2);
  ASSERT_EQ(rpma_conn_disconnect(c1), 0);
  // Let both land (tcp: the bytes wait in the sockets until progress).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  members_.erase(std::remove(members_.begin(), members_.end(), s1),
                 members_.end());
  ASSERT_EQ(rpma_conn_delete(&s1), 0);
  struct rpma_conn* who = nullptr;
  int what = 0;
  ASSERT_EQ(Next(&who, &what), 0);
  EXPECT_EQ(who, s2);
  while (Next(&who, &what, 100) == 0) EXPECT_EQ(who, s2);
}

// A request that joined the group and is deleted on this thread while
// another thread drives the group (kvserver: a refused connection on the
// main thread, the workers in rpma_conn_group_next): deleting it flushes
// its posted receives into its CQ, which fires the group's channel; the
// driving thread may take that event just before the CQ is freed, and
// must not touch the CQ then (ASan / TSan report it otherwise).
TEST_F(GroupTest, ARequestDeletedWhileAnotherThreadDrivesTheGroup) {
  std::atomic<bool> stop{false};
  std::atomic<int> reports{0};
  int fd = -1;
  ASSERT_EQ(rpma_conn_group_get_fd(group_, &fd), 0);
  std::thread driver([&] {
    while (!stop.load()) {
      struct rpma_conn* who = nullptr;
      int what = 0;
      if (rpma_conn_group_next(group_, &who, &what) == 0) {
        reports++;
      } else {
        (void)Readable(fd, 1);
      }
    }
  });
  for (int i = 0; i < 40 && !HasFailure(); i++) {
    struct rpma_conn_req* creq = nullptr;
    ASSERT_EQ(rpma_conn_req_new(cli_, kAddr, port_.c_str(), nullptr, &creq), 0);
    struct rpma_conn* client = nullptr;
    ASSERT_EQ(rpma_conn_req_connect(&creq, nullptr, &client), 0);
    struct rpma_conn_req* req = NextReq();
    ASSERT_NE(req, nullptr);
    ASSERT_EQ(rpma_conn_req_set_group(req, group_), 0);
    for (int r = 0; r < 4; r++) {
      ASSERT_EQ(rpma_conn_req_recv(req, rmr_, 0, 64, nullptr), 0);
    }
    ASSERT_EQ(rpma_conn_req_delete(&req), 0);
    (void)rpma_conn_disconnect(client);
    ASSERT_EQ(rpma_conn_delete(&client), 0);
  }
  stop = true;
  driver.join();
  // No member was ever connected: nothing may be reported as one.
  EXPECT_EQ(reports.load(), 0);
}

TEST_F(GroupTest, AnOutgoingRequestCanJoinAGroup) {
  struct rpma_conn *s = nullptr, *c = nullptr;
  Member(1, &s, &c, true);
  Send(c);
  struct rpma_conn* who = nullptr;
  int what = 0;
  ASSERT_EQ(Next(&who, &what), 0);
  EXPECT_EQ(who, s);
  EXPECT_EQ(what, RPMA_CONN_GROUP_COMPLETION);
  // The client's group reports its hang-up after the server disconnects.
  ASSERT_EQ(rpma_conn_disconnect(s), 0);
  int fd = -1;
  ASSERT_EQ(rpma_conn_group_get_fd(cgroup_, &fd), 0);
  bool closed = false;
  for (int i = 0; i < 100 && !closed; i++) {
    if (rpma_conn_group_next(cgroup_, &who, &what) != 0) {
      (void)Readable(fd, 50);
      continue;
    }
    EXPECT_EQ(who, c);
    enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    if (what == RPMA_CONN_GROUP_EVENT && rpma_conn_next_event(c, &ev) == 0) {
      closed = ev == RPMA_CONN_CLOSED;
    }
  }
  EXPECT_TRUE(closed);
}

}  // namespace
}  // namespace rpma_test
