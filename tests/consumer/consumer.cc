// consumer_cpp SERVER: the C++ API (kv::Client) and the C API from C++,
// from a program outside the rpkv tree. Exit 0 when all checks hold.
#include <kv/client/client.h>
#include <rpkv/rpkv.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

namespace {

int failures = 0;

void Check(bool ok, const char* what, const kv::Status& st = kv::Status()) {
  if (ok) return;
  std::cerr << "consumer_cpp: check failed: " << what;
  if (!st.ok()) std::cerr << " (" << st.ToString() << ")";
  std::cerr << "\n";
  failures++;
}

}  // namespace

int main(int argc, char** argv) {
  kv::ClientOptions options;
  options.server = argc > 1 ? argv[1] : "127.0.0.1:7400";
  options.keyspace = "default";
  kv::Result<std::unique_ptr<kv::Client>> client = kv::Client::Connect(options);
  if (!client.ok()) {
    std::cerr << "consumer_cpp: " << client.status().ToString() << "\n";
    return 1;
  }
  kv::Client& c = **client;
  const std::string key = "consumer-cpp-key";
  const std::string value("hello\0from C++", 14);

  kv::Status st = c.Put(key, value);
  Check(st.ok(), "Put", st);
  std::string got;
  kv::KeyVersion version;
  st = c.Get(key, &got, &version);
  Check(st.ok() && got == value, "Get returns the value", st);
  Check(version.sequence != 0, "Get returns a version");

  kv::WriteOptions cas;
  cas.if_version = version.sequence;
  st = c.Put(key, "second", cas);
  Check(st.ok(), "Put if_version (current)", st);
  st = c.Put(key, "third", cas);
  Check(st.IsConditionFailed(), "Put if_version (stale)", st);

  st = c.Delete(key);
  Check(st.ok(), "Delete", st);
  st = c.Get(key, &got);
  Check(st.IsNotFound(), "Get after Delete is not_found", st);

  // The C API from C++: same library, same server.
  rpkv* db = nullptr;
  int rc = rpkv_connect(options.server.c_str(), "default", nullptr, &db);
  Check(rc == RPKV_OK && db != nullptr, rpkv_errmsg(nullptr));
  if (db != nullptr) {
    Check(rpkv_put(db, "k", 1, "v", 1) == RPKV_OK, rpkv_errmsg(db));
    st = c.Get("k", &got);
    Check(st.ok() && got == "v", "kv::Client sees the C API's put", st);
    Check(rpkv_delete(db, "k", 1) == RPKV_OK, rpkv_errmsg(db));
    rpkv_close(db);
  }

  if (failures != 0) return 1;
  std::cout << "consumer_cpp: ok (librpkv " << rpkv_version() << ")\n";
  return 0;
}
