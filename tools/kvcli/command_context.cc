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

}  // namespace kv::kvcli::command
