// A small linearizability checker for per-key registers (Wing & Gong's
// search with Lowe's memoization, as Porcupine does), for histories
// recorded by concurrent clients: put(v), delete, get -> v | absent.
//
// Keys are independent registers, so each key's history is checked on its
// own (P-compositionality). Values must be unique per put so a get's
// result names the put it saw. Header-only; not thread-safe (check after
// the run).
#ifndef KV_TESTS_E2E_LINEARIZABILITY_H_
#define KV_TESTS_E2E_LINEARIZABILITY_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kv::e2e {

// Monotonic nanoseconds: call and return times of a history's ops.
inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct HistoryOp {
  enum Kind { kPut, kDelete, kGet } kind = kGet;
  std::string key;
  std::string value;   // put: written; get: read (empty + found=false: absent)
  bool found = false;  // get
  int64_t call = 0;    // nanoseconds, monotonic
  int64_t ret = 0;
  // A put or delete whose outcome is unknown (unavailable: the connection
  // or the node went during it): it may take effect at any time after its
  // call, or never. Its ret is ignored.
  bool unknown = false;
};

// Returns true when one key's ops (any order) have a linearization in
// which every get returns the latest put's value (or absent after a delete
// or before any put). `start_absent`: the key is absent initially.
inline bool LinearizableRegister(std::vector<HistoryOp> ops) {
  std::sort(ops.begin(), ops.end(), [](const HistoryOp& a, const HistoryOp& b) {
    return a.call < b.call;
  });
  const size_t n = ops.size();
  if (n == 0) return true;
  size_t needed = 0;  // ops that must be linearized (not unknown)
  for (HistoryOp& o : ops) {
    if (o.unknown) o.ret = INT64_MAX;
    needed += o.unknown ? 0 : 1;
  }
  // State: index of the put whose value is current (-1: absent).
  std::vector<bool> done(n, false);
  std::set<std::pair<std::vector<bool>, int>> seen;
  // Iterative DFS with an explicit stack of (chosen op, previous state).
  struct Frame {
    size_t op;
    int prev_state;
  };
  std::vector<Frame> stack;
  int state = -1;
  size_t next_try = 0;    // candidate index to try at the current level
  size_t linearized = 0;  // of the needed ops
  while (linearized < needed) {
    // The earliest return among pending ops bounds the candidates.
    int64_t min_ret = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
      if (!done[i]) min_ret = std::min(min_ret, ops[i].ret);
    }
    bool advanced = false;
    for (size_t i = next_try; i < n; i++) {
      if (done[i] || ops[i].call > min_ret) continue;
      const HistoryOp& o = ops[i];
      int new_state = state;
      bool ok = true;
      if (o.kind == HistoryOp::kPut) {
        new_state = static_cast<int>(i);
      } else if (o.kind == HistoryOp::kDelete) {
        new_state = -1;
      } else if (o.found) {
        ok = state >= 0 && ops[state].value == o.value;
      } else {
        ok = state < 0;
      }
      if (!ok) continue;
      done[i] = true;
      if (!seen.insert({done, new_state}).second) {
        done[i] = false;
        continue;
      }
      stack.push_back({i, state});
      state = new_state;
      linearized += o.unknown ? 0 : 1;
      next_try = 0;
      advanced = true;
      break;
    }
    if (advanced) continue;
    if (stack.empty()) return false;
    const Frame f = stack.back();
    stack.pop_back();
    done[f.op] = false;
    state = f.prev_state;
    linearized -= ops[f.op].unknown ? 0 : 1;
    next_try = f.op + 1;
  }
  return true;
}

// Checks every key's history; returns the keys that fail.
inline std::vector<std::string> NonLinearizableKeys(
    const std::vector<HistoryOp>& history) {
  std::map<std::string, std::vector<HistoryOp>> by_key;
  for (const HistoryOp& o : history) by_key[o.key].push_back(o);
  std::vector<std::string> bad;
  for (auto& [key, ops] : by_key) {
    if (!LinearizableRegister(ops)) bad.push_back(key);
  }
  return bad;
}

}  // namespace kv::e2e

#endif  // KV_TESTS_E2E_LINEARIZABILITY_H_
