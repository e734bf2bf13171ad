// librpma.so exports exactly librpma 1.3's 84 functions plus the rpkv
// extensions of rpma_ext.h, and nothing else.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#ifndef RPMA_SO_PATH
#error "RPMA_SO_PATH must name build/lib/librpma.so"
#endif

namespace {

const char* const kLibrpmaFunctions[] = {
    "rpma_atomic_write",
    "rpma_conn_apply_remote_peer_cfg",
    "rpma_conn_cfg_delete",
    "rpma_conn_cfg_get_compl_channel",
    "rpma_conn_cfg_get_cq_size",
    "rpma_conn_cfg_get_rcq_size",
    "rpma_conn_cfg_get_rq_size",
    "rpma_conn_cfg_get_sq_size",
    "rpma_conn_cfg_get_srq",
    "rpma_conn_cfg_get_timeout",
    "rpma_conn_cfg_new",
    "rpma_conn_cfg_set_compl_channel",
    "rpma_conn_cfg_set_cq_size",
    "rpma_conn_cfg_set_rcq_size",
    "rpma_conn_cfg_set_rq_size",
    "rpma_conn_cfg_set_sq_size",
    "rpma_conn_cfg_set_srq",
    "rpma_conn_cfg_set_timeout",
    "rpma_conn_delete",
    "rpma_conn_disconnect",
    "rpma_conn_get_compl_fd",
    "rpma_conn_get_cq",
    "rpma_conn_get_event_fd",
    "rpma_conn_get_private_data",
    "rpma_conn_get_qp_num",
    "rpma_conn_get_rcq",
    "rpma_conn_next_event",
    "rpma_conn_req_connect",
    "rpma_conn_req_delete",
    "rpma_conn_req_get_private_data",
    "rpma_conn_req_new",
    "rpma_conn_req_recv",
    "rpma_conn_wait",
    "rpma_cq_get_fd",
    "rpma_cq_get_wc",
    "rpma_cq_wait",
    "rpma_ep_get_fd",
    "rpma_ep_listen",
    "rpma_ep_next_conn_req",
    "rpma_ep_shutdown",
    "rpma_err_2str",
    "rpma_flush",
    "rpma_log_get_threshold",
    "rpma_log_set_function",
    "rpma_log_set_threshold",
    "rpma_mr_advise",
    "rpma_mr_dereg",
    "rpma_mr_get_descriptor",
    "rpma_mr_get_descriptor_size",
    "rpma_mr_get_ptr",
    "rpma_mr_get_size",
    "rpma_mr_reg",
    "rpma_mr_remote_delete",
    "rpma_mr_remote_from_descriptor",
    "rpma_mr_remote_get_flush_type",
    "rpma_mr_remote_get_size",
    "rpma_peer_cfg_delete",
    "rpma_peer_cfg_from_descriptor",
    "rpma_peer_cfg_get_descriptor",
    "rpma_peer_cfg_get_descriptor_size",
    "rpma_peer_cfg_get_direct_write_to_pmem",
    "rpma_peer_cfg_new",
    "rpma_peer_cfg_set_direct_write_to_pmem",
    "rpma_peer_delete",
    "rpma_peer_new",
    "rpma_read",
    "rpma_recv",
    "rpma_send",
    "rpma_send_with_imm",
    "rpma_srq_cfg_delete",
    "rpma_srq_cfg_get_rcq_size",
    "rpma_srq_cfg_get_rq_size",
    "rpma_srq_cfg_new",
    "rpma_srq_cfg_set_rcq_size",
    "rpma_srq_cfg_set_rq_size",
    "rpma_srq_delete",
    "rpma_srq_get_rcq",
    "rpma_srq_new",
    "rpma_srq_recv",
    "rpma_utils_conn_event_2str",
    "rpma_utils_get_ibv_context",
    "rpma_utils_ibv_context_is_odp_capable",
    "rpma_write",
    "rpma_write_with_imm",
};

// rpkv extensions beyond librpma (rpma/include/rpma_ext.h).
const char* const kRpkvExtensions[] = {
    "rpma_conn_group_delete", "rpma_conn_group_get_fd",
    "rpma_conn_group_new",    "rpma_conn_group_next",
    "rpma_conn_mr_reg",       "rpma_conn_req_set_group",
    "rpma_conn_req_set_peer", "rpma_mr_advance",
};

std::set<std::string> DynamicSymbols(bool defined_text_only) {
  std::string cmd = std::string("nm -D --defined-only ") + RPMA_SO_PATH;
  std::set<std::string> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char line[512];
  while (fgets(line, sizeof(line), p) != nullptr) {
    char addr[64], type[8], name[400];
    if (sscanf(line, "%63s %7s %399s", addr, type, name) != 3) continue;
    if (defined_text_only && std::string(type) != "T") continue;
    std::string n(name);
    size_t at = n.find('@');
    if (at != std::string::npos) n.resize(at);
    out.insert(n);
  }
  pclose(p);
  return out;
}

TEST(ExportsTest, ListHas84Functions) {
  EXPECT_EQ(sizeof(kLibrpmaFunctions) / sizeof(kLibrpmaFunctions[0]), 84u);
}

TEST(ExportsTest, SharedLibraryExportsExactlyTheLibrpmaFunctions) {
  std::set<std::string> expected(std::begin(kLibrpmaFunctions),
                                 std::end(kLibrpmaFunctions));
  expected.insert(std::begin(kRpkvExtensions), std::end(kRpkvExtensions));
  std::set<std::string> functions = DynamicSymbols(true);
  ASSERT_FALSE(functions.empty()) << "nm failed on " << RPMA_SO_PATH;
  for (const auto& f : expected) EXPECT_TRUE(functions.count(f)) << f;
  for (const auto& f : functions) EXPECT_TRUE(expected.count(f)) << f;
}

TEST(ExportsTest, NothingButRpmaSymbolsAndTheVersionNode) {
  for (const auto& s : DynamicSymbols(false)) {
    EXPECT_TRUE(s.rfind("rpma_", 0) == 0 || s == "LIBRPMA_1.0") << s;
  }
}

}  // namespace
