#include "access_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kv/keyspace_name.h"
#include "kv/protocol.h"

namespace kv::server {

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  constexpr size_t kPad = protocol::kMaxAccessKey;
  if (a.size() > kPad || b.size() > kPad) return false;
  volatile uint8_t diff = static_cast<uint8_t>(a.size() ^ b.size());
  for (size_t i = 0; i < kPad; i++) {
    const uint8_t x = i < a.size() ? static_cast<uint8_t>(a[i]) : 0;
    const uint8_t y = i < b.size() ? static_cast<uint8_t>(b[i]) : 0;
    diff = diff | static_cast<uint8_t>(x ^ y);
  }
  return diff == 0;
}

Result<std::string> ReadPrivateFile(const std::string& path,
                                    const std::string& what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const std::string why = std::strerror(errno);
    if (errno == ENOENT)
      return Status::NotFound(what + " " + path + ": " + why);
    return Status::IoError(what + " " + path + ": " + why);
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument(what + " " + path +
                                   " is not a regular file");
  }
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    ::close(fd);
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
    return Status::PermissionDenied(
        what + " " + path + " has mode " + mode +
        ": it must not be accessible by group or others (chmod 600 " + path +
        ")");
  }
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Status::IoError(what + " " + path + ": " + why);
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (16u << 20)) {
      ::close(fd);
      return Status::InvalidArgument(what + " " + path + " is over 16 MiB");
    }
  }
  ::close(fd);
  return text;
}

Result<std::unique_ptr<AccessKeys>> AccessKeys::Load(const std::string& path) {
  Result<std::string> text = ReadPrivateFile(path, "access keys file");
  if (!text.ok()) return text.status();
  Result<std::unique_ptr<AccessKeys>> keys = Parse(*text);
  if (!keys.ok()) {
    return Status::InvalidArgument("access keys file " + path + ": " +
                                   keys.status().message());
  }
  return keys;
}

Result<std::string> ParsePeerKey(std::string_view text) {
  std::string key;
  size_t line_no = 0;
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text =
        nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    line_no++;
    while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
    while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = "line " + std::to_string(line_no) + ": ";
    if (!key.empty()) {
      return Status::InvalidArgument(where + "a second key (one per file)");
    }
    for (char c : line) {
      if (is_space(c)) {
        return Status::InvalidArgument(where +
                                       "the key may not contain spaces");
      }
    }
    if (line.size() < AccessKeys::kMinAccessKey ||
        line.size() > protocol::kMaxAccessKey) {
      return Status::InvalidArgument(
          where + "the key is " + std::to_string(line.size()) +
          " bytes: 16 to 64 are needed (e.g. openssl rand -hex 16)");
    }
    key.assign(line);
  }
  if (key.empty()) return Status::InvalidArgument("no key in the file");
  return key;
}

Result<std::string> LoadPeerKey(const std::string& path) {
  Result<std::string> text = ReadPrivateFile(path, "peer key file");
  if (!text.ok()) return text.status();
  Result<std::string> key = ParsePeerKey(*text);
  if (!key.ok()) {
    return Status::InvalidArgument("peer key file " + path + ": " +
                                   key.status().message());
  }
  return key;
}

Result<std::unique_ptr<AccessKeys>> AccessKeys::Parse(std::string_view text) {
  auto keys = std::make_unique<AccessKeys>();
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text =
        nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    line_no++;
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
    while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
    while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    size_t sp = 0;
    while (sp < line.size() && !is_space(line[sp])) sp++;
    std::string_view name = line.substr(0, sp);
    std::string_view secret = line.substr(sp);
    while (!secret.empty() && is_space(secret.front())) secret.remove_prefix(1);
    const std::string where = "line " + std::to_string(line_no) + ": ";
    if (secret.empty()) {
      return Status::InvalidArgument(where + "expected 'keyspace secret'");
    }
    for (char c : secret) {
      if (is_space(c)) {
        return Status::InvalidArgument(where +
                                       "the secret may not contain spaces");
      }
    }
    Status st = ValidateKeyspaceName(name);
    if (!st.ok()) return Status::InvalidArgument(where + st.message());
    if (secret.size() < kMinAccessKey) {
      return Status::InvalidArgument(
          where + "secret of keyspace '" + std::string(name) + "' is " +
          std::to_string(secret.size()) + " bytes: at least " +
          std::to_string(kMinAccessKey) +
          " are needed (e.g. openssl rand -hex 16)");
    }
    if (secret.size() > protocol::kMaxAccessKey) {
      return Status::InvalidArgument(where + "secret longer than 64 bytes");
    }
    if (!keys->keys_.emplace(std::string(name), std::string(secret)).second) {
      return Status::InvalidArgument(where + "keyspace '" + std::string(name) +
                                     "' listed twice");
    }
  }
  return keys;
}

bool AccessKeys::Protected(std::string_view keyspace) const {
  return keys_.find(keyspace) != keys_.end();
}

bool AccessKeys::Check(std::string_view keyspace, std::string_view key) const {
  auto it = keys_.find(keyspace);
  if (it == keys_.end()) return false;
  return ConstantTimeEqual(it->second, key);
}

}  // namespace kv::server
