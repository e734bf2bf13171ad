#include "command_context.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kv::kvcli::command {

Reply UsageError(std::string message) {
  Reply r;
  r.status = Status::InvalidArgument(std::move(message));
  r.exit_code = 2;
  r.usage = true;
  return r;
}

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

std::string KeyOf(const Token& t) {
  return t.from_file ? "@" + t.text : t.text;
}

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

std::string Count(const Context& c, size_t n) {
  return c.out->options().stdout_tty ? "(integer) " + std::to_string(n)
                                     : std::to_string(n);
}

Reply PutReply(Context& c, const Status& st, uint64_t version) {
  if (!st.ok()) return OperationError(c, st);
  Reply r;
  r.text = "OK";
  r.json.Number("version", version);
  return r;
}

Reply GetReply(Context& c, const std::string& key, const Status& st,
               const std::string& value) {
  Reply r;
  if (st.IsNotFound()) {
    r.status = st;
    r.json.Bytes("key", key);
    return r;
  }
  if (!st.ok()) return OperationError(c, st);
  r.text = c.out->Value(value);
  r.newline = !c.out->options().raw;
  r.json.Bytes("key", key).Bytes("value", value);
  return r;
}

Reply DelReply(Context& c, const Status& st, bool existed) {
  if (!st.ok()) return OperationError(c, st);
  Reply r;
  r.text = existed ? "OK" : "OK (the key did not exist)";
  r.json.Bool("existed", existed);
  return r;
}

}  // namespace kv::kvcli::command
