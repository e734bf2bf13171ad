// kv::Status and kv::Result<T>: how every rpkv C++ module reports errors.
//
// Header-only (part of the formats clients share). A Status is a code plus
// a message meant for a person; no exceptions cross module boundaries.
// Thread-safety: values; copy freely.
#ifndef KV_STATUS_H_
#define KV_STATUS_H_

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kv {

enum class StatusCode {
  kOk = 0,
  kNotFound,
  kInvalidArgument,
  kCorruption,
  kIoError,
  kNoSpace,
  kUnavailable,
  kTimedOut,
  kBusy,
  kPermissionDenied,
  // A conditional write's condition did not hold (put-if-absent on a
  // present key, an expected version that is not the key's current one).
  kConditionFailed,
  // The server does not own the key's shard at the request's map epoch
  // (cluster): re-read the cluster map and retry there.
  kWrongShard,
};

// Stable lower-case name of a code ("not_found", ...), used in messages and
// on the wire.
constexpr std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kCorruption:
      return "corruption";
    case StatusCode::kIoError:
      return "io_error";
    case StatusCode::kNoSpace:
      return "no_space";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kTimedOut:
      return "timed_out";
    case StatusCode::kBusy:
      return "busy";
    case StatusCode::kPermissionDenied:
      return "permission_denied";
    case StatusCode::kConditionFailed:
      return "condition_failed";
    case StatusCode::kWrongShard:
      return "wrong_shard";
  }
  return "unknown";
}

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status NotFound(std::string m) {
    return {StatusCode::kNotFound, std::move(m)};
  }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status Corruption(std::string m) {
    return {StatusCode::kCorruption, std::move(m)};
  }
  static Status IoError(std::string m) {
    return {StatusCode::kIoError, std::move(m)};
  }
  static Status NoSpace(std::string m) {
    return {StatusCode::kNoSpace, std::move(m)};
  }
  static Status Unavailable(std::string m) {
    return {StatusCode::kUnavailable, std::move(m)};
  }
  static Status TimedOut(std::string m) {
    return {StatusCode::kTimedOut, std::move(m)};
  }
  static Status Busy(std::string m) {
    return {StatusCode::kBusy, std::move(m)};
  }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }
  static Status ConditionFailed(std::string m) {
    return {StatusCode::kConditionFailed, std::move(m)};
  }
  static Status WrongShard(std::string m) {
    return {StatusCode::kWrongShard, std::move(m)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }
  bool IsInvalidArgument() const {
    return code_ == StatusCode::kInvalidArgument;
  }
  bool IsCorruption() const { return code_ == StatusCode::kCorruption; }
  bool IsNoSpace() const { return code_ == StatusCode::kNoSpace; }
  bool IsWrongShard() const { return code_ == StatusCode::kWrongShard; }
  bool IsConditionFailed() const {
    return code_ == StatusCode::kConditionFailed;
  }

  // "code: message" (or "ok").
  std::string ToString() const {
    std::string s(StatusCodeName(code_));
    if (!message_.empty()) {
      s += ": ";
      s += message_;
    }
    return s;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) {
      v_ = Status(StatusCode::kUnavailable, "Result built from an ok Status");
    }
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  // Precondition: ok().
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace kv

// Returns early with the Status of `expr` when it is not ok.
#define KV_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::kv::Status kv_status_ = (expr);        \
    if (!kv_status_.ok()) return kv_status_; \
  } while (0)

#endif  // KV_STATUS_H_
