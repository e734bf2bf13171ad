// The commands on several keys: del K1 K2 …, exists K …, mput, mget.
#include "command_context.h"

namespace kv::kvcli::command {

// del K1 K2 …: all in flight together; prints how many existed.
Reply DelMany(Context& c, const Args& a) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  Batch batch;
  for (const Token& t : a) batch.Delete(KeyOf(t));
  Status st = client->Execute(&batch);
  if (!st.ok()) return OperationError(c, st);
  size_t deleted = 0;
  int code = 0;
  for (size_t i = 0; i < batch.size(); i++) {
    const Batch::Result& res = batch.result(i);
    if (res.status.ok()) {
      deleted += res.had_previous ? 1 : 0;
    } else {
      code = Worst(code, ExitCodeFor(res.status));
      r.text +=
          "error: " + Quote(KeyOf(a[i])) + ": " + res.status.ToString() + "\n";
    }
  }
  r.text += Count(c, deleted);
  r.json.Number("deleted", deleted).Number("keys", a.size());
  r.exit_code = code;
  return r;
}

// exists K: true/false; exists K1 K2 …: how many exist. Exit 1 when any
// is absent.
Reply Exists(Context& c, const Args& a) {
  Reply r;
  Client* client = c.session->Connected(&r);
  if (client == nullptr) return r;
  size_t present = 0;
  for (const Token& t : a) {
    auto e = client->Exists(KeyOf(t));
    if (!e.ok()) return OperationError(c, e.status());
    present += *e ? 1 : 0;
  }
  if (a.size() == 1) {
    r.text = present ? "true" : "false";
    r.json.Bool("exists", present == 1);
  } else {
    r.text = Count(c, present);
    r.json.Number("count", present).Number("keys", a.size());
  }
  r.exit_code = present == a.size() ? 0 : 1;
  return r;
}

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

}  // namespace kv::kvcli::command
