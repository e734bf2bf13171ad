#include "stats.h"

#include <cstdio>

namespace kv::server {
namespace {

void Line(std::string* out, const std::string& name, uint64_t v) {
  out->append(name);
  out->push_back(' ');
  out->append(std::to_string(v));
  out->push_back('\n');
}

// A ratio as a decimal with three digits ("0.734"): INFO's one
// non-integer value, so a reader needs no float parsing for the others.
void RatioLine(std::string* out, const std::string& name, uint64_t part,
               uint64_t whole) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.3f",
           whole == 0 ? 0.0
                      : static_cast<double>(part) / static_cast<double>(whole));
  out->append(name);
  out->push_back(' ');
  out->append(buf);
  out->push_back('\n');
}

uint64_t Load(const std::atomic<uint64_t>& c) {
  return c.load(std::memory_order_relaxed);
}

}  // namespace

std::string StatsText(const Stats& s, const std::vector<KeyspaceLine>& ks) {
  std::string out;
  Line(&out, "connections_total", Load(s.connections_total));
  Line(&out, "connections_active", Load(s.connections_active));
  Line(&out, "refusals", Load(s.refusals));
  Line(&out, "puts", Load(s.puts));
  Line(&out, "deletes", Load(s.deletes));
  Line(&out, "commits", Load(s.commits));
  Line(&out, "commit_failures", Load(s.commit_failures));
  Line(&out, "commit_groups", Load(s.commit_groups));
  Line(&out, "commit_groups_shared", Load(s.commit_groups_shared));
  Line(&out, "committed_bytes", Load(s.committed_bytes));
  Line(&out, "refills", Load(s.refills));
  Line(&out, "hellos", Load(s.hellos));
  Line(&out, "infos", Load(s.infos));
  Line(&out, "protocol_errors", Load(s.protocol_errors));
  Line(&out, "sessions_lost", Load(s.sessions_lost));
  Line(&out, "cleaner_runs", Load(s.cleaner_runs));
  Line(&out, "cleaner_segments", Load(s.cleaner_segments));
  Line(&out, "cleaner_failures", Load(s.cleaner_failures));
  for (const KeyspaceLine& k : ks) {
    const std::string p = "keyspace." + k.name + ".";
    Line(&out, p + "keys", k.stats.keys);
    Line(&out, p + "live_bytes", k.stats.live_bytes);
    Line(&out, p + "dead_bytes", k.stats.dead_bytes);
    Line(&out, p + "segments", k.stats.segments);
    Line(&out, p + "free_segments", k.stats.free_segments);
    Line(&out, p + "open_segments", k.stats.open_segments);
    Line(&out, p + "sealed_segments", k.stats.sealed_segments);
    Line(&out, p + "log_bytes_used", k.stats.log_bytes_used);
    Line(&out, p + "log_bytes", k.stats.log_bytes);
    Line(&out, p + "index_slots_used", k.stats.index_slots_used);
    Line(&out, p + "index_slots", k.stats.index_slots);
    // The index grows online (docs/format.md, "Index growth"): its
    // current bucket count, the doublings so far, and its load.
    Line(&out, p + "index_buckets", k.stats.index_buckets);
    Line(&out, p + "index_growths", k.stats.index_growths);
    RatioLine(&out, p + "index_load", k.stats.index_slots_used,
              k.stats.index_slots);
  }
  return out;
}

}  // namespace kv::server
