// Client::IncrBy, Append, Expire and Persist: read, modify, conditional
// write, retry on conflict. Only the public API is used (Get, Put with
// WriteOptions), so the loop is the same over any Client; the server's
// version check at commit, under the key's lock, is what makes it atomic.
// An expired version is absent to the server's check as to the read.
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "kv/client/client.h"
#include "kv/record_format.h"

namespace kv {
namespace {

// The new value from the current one (present or not); an error stops.
using Modify = std::function<Status(bool present, const std::string& current,
                                    std::string* next)>;
// The general form: also sees the version read (its expiry), sets the
// write's time to live, and may decide that nothing is written
// (*write = false: the loop returns ok without a write).
using Rewrite = std::function<Status(
    bool present, const std::string& current, const KeyVersion& version,
    std::string* next, WriteOptions* wo, bool* write)>;

// A pause after the n-th conflict: random in [0, min(1 ms, 10 us << n)),
// so that writers racing on one key stop colliding in lock step.
void Backoff(uint32_t n) {
  thread_local std::minstd_rand rng{std::random_device{}()};
  const uint32_t cap_us = n >= 7 ? 1000 : (10u << n);
  std::uniform_int_distribution<uint32_t> d(0, cap_us);
  std::this_thread::sleep_for(std::chrono::microseconds(d(rng)));
}

Status ConditionalRewrite(Client* c, std::string_view key, const char* what,
                          const Rewrite& rewrite, std::string* written,
                          bool* wrote) {
  const uint32_t max =
      c->options().max_conflicts ? c->options().max_conflicts : 1;
  for (uint32_t conflicts = 0;;) {
    std::string current;
    KeyVersion version;
    Status st = c->Get(key, &current, &version);
    const bool present = st.ok();
    if (!present && !st.IsNotFound()) return st;
    std::string next;
    WriteOptions wo;
    bool write = true;
    KV_RETURN_IF_ERROR(rewrite(present, current, version, &next, &wo, &write));
    if (!write) {
      *wrote = false;
      return Status::Ok();
    }
    if (present) {
      wo.if_version = version.sequence;
    } else {
      wo.if_absent = true;
    }
    st = c->Put(key, next, wo);
    if (st.ok()) {
      *written = std::move(next);
      *wrote = true;
      return st;
    }
    if (!st.IsConditionFailed()) return st;
    if (++conflicts >= max) {
      return Status::Busy(std::string(what) + ": " + std::to_string(conflicts) +
                          " conflicting writes in a row by other clients "
                          "(ClientOptions::max_conflicts); nothing was "
                          "changed by this call, try again");
    }
    Backoff(conflicts);
  }
}

// IncrBy and Append: an absent key counts as empty; the key's expiry is
// kept as the time left by this client's clock estimate.
Status ReadModifyWrite(Client* c, std::string_view key, const char* what,
                       const Modify& modify, std::string* written) {
  bool wrote = false;
  return ConditionalRewrite(
      c, key, what,
      [&](bool present, const std::string& current, const KeyVersion& v,
          std::string* next, WriteOptions* wo, bool*) {
        if (present && v.ttl_ms > 0) {
          wo->ttl = std::chrono::milliseconds(v.ttl_ms);
        }
        return modify(present, current, next);
      },
      written, &wrote);
}

// A signed 64-bit decimal integer, as Redis INCR reads one: optional '-',
// digits, nothing else (no spaces, no '+', no leading zeros but "0").
bool ParseInt64(const std::string& s, int64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  const size_t digits = s[0] == '-' ? 1 : 0;
  if (digits == s.size()) return false;
  if (s[digits] == '0' && s.size() > digits + 1) return false;
  for (size_t i = digits; i < s.size(); i++) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  if (s == "-0") return false;
  errno = 0;
  char* end = nullptr;
  const long long x = strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *v = x;
  return true;
}

}  // namespace

Result<int64_t> Client::IncrBy(std::string_view key, int64_t delta) {
  int64_t result = 0;
  std::string written;
  Status st = ReadModifyWrite(
      this, key, "incr",
      [&](bool present, const std::string& current, std::string* next) {
        int64_t v = 0;
        if (present && !ParseInt64(current, &v)) {
          return Status::InvalidArgument(
              "incr: the value is not an integer (a signed 64-bit decimal "
              "number such as -12)");
        }
        if (__builtin_add_overflow(v, delta, &result)) {
          return Status::InvalidArgument(
              "incr: the result would overflow a signed 64-bit integer");
        }
        *next = std::to_string(result);
        return Status::Ok();
      },
      &written);
  if (!st.ok()) return st;
  return result;
}

Result<bool> Client::Expire(std::string_view key,
                            std::chrono::milliseconds ttl) {
  Status st = record_format::CheckTtl(ttl.count());
  if (!st.ok()) return Status::InvalidArgument("expire: " + st.message());
  std::string written;
  bool wrote = false;
  st = ConditionalRewrite(
      this, key, "expire",
      [&](bool present, const std::string& current, const KeyVersion&,
          std::string* next, WriteOptions* wo, bool* write) {
        *write = present;
        *next = current;
        wo->ttl = ttl;
        return Status::Ok();
      },
      &written, &wrote);
  if (!st.ok()) return st;
  return wrote;
}

Result<bool> Client::Persist(std::string_view key) {
  std::string written;
  bool wrote = false;
  Status st = ConditionalRewrite(
      this, key, "persist",
      [&](bool present, const std::string& current, const KeyVersion& v,
          std::string* next, WriteOptions*, bool* write) {
        *write = present && v.expires_at_ms != 0;
        *next = current;
        return Status::Ok();
      },
      &written, &wrote);
  if (!st.ok()) return st;
  return wrote;
}

Result<uint64_t> Client::Append(std::string_view key, std::string_view suffix) {
  std::string written;
  Status st = ReadModifyWrite(
      this, key, "append",
      [&](bool, const std::string& current, std::string* next) {
        if (current.size() + suffix.size() > max_value_size()) {
          return Status::InvalidArgument(
              "append: the value would be " +
              std::to_string(current.size() + suffix.size()) +
              " bytes, over the keyspace's limit of " +
              std::to_string(max_value_size()));
        }
        *next = current;
        next->append(suffix);
        return Status::Ok();
      },
      &written);
  if (!st.ok()) return st;
  return static_cast<uint64_t>(written.size());
}

}  // namespace kv
