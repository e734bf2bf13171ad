#include "commands.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "command_context.h"
#include "glob.h"
#include "interrupt.h"
#include "suggest.h"

namespace kv::kvcli {
namespace {

// A test failpoint (tools/kvcli/README.md): with KVCLI_FAILPOINT=slow_scan
// a scan waits 200 ms before each key, so that a test can press Ctrl-C
// while it runs.
bool SlowScanFailpoint() {
  static const bool on = [] {
    const char* v = std::getenv("KVCLI_FAILPOINT");
    return v != nullptr && std::strcmp(v, "slow_scan") == 0;
  }();
  return on;
}

using namespace command;

using Handler = Reply (*)(Context&, const Args&);

struct Command {
  CommandInfo info;
  size_t min_args;
  size_t max_args;  // SIZE_MAX: any
  Handler run;
};

constexpr size_t kAny = SIZE_MAX;
constexpr size_t kDefaultScanLimit = 1000;

bool IsWord(const Token& t, const char* word);

// A time to live as the user typed it: `ex SECONDS` or `px MILLISECONDS`
// (unit and number tokens). A number that is not an integer is a usage
// error; one out of range goes on to the client, whose invalid_argument
// names the limits (a value past int64 in milliseconds is made one).
bool ParseTtl(const Token& unit, const Token& number,
              std::chrono::milliseconds* ttl, Reply* error) {
  const bool seconds = IsWord(unit, "ex");
  if (!seconds && !IsWord(unit, "px")) {
    *error = UsageError("expected ex SECONDS or px MILLISECONDS, not '" +
                        unit.text + "'");
    return false;
  }
  char* end = nullptr;
  errno = 0;
  const long long n = strtoll(number.text.c_str(), &end, 10);
  if (number.text.empty() || *end != '\0' || errno != 0) {
    *error =
        UsageError(std::string(seconds ? "ex SECONDS" : "px MILLISECONDS") +
                   " must be an integer, not '" + number.text + "'");
    return false;
  }
  long long ms = n;
  if (seconds && __builtin_mul_overflow(n, 1000LL, &ms)) {
    ms = n > 0 ? INT64_MAX : INT64_MIN;
  }
  *ttl = std::chrono::milliseconds(ms);
  return true;
}

// An integer as redis-cli shows one: "(integer) N" on a terminal.
Reply IntegerReply(Context& c, int64_t n, const char* json_name) {
  Reply r;
  const std::string s = std::to_string(n);
  r.text = c.out->options().stdout_tty ? "(integer) " + s : s;
  r.json.Raw(json_name, s);
  return r;
}

// put KEY VALUE [ex SECONDS | px MILLISECONDS]
Reply Put(Context& c, const Args& a) {
  Reply r;
  std::string value;
  if (!ValueOf(a[1], &value, &r)) return r;
  if (a.size() == 3) {
    return UsageError("usage: put KEY VALUE [ex SECONDS | px MILLISECONDS]");
  }
  WriteOptions wo;
  if (a.size() == 4) {
    std::chrono::milliseconds ttl{0};
    if (!ParseTtl(a[2], a[3], &ttl, &r)) return r;
    wo.ttl = ttl;
  }
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  KeyVersion v;
  wo.version = &v;
  Status st = client->Put(KeyOf(a[0]), value, wo);
  return PutReply(c, st, v.sequence);
}

// expire KEY SECONDS, pexpire KEY MILLISECONDS: 1 when set, 0 when the
// key does not exist (as Redis).
Reply ExpireCommand(Context& c, const Args& a, const char* unit) {
  Reply r;
  std::chrono::milliseconds ttl{0};
  Token unit_token;
  unit_token.text = unit;
  if (!ParseTtl(unit_token, a[1], &ttl, &r)) return r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  Result<bool> set = client->Expire(KeyOf(a[0]), ttl);
  if (!set.ok()) return OperationError(c, set.status());
  return IntegerReply(c, *set ? 1 : 0, "result");
}
Reply Expire(Context& c, const Args& a) { return ExpireCommand(c, a, "ex"); }
Reply PExpire(Context& c, const Args& a) { return ExpireCommand(c, a, "px"); }

// ttl KEY: seconds left, rounded as Redis rounds (-1 no expiry, -2 absent);
// pttl KEY: milliseconds.
Reply TtlCommand(Context& c, const Args& a, bool millis) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  Result<int64_t> ms = client->Ttl(KeyOf(a[0]));
  if (!ms.ok()) return OperationError(c, ms.status());
  int64_t n = *ms;
  if (!millis && n > 0) n = (n + 500) / 1000;
  return IntegerReply(c, n, millis ? "ttl_ms" : "ttl");
}
Reply Ttl(Context& c, const Args& a) { return TtlCommand(c, a, false); }
Reply PTtl(Context& c, const Args& a) { return TtlCommand(c, a, true); }

// persist KEY: 1 when an expiry was removed, 0 otherwise (as Redis).
Reply Persist(Context& c, const Args& a) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  Result<bool> removed = client->Persist(KeyOf(a[0]));
  if (!removed.ok()) return OperationError(c, removed.status());
  return IntegerReply(c, *removed ? 1 : 0, "result");
}

Reply Get(Context& c, const Args& a) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  std::string value;
  Status st = client->Get(KeyOf(a[0]), &value);
  return GetReply(c, KeyOf(a[0]), st, value);
}

Reply Del(Context& c, const Args& a) {
  if (a.size() > 1) return DelMany(c, a);
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  bool existed = false;
  Status st = client->Delete(KeyOf(a[0]), {}, &existed);
  return DelReply(c, st, existed);
}

// incr KEY, incrby KEY N: the new value, as redis-cli shows an integer.
Reply IncrByCommand(Context& c, const std::string& key, int64_t delta) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  auto v = client->IncrBy(key, delta);
  if (!v.ok()) return OperationError(c, v.status());
  const std::string n = std::to_string(*v);
  r.text = c.out->options().stdout_tty ? "(integer) " + n : n;
  r.json.Raw("value", n);
  return r;
}

Reply Incr(Context& c, const Args& a) {
  return IncrByCommand(c, KeyOf(a[0]), 1);
}

Reply IncrBy(Context& c, const Args& a) {
  char* end = nullptr;
  errno = 0;
  const long long d = strtoll(a[1].text.c_str(), &end, 10);
  if (a[1].text.empty() || *end != '\0' || errno != 0) {
    return UsageError("incrby N must be a signed 64-bit integer, not '" +
                      a[1].text + "'");
  }
  return IncrByCommand(c, KeyOf(a[0]), d);
}

Reply Append(Context& c, const Args& a) {
  Reply r;
  std::string suffix;
  if (!ValueOf(a[1], &suffix, &r)) return r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  auto n = client->Append(KeyOf(a[0]), suffix);
  if (!n.ok()) return OperationError(c, n.status());
  r.text = Count(c, *n);
  r.json.Number("length", *n);
  return r;
}

bool ParseCount(const std::string& text, uint64_t* v) {
  char* end = nullptr;
  errno = 0;
  *v = strtoull(text.c_str(), &end, 10);
  return !text.empty() && *end == '\0' && errno == 0 && text[0] != '-';
}

bool IsWord(const Token& t, const char* word) {
  if (t.from_file || t.text.size() != strlen(word)) return false;
  for (size_t i = 0; i < t.text.size(); i++) {
    if (tolower(static_cast<unsigned char>(t.text[i])) != word[i]) return false;
  }
  return true;
}

// scan CURSOR [match PATTERN] [count N]: one page, as Redis SCAN — the
// next cursor on the first line, then the keys (no values).
Reply ScanCursor(Context& c, const Args& a) {
  uint64_t cursor = 0, count = 0;
  if (!ParseCount(a[0].text, &cursor)) {
    return UsageError("scan CURSOR must be a number, not '" + a[0].text + "'");
  }
  std::string pattern = "*";
  for (size_t i = 1; i < a.size(); i += 2) {
    if (i + 1 >= a.size() ||
        !(IsWord(a[i], "match") || IsWord(a[i], "count"))) {
      return UsageError("usage: scan CURSOR [match PATTERN] [count N]");
    }
    if (IsWord(a[i], "match")) {
      pattern = KeyOf(a[i + 1]);
    } else if (!ParseCount(a[i + 1].text, &count) || count == 0) {
      return UsageError("scan count must be a number of at least 1, not '" +
                        a[i + 1].text + "'");
    }
  }
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  std::vector<std::string> keys;
  auto next =
      client->ScanPage(cursor, GlobPrefix(pattern), static_cast<size_t>(count),
                       [&](std::string_view key, std::string_view) {
                         if (GlobMatch(pattern, key)) keys.emplace_back(key);
                       });
  if (!next.ok()) {
    if (next.status().IsInvalidArgument()) {
      Reply u = UsageError(next.status().message());
      return u;
    }
    return OperationError(c, next.status());
  }
  r.text = std::to_string(*next);
  std::string items;
  for (size_t i = 0; i < keys.size(); i++) {
    r.text += "\n" + c.out->Item(keys[i]);
    items += (i ? "," : "") + JsonFields().Bytes("key", keys[i]).Object();
  }
  r.json.Number("cursor", *next)
      .Raw("keys", "[" + items + "]")
      .Number("count", keys.size());
  return r;
}

// scan [PREFIX [LIMIT]]: keys and values in hash order. On a terminal
// LIMIT defaults to 1000; in a pipe to none (everything streams). A limit
// that cut the listing says so: on a terminal in the count line, in a
// pipe on stderr with exit 1.
Reply Scan(Context& c, const Args& a) {
  if (!a.empty() && !a[0].from_file && !a[0].text.empty() &&
      a[0].text.find_first_not_of("0123456789") == std::string::npos &&
      (a.size() == 1 || IsWord(a[1], "match") || IsWord(a[1], "count"))) {
    return ScanCursor(c, a);
  }
  if (a.size() > 2) return UsageError("usage: scan [PREFIX [LIMIT]]");
  const bool tty = c.out->options().stdout_tty;
  uint64_t limit = tty ? kDefaultScanLimit : 0;
  if (a.size() == 2 && !ParseCount(a[1].text, &limit)) {
    return UsageError("scan LIMIT must be a number (0: no limit), not '" +
                      a[1].text + "'");
  }
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  // Text streams each item as it is found; JSON is one object, built
  // whole. One more key than the limit is asked for, to know whether the
  // limit cut anything.
  const bool stream = !c.out->json();
  size_t n = 0;
  bool truncated = false;
  std::string items;
  bool interrupted = false;
  Status st = client->Scan(
      a.empty() ? "" : KeyOf(a[0]), limit == 0 ? 0 : limit + 1,
      [&](std::string_view key, std::string_view value) {
        if (SlowScanFailpoint()) usleep(200000);
        if (Interrupted()) {
          interrupted = true;
          return false;
        }
        if (limit != 0 && n == limit) {
          truncated = true;
          return false;
        }
        if (stream) {
          c.out->Stream(c.out->Item(key) + " " + c.out->Item(value) + "\n");
        } else {
          items +=
              (n ? "," : "") +
              JsonFields().Bytes("key", key).Bytes("value", value).Object();
        }
        n++;
        return true;
      });
  if (!st.ok()) {
    Reply e = OperationError(c, st);
    e.hint =
        (n ? "the " + std::to_string(n) + " keys above are a part; " : "") +
        e.hint;
    return e;
  }
  r.newline = false;
  if (tty) {
    r.newline = true;
    r.text = "(" + std::to_string(n) + (n == 1 ? " key" : " keys");
    if (interrupted) {
      r.text += "; interrupted by Ctrl-C";
    } else if (truncated) {
      r.text += "; limit reached — scan " +
                std::string(a.empty() ? "\"\"" : Quote(KeyOf(a[0]))) +
                " 0 for all";
    }
    r.text += ")";
  } else if (interrupted) {
    r.exit_code = 1;
    r.note = "scan: interrupted after " + std::to_string(n) + " keys";
  } else if (truncated) {
    r.exit_code = 1;
    r.note = "scan: stopped at the limit of " + std::to_string(limit) +
             " keys; more keys match (LIMIT 0, or no LIMIT, lists all)";
  }
  r.json.Raw("keys", "[" + items + "]")
      .Number("count", n)
      .Bool("truncated", truncated);
  return r;
}

// "name value" lines into a JSON object of strings.
std::string LinesToJson(const std::string& text) {
  JsonFields f;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    const size_t v =
        sp == std::string::npos ? sp : line.find_first_not_of(' ', sp);
    f.Bytes(line.substr(0, sp), v == std::string::npos ? "" : line.substr(v));
  }
  return f.Object();
}

std::string TrimNewline(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

Reply InfoTopic(Context& c, Client::InfoTopic topic, const char* json_name) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  auto text = client->Info(topic);
  if (!text.ok()) return OperationError(c, text.status());
  r.text = TrimNewline(*text);
  if (topic == Client::InfoTopic::kKeyspaces) {
    std::string names;
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      names += (names.empty() ? "" : ",") + JsonQuote(line);
    }
    r.json.Raw(json_name, "[" + names + "]");
  } else {
    r.json.Raw(json_name, LinesToJson(*text));
  }
  return r;
}

Reply Keyspaces(Context& c, const Args&) {
  return InfoTopic(c, Client::InfoTopic::kKeyspaces, "keyspaces");
}

Reply Stats(Context& c, const Args&) {
  return InfoTopic(c, Client::InfoTopic::kStats, "stats");
}

// The "name value" lines of this keyspace in INFO stats
// ("keyspace.NAME.keys 12" → {"keys", 12}).
Result<std::map<std::string, uint64_t>> KeyspaceStats(Context& c,
                                                      Client* client) {
  auto text = client->Info(Client::InfoTopic::kStats);
  if (!text.ok()) return text.status();
  const std::string p = "keyspace." + c.session->options().keyspace + ".";
  std::map<std::string, uint64_t> m;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    if (line.compare(0, p.size(), p) != 0 || sp == std::string::npos) continue;
    m[line.substr(p.size(), sp - p.size())] =
        strtoull(line.c_str() + sp + 1, nullptr, 10);
  }
  return m;
}

Reply DbSize(Context& c, const Args&) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  auto m = KeyspaceStats(c, client);
  if (!m.ok()) return OperationError(c, m.status());
  auto it = m->find("keys");
  if (it == m->end()) {
    return OperationError(
        c, Status::Unavailable("the server's INFO stats have no key count "
                               "for this keyspace"));
  }
  r.text = Count(c, it->second);
  r.json.Number("keys", it->second);
  return r;
}

double Percent(uint64_t part, uint64_t whole) {
  return whole == 0
             ? 0.0
             : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// Slots used / slots, as INFO's index_load.
double IndexLoad(uint64_t used, uint64_t slots) {
  return slots == 0 ? 0.0
                    : static_cast<double>(used) / static_cast<double>(slots);
}

// The index's geometry, as kvadmin info words it (tools/kvadmin/
// commands.cc): "1024 buckets, 3 growths, load 0.734".
std::string IndexLine(uint64_t buckets, uint64_t growths, uint64_t used,
                      uint64_t slots) {
  char buf[128];
  snprintf(buf, sizeof(buf), "%llu buckets, %llu growth%s, load %.3f",
           static_cast<unsigned long long>(buckets),
           static_cast<unsigned long long>(growths), growths == 1 ? "" : "s",
           IndexLoad(used, slots));
  return buf;
}

Reply Info(Context& c, const Args&) {
  Reply r = InfoTopic(c, Client::InfoTopic::kServer, "server_info");
  if (!r.status.ok()) return r;
  // The keyspace's capacity used, from INFO stats (kvadmin info prints
  // the same line from the pool).
  Reply ignored;
  if (Client* client = c.session->Connected(&ignored)) {
    auto m = KeyspaceStats(c, client);
    if (m.ok() && m->count("log_bytes") != 0) {
      auto& v = *m;
      char buf[256];
      snprintf(buf, sizeof(buf),
               "log %llu of %llu bytes used (%.1f%%), index %llu of %llu "
               "slots used (%.1f%%)",
               static_cast<unsigned long long>(v["log_bytes_used"]),
               static_cast<unsigned long long>(v["log_bytes"]),
               Percent(v["log_bytes_used"], v["log_bytes"]),
               static_cast<unsigned long long>(v["index_slots_used"]),
               static_cast<unsigned long long>(v["index_slots"]),
               Percent(v["index_slots_used"], v["index_slots"]));
      r.text += "\nkeyspace " + c.session->options().keyspace + ": " +
                std::to_string(v["keys"]) + " keys\n  capacity: " + buf;
      r.json.Number("keys", v["keys"])
          .Number("log_bytes_used", v["log_bytes_used"])
          .Number("log_bytes", v["log_bytes"])
          .Number("index_slots_used", v["index_slots_used"])
          .Number("index_slots", v["index_slots"]);
      // The index grows online; a server of before that says nothing.
      if (m->count("index_buckets") != 0) {
        r.text +=
            "\n  index: " + IndexLine(v["index_buckets"], v["index_growths"],
                                      v["index_slots_used"], v["index_slots"]);
        r.json.Number("index_buckets", v["index_buckets"])
            .Number("index_growths", v["index_growths"])
            .Double("index_load",
                    IndexLoad(v["index_slots_used"], v["index_slots"]));
      }
    }
  }
  // The server's lines name provider, granularity and the keyspace's
  // geometry; the address is what only the client knows.
  const std::string& server = c.session->options().server;
  r.text = "server " + server + (r.text.empty() ? "" : "\n" + r.text);
  r.json.Bytes("server", server);
  return r;
}

Reply Ping(Context& c, const Args&) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  auto rtt = client->Ping();
  if (!rtt.ok()) return OperationError(c, rtt.status());
  const double us = static_cast<double>(rtt->count()) / 1000.0;
  char buf[64];
  snprintf(buf, sizeof(buf), "PONG %.1f us", us);
  r.text = buf;
  r.json.Double("rtt_us", us);
  return r;
}

Reply Use(Context& c, const Args& a) {
  Reply r;
  if (!c.session->Use(KeyOf(a[0]), &r)) return r;
  r.text = "OK (keyspace " + c.session->options().keyspace + ")";
  r.json.Bytes("keyspace", c.session->options().keyspace);
  return r;
}

Reply Help(Context& c, const Args& a);

// The ANSI/VT100 sequence (cursor home, erase the screen) that every
// terminal emulator in use takes; nothing when stdout is not a terminal.
Reply Clear(Context& c, const Args&) {
  Reply r;
  r.newline = false;
  if (c.out->options().stdout_tty && !c.out->json()) r.text = "\x1b[H\x1b[2J";
  return r;
}

Reply Quit(Context& c, const Args&) {
  *c.quit = true;
  Reply r;
  r.newline = false;
  return r;
}

const std::vector<Command>& Table() {
  static const std::vector<Command> table = {
      {{"put", "KEY VALUE [ex SECONDS | px MS]",
        "store VALUE (or @FILE's contents) under KEY, durably; with ex/px "
        "the key expires after that time",
        "set"},
       2,
       4,
       Put},
      {{"get", "KEY", "print KEY's value (exit 1 when absent)"}, 1, 1, Get},
      {{"del", "KEY [KEY ...]",
        "delete, durably (several keys: print how many existed)", "delete"},
       1,
       kAny,
       Del},
      {{"exists", "KEY [KEY ...]",
        "print true or false (several: how many exist); exit 1 when any "
        "is absent"},
       1,
       kAny,
       Exists},
      {{"incr", "KEY",
        "add 1 to KEY's integer value (absent: 0), atomically; print it"},
       1,
       1,
       Incr},
      {{"incrby", "KEY N", "add N (may be negative), atomically; print it"},
       2,
       2,
       IncrBy},
      {{"append", "KEY VALUE",
        "append VALUE to KEY's value (absent: empty), atomically; print the "
        "new length"},
       2,
       2,
       Append},
      {{"expire", "KEY SECONDS",
        "set KEY's time to live; print 1, or 0 when KEY is absent"},
       2,
       2,
       Expire},
      {{"pexpire", "KEY MS", "expire, in milliseconds"}, 2, 2, PExpire},
      {{"ttl", "KEY",
        "seconds KEY has left (-1: no expiry, -2: absent or expired)"},
       1,
       1,
       Ttl},
      {{"pttl", "KEY", "ttl, in milliseconds"}, 1, 1, PTtl},
      {{"persist", "KEY",
        "remove KEY's expiry; print 1, or 0 when it had none or is absent"},
       1,
       1,
       Persist},
      {{"mput", "KEY VALUE [KEY VALUE ...]", "many puts in flight together",
        "mset"},
       2,
       kAny,
       Mput},
      {{"mget", "KEY [KEY ...]", "many gets in flight together"},
       1,
       kAny,
       Mget},
      {{"scan", "[PREFIX [LIMIT]] | CURSOR [match P] [count N]",
        "keys with PREFIX and values, in hash order (LIMIT: 1000 on a "
        "terminal, none in a pipe; 0: all); or one page, as SCAN"},
       0,
       5,
       Scan},
      {{"use", "KEYSPACE", "switch to another keyspace of the server"},
       1,
       1,
       Use},
      {{"keyspaces", "", "list the keyspaces the server shows you"},
       0,
       0,
       Keyspaces},
      {{"stats", "", "server counters"}, 0, 0, Stats},
      {{"ping", "", "round-trip time to the server"}, 0, 0, Ping},
      {{"info", "",
        "server, provider, pool granularity, keyspace geometry and capacity "
        "used (log, index)"},
       0,
       0,
       Info},
      {{"dbsize", "", "how many keys the keyspace holds"}, 0, 0, DbSize},
      {{"clear", "", "clear the screen (also Ctrl-L)"}, 0, 0, Clear},
      {{"help", "[COMMAND]", "this list, or one command's usage"}, 0, 1, Help},
      {{"quit", "", "leave (also exit, Ctrl-D)"}, 0, 0, Quit},
      {{"exit", "", "leave"}, 0, 0, Quit},
  };
  return table;
}

std::string Lowercase(std::string_view s) {
  std::string out(s);
  for (char& ch : out) {
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  }
  return out;
}

// Every name a command answers to: its own, then its aliases.
std::vector<std::string_view> Names(const CommandInfo& info) {
  std::vector<std::string_view> names = {info.name};
  std::string_view rest = info.aliases;
  while (!rest.empty()) {
    const size_t sp = rest.find(' ');
    names.push_back(rest.substr(0, sp));
    rest = sp == std::string_view::npos ? "" : rest.substr(sp + 1);
  }
  return names;
}

const Command* Find(std::string_view typed) {
  const std::string name = Lowercase(typed);
  for (const Command& cmd : Table()) {
    for (std::string_view n : Names(cmd.info)) {
      if (n == name) return &cmd;
    }
  }
  return nullptr;
}

Reply UnknownCommand(const std::string& name) {
  std::vector<std::string_view> all;
  for (const Command& cmd : Table()) {
    for (std::string_view n : Names(cmd.info)) all.push_back(n);
  }
  const std::string near = Nearest(name, all);
  return UsageError("unknown command '" + name + "'" +
                    (near.empty() ? "" : ": did you mean " + near + "?"));
}

std::string Synopsis(const CommandInfo& i) {
  return std::string(i.name) + (i.args.empty() ? "" : " ") +
         std::string(i.args);
}

Reply Help(Context& c, const Args& a) {
  Reply r;
  if (a.size() == 1) {
    const Command* cmd = Find(a[0].text);
    if (cmd == nullptr) return UnknownCommand(a[0].text);
    r.text = "usage: " + Synopsis(cmd->info) + "\n  " +
             std::string(cmd->info.summary);
    if (!cmd->info.aliases.empty()) {
      r.text += "\n  also: " + std::string(cmd->info.aliases);
    }
    r.json.Bytes("usage", Synopsis(cmd->info))
        .Bytes("summary", cmd->info.summary);
    return r;
  }
  std::string names;
  for (const Command& cmd : Table()) {
    std::string s = Synopsis(cmd.info);
    if (s.size() < 30) s += std::string(30 - s.size(), ' ');
    r.text += "  " + s + " " + std::string(cmd.info.summary);
    if (!cmd.info.aliases.empty()) {
      r.text += " (also " + std::string(cmd.info.aliases) + ")";
    }
    r.text += "\n";
    names += (names.empty() ? "" : ",") + JsonQuote(cmd.info.name);
  }
  r.text +=
      "\nquoting: \"a b\" or 'a b'; escapes \\x00 \\n \\t \\\\ \\\" in \"…\" "
      "and bare words;\n@FILE as a value reads the file. Commands are "
      "case-insensitive.\nCtrl-C clears the line, Ctrl-L clears the screen, "
      "Ctrl-D leaves.";
  r.json.Raw("commands", "[" + names + "]");
  return r;
}

}  // namespace

const std::vector<CommandInfo>& CommandTable() {
  static const std::vector<CommandInfo> infos = [] {
    std::vector<CommandInfo> v;
    for (const Command& cmd : Table()) v.push_back(cmd.info);
    return v;
  }();
  return infos;
}

bool IsCommand(std::string_view word) { return Find(word) != nullptr; }

std::string_view CommandName(std::string_view word) {
  const Command* cmd = Find(word);
  return cmd == nullptr ? std::string_view() : cmd->info.name;
}

int RunCommand(Session* session, Output* out, const std::vector<Token>& line,
               bool* quit) {
  if (line.empty()) return 0;
  const Command* cmd = line[0].from_file ? nullptr : Find(line[0].text);
  if (cmd == nullptr) {
    return out->Print(line[0].text, UnknownCommand(KeyOf(line[0])));
  }
  // JSON's "command" is the command's own name (put for SET).
  const std::string_view name = cmd->info.name;
  const Args args(line.begin() + 1, line.end());
  if (args.size() < cmd->min_args || args.size() > cmd->max_args) {
    return out->Print(name, UsageError("usage: " + Synopsis(cmd->info)));
  }
  Context c{session, out, quit};
  return out->Print(name, cmd->run(c, args));
}

}  // namespace kv::kvcli
