#include "commands.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kv::kvcli {
namespace {

using Args = std::vector<Token>;

struct Context {
  Session* session;
  Output* out;
  bool* quit;
};

using Handler = Reply (*)(Context&, const Args&);

struct Command {
  CommandInfo info;
  size_t min_args;
  size_t max_args;  // SIZE_MAX: any
  Handler run;
};

constexpr size_t kAny = SIZE_MAX;
constexpr size_t kDefaultScanLimit = 1000;

Reply UsageError(std::string message) {
  Reply r;
  r.status = Status::InvalidArgument(std::move(message));
  r.exit_code = 2;
  return r;
}

// A reply for a failed operation on a connected client: unavailable and
// timed_out drop the connection so that the next command reconnects.
Reply OperationError(Context& c, const Status& st) {
  Reply r;
  r.status = st;
  r.hint = OperationHint(st);
  if (st.code() == StatusCode::kUnavailable ||
      st.code() == StatusCode::kTimedOut) {
    c.session->Lost();
  }
  return r;
}

// A key is always taken literally: an unquoted @ is part of it.
std::string KeyOf(const Token& t) {
  return t.from_file ? "@" + t.text : t.text;
}

// A value: the token's bytes, or the contents of the file an unquoted
// @path names.
bool ValueOf(const Token& t, std::string* value, Reply* error) {
  if (!t.from_file) {
    *value = t.text;
    return true;
  }
  std::ifstream in(t.text, std::ios::binary);
  if (!in) {
    *error = UsageError("cannot read @" + t.text + ": " + strerror(errno));
    error->hint = "quote it (\"@…\") for a value that starts with @";
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  *value = s.str();
  return true;
}

Reply Put(Context& c, const Args& a) {
  Reply r;
  std::string value;
  if (!ValueOf(a[1], &value, &r)) return r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  KeyVersion v;
  Status st = client->Put(KeyOf(a[0]), value, {.version = &v});
  if (!st.ok()) return OperationError(c, st);
  r.text = "OK";
  r.json.Number("version", v.sequence);
  return r;
}

Reply Get(Context& c, const Args& a) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  std::string value;
  Status st = client->Get(KeyOf(a[0]), &value);
  if (st.IsNotFound()) {
    r.status = st;
    r.json.Bytes("key", KeyOf(a[0]));
    return r;
  }
  if (!st.ok()) return OperationError(c, st);
  r.text = c.out->Value(value);
  r.newline = !c.out->options().raw;
  r.json.Bytes("key", KeyOf(a[0])).Bytes("value", value);
  return r;
}

Reply Del(Context& c, const Args& a) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  bool existed = false;
  Status st = client->Delete(KeyOf(a[0]), {}, &existed);
  if (!st.ok()) return OperationError(c, st);
  r.text = existed ? "OK" : "OK (the key did not exist)";
  r.json.Bool("existed", existed);
  return r;
}

Reply Exists(Context& c, const Args& a) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  auto e = client->Exists(KeyOf(a[0]));
  if (!e.ok()) return OperationError(c, e.status());
  r.text = *e ? "true" : "false";
  r.json.Bool("exists", *e);
  r.exit_code = *e ? 0 : 1;
  return r;
}

// The worst per-operation result of a batch: 3 beats 1.
int Worst(int a, int b) { return a > b ? a : b; }

Reply Mput(Context& c, const Args& a) {
  if (a.size() % 2 != 0)
    return UsageError("usage: mput KEY VALUE [KEY VALUE ...]");
  Reply r;
  Batch batch;
  for (size_t i = 0; i < a.size(); i += 2) {
    std::string value;
    if (!ValueOf(a[i + 1], &value, &r)) return r;
    batch.Put(KeyOf(a[i]), value);
  }
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  Status st = client->Execute(&batch);
  if (!st.ok()) return OperationError(c, st);
  std::string items;
  size_t failed = 0;
  int code = 0;
  for (size_t i = 0; i < batch.size(); i++) {
    const Status& s = batch.result(i).status;
    JsonFields item;
    item.Bytes("key", KeyOf(a[2 * i]))
        .Bytes("status", StatusCodeName(s.code()));
    if (!s.ok()) {
      failed++;
      code = Worst(code, ExitCodeFor(s));
      item.Bytes("error", s.message());
      r.text += "error: " + Quote(KeyOf(a[2 * i])) + ": " + s.ToString() + "\n";
    }
    items += (i ? "," : "") + item.Object();
  }
  r.text += failed == 0 ? "OK (" + std::to_string(batch.size()) + " keys)"
                        : std::to_string(failed) + " of " +
                              std::to_string(batch.size()) + " puts failed";
  r.json.Raw("results", "[" + items + "]");
  r.exit_code = code;
  return r;
}

Reply Mget(Context& c, const Args& a) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  Batch batch;
  for (const Token& t : a) batch.Get(KeyOf(t));
  Status st = client->Execute(&batch);
  if (!st.ok()) return OperationError(c, st);
  std::string items;
  int code = 0;
  for (size_t i = 0; i < batch.size(); i++) {
    const Batch::Result& res = batch.result(i);
    JsonFields item;
    item.Bytes("key", KeyOf(a[i]))
        .Bytes("status", StatusCodeName(res.status.code()));
    if (i) r.text += "\n";
    if (res.status.ok()) {
      item.Bytes("value", res.value);
      r.text += c.out->options().raw ? res.value : c.out->Item(res.value);
    } else if (res.status.IsNotFound()) {
      r.text += "(not found)";
    } else {
      item.Bytes("error", res.status.message());
      r.text += "(error: " + res.status.ToString() + ")";
    }
    code = Worst(code, ExitCodeFor(res.status));
    items += (i ? "," : "") + item.Object();
  }
  r.json.Raw("results", "[" + items + "]");
  r.exit_code = code;
  return r;
}

Reply Scan(Context& c, const Args& a) {
  size_t limit = kDefaultScanLimit;
  if (a.size() == 2) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = strtoull(a[1].text.c_str(), &end, 10);
    if (a[1].text.empty() || *end != '\0' || errno != 0 ||
        a[1].text[0] == '-') {
      return UsageError("scan LIMIT must be a number (0: no limit), not '" +
                        a[1].text + "'");
    }
    limit = static_cast<size_t>(v);
  }
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  // The index has no order; people (and diffs of scripts' output) want
  // one: what the scan found is shown sorted by key.
  std::vector<std::pair<std::string, std::string>> found;
  Status st = client->Scan(a.empty() ? "" : KeyOf(a[0]), limit,
                           [&](std::string_view key, std::string_view value) {
                             found.emplace_back(key, value);
                             return true;
                           });
  if (!st.ok()) return OperationError(c, st);
  std::sort(found.begin(), found.end());
  std::string items;
  const size_t n = found.size();
  for (size_t i = 0; i < n; i++) {
    const auto& [key, value] = found[i];
    if (i) r.text += "\n";
    r.text += c.out->Item(key) + " " + c.out->Item(value);
    items += (i ? "," : "") +
             JsonFields().Bytes("key", key).Bytes("value", value).Object();
  }
  const bool truncated = limit != 0 && n >= limit;
  if (c.out->options().stdout_tty) {
    if (n) r.text += "\n";
    r.text += "(" + std::to_string(n) + (n == 1 ? " key" : " keys");
    if (truncated) r.text += "; limit reached — scan PREFIX 0 for all";
    r.text += ")";
  } else if (n == 0) {
    r.newline = false;
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

Reply Info(Context& c, const Args&) {
  Reply r = InfoTopic(c, Client::InfoTopic::kServer, "server_info");
  if (!r.status.ok()) return r;
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

Reply Quit(Context& c, const Args&) {
  *c.quit = true;
  Reply r;
  r.newline = false;
  return r;
}

const std::vector<Command>& Table() {
  static const std::vector<Command> table = {
      {{"put", "KEY VALUE",
        "store VALUE (or @FILE's contents) under KEY, durably"},
       2,
       2,
       Put},
      {{"get", "KEY", "print KEY's value (exit 1 when absent)"}, 1, 1, Get},
      {{"del", "KEY", "delete KEY, durably"}, 1, 1, Del},
      {{"exists", "KEY", "print true or false (exit 1 when absent)"},
       1,
       1,
       Exists},
      {{"mput", "KEY VALUE [KEY VALUE ...]", "many puts in flight together"},
       2,
       kAny,
       Mput},
      {{"mget", "KEY [KEY ...]", "many gets in flight together"},
       1,
       kAny,
       Mget},
      {{"scan", "[PREFIX [LIMIT]]",
        "keys with PREFIX and their values, sorted (LIMIT default 1000, 0: "
        "all)"},
       0,
       2,
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
      {{"info", "", "server, provider, pool granularity, keyspace geometry"},
       0,
       0,
       Info},
      {{"help", "[COMMAND]", "this list, or one command's usage"}, 0, 1, Help},
      {{"quit", "", "leave (also exit, Ctrl-D)"}, 0, 0, Quit},
      {{"exit", "", "leave"}, 0, 0, Quit},
  };
  return table;
}

const Command* Find(std::string_view name) {
  for (const Command& cmd : Table()) {
    if (cmd.info.name == name) return &cmd;
  }
  return nullptr;
}

std::string Synopsis(const CommandInfo& i) {
  return std::string(i.name) + (i.args.empty() ? "" : " ") +
         std::string(i.args);
}

Reply Help(Context& c, const Args& a) {
  Reply r;
  if (a.size() == 1) {
    const Command* cmd = Find(a[0].text);
    if (cmd == nullptr) {
      return UsageError("unknown command '" + a[0].text + "' (type help)");
    }
    r.text = "usage: " + Synopsis(cmd->info) + "\n  " +
             std::string(cmd->info.summary);
    r.json.Bytes("usage", Synopsis(cmd->info))
        .Bytes("summary", cmd->info.summary);
    return r;
  }
  std::string names;
  for (const Command& cmd : Table()) {
    std::string s = Synopsis(cmd.info);
    if (s.size() < 30) s += std::string(30 - s.size(), ' ');
    r.text += "  " + s + " " + std::string(cmd.info.summary) + "\n";
    names += (names.empty() ? "" : ",") + JsonQuote(cmd.info.name);
  }
  r.text +=
      "\nquoting: \"a b\" or 'a b'; escapes \\x00 \\n \\t \\\\ \\\" in \"…\" "
      "and bare words;\n@FILE as a value reads the file.";
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

int RunCommand(Session* session, Output* out, const std::vector<Token>& line,
               bool* quit) {
  if (line.empty()) return 0;
  const std::string& name = line[0].text;
  const Command* cmd = line[0].from_file ? nullptr : Find(name);
  if (cmd == nullptr) {
    return out->Print(name, UsageError("unknown command '" + KeyOf(line[0]) +
                                       "' (type help)"));
  }
  const Args args(line.begin() + 1, line.end());
  if (args.size() < cmd->min_args || args.size() > cmd->max_args) {
    return out->Print(name, UsageError("usage: " + Synopsis(cmd->info)));
  }
  Context c{session, out, quit};
  return out->Print(name, cmd->run(c, args));
}

}  // namespace kv::kvcli
