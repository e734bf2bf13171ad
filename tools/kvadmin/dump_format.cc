#include "dump_format.h"

#include <cstring>

#include "kv/crc32c.h"

namespace kv::kvadmin::dump {
namespace {

template <typename T>
void Put(std::string* s, T v) {
  for (size_t i = 0; i < sizeof(T); i++) {
    s->push_back(
        static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
  }
}

template <typename T>
T Get(const char* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); i++) {
    v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  }
  return static_cast<T>(v);
}

}  // namespace

DumpWriter::DumpWriter(std::ostream* out) : out_(out) {
  std::string h(kMagic, sizeof(kMagic));
  Put<uint32_t>(&h, kVersion);
  Put<uint32_t>(&h, Crc32c(h.data(), h.size()));
  out_->write(h.data(), static_cast<std::streamsize>(h.size()));
  bytes_ += h.size();
}

void DumpWriter::Frame(char type, const std::string& body) {
  std::string f(1, type);
  Put<uint32_t>(&f, static_cast<uint32_t>(body.size()));
  f += body;
  Put<uint32_t>(&f, Crc32c(f.data(), f.size()));
  out_->write(f.data(), static_cast<std::streamsize>(f.size()));
  bytes_ += f.size();
}

void DumpWriter::Keyspace(const KeyspaceFrame& k) {
  std::string b;
  Put<uint64_t>(&b, k.bucket_count);
  Put<uint64_t>(&b, k.log_size);
  Put<uint32_t>(&b, k.segment_size);
  Put<uint32_t>(&b, k.max_value_size);
  b += k.name;
  Frame('K', b);
  keyspaces_++;
}

void DumpWriter::Record(std::string_view key, std::string_view value,
                        uint64_t expiry_ms) {
  std::string b;
  b.reserve(12 + key.size() + value.size());
  Put<uint32_t>(&b, static_cast<uint32_t>(key.size()));
  b += key;
  if (expiry_ms != 0) Put<uint64_t>(&b, expiry_ms);
  b += value;
  Frame(expiry_ms != 0 ? 'X' : 'R', b);
  records_++;
}

void DumpWriter::End() {
  std::string b;
  Put<uint64_t>(&b, keyspaces_);
  Put<uint64_t>(&b, records_);
  Frame('E', b);
}

DumpReader::DumpReader(std::istream* in, std::string name)
    : in_(in), name_(std::move(name)) {}

Status DumpReader::Corrupt(uint64_t at, const std::string& what) const {
  return Status::Corruption("dump " + name_ + ": " +
                            (at == 0
                                 ? std::string("header")
                                 : "frame at offset " + std::to_string(at)) +
                            ": " + what + "; nothing was loaded");
}

Status DumpReader::ReadHeader() {
  char h[kHeaderBytes];
  in_->read(h, sizeof(h));
  if (in_->gcount() != static_cast<std::streamsize>(sizeof(h))) {
    return Corrupt(0, "shorter than a header (not a kvadmin dump?)");
  }
  if (std::memcmp(h, kMagic, sizeof(kMagic)) != 0) {
    return Corrupt(0, "bad magic (not a kvadmin dump)");
  }
  if (Get<uint32_t>(h + 12) != Crc32c(h, 12)) {
    return Corrupt(0, "checksum mismatch");
  }
  version_ = Get<uint32_t>(h + 8);
  if (version_ != 1 && version_ != kVersion) {
    return Corrupt(0, "version " + std::to_string(version_) +
                          " (this kvadmin reads versions 1 and 2)");
  }
  offset_ = kHeaderBytes;
  return Status::Ok();
}

Status DumpReader::Next(Kind* kind, KeyspaceFrame* keyspace, std::string* key,
                        std::string* value, uint64_t* expiry_ms) {
  const uint64_t at = offset_;
  if (ended_) return Corrupt(at, "frames after the end frame");
  char head[5];
  in_->read(head, sizeof(head));
  if (in_->gcount() == 0) return Corrupt(at, "truncated: no end frame");
  if (in_->gcount() != 5) return Corrupt(at, "truncated frame header");
  const char type = head[0];
  const uint32_t len = Get<uint32_t>(head + 1);
  if (type != 'K' && type != 'R' && type != 'E' &&
      !(type == 'X' && version_ >= 2)) {
    return Corrupt(
        at, "unknown frame type " + std::to_string(static_cast<uint8_t>(type)));
  }
  if (len > kMaxBody) {
    return Corrupt(at, "frame length " + std::to_string(len) +
                           " is over the limit of " + std::to_string(kMaxBody));
  }
  std::string frame(head, sizeof(head));
  frame.resize(sizeof(head) + len + 4);
  in_->read(frame.data() + sizeof(head), len + 4);
  if (in_->gcount() != static_cast<std::streamsize>(len + 4)) {
    return Corrupt(at,
                   "truncated frame (" + std::to_string(len) + "-byte body)");
  }
  const char* body = frame.data() + sizeof(head);
  if (Get<uint32_t>(body + len) != Crc32c(frame.data(), sizeof(head) + len)) {
    return Corrupt(at, "checksum mismatch");
  }
  offset_ += frame.size();
  if (type == 'K') {
    if (len < 24) return Corrupt(at, "keyspace frame too short");
    keyspace->bucket_count = Get<uint64_t>(body);
    keyspace->log_size = Get<uint64_t>(body + 8);
    keyspace->segment_size = Get<uint32_t>(body + 16);
    keyspace->max_value_size = Get<uint32_t>(body + 20);
    keyspace->name.assign(body + 24, len - 24);
    in_keyspace_ = true;
    keyspaces_++;
    *kind = Kind::kKeyspace;
    return Status::Ok();
  }
  if (type == 'R' || type == 'X') {
    if (!in_keyspace_) return Corrupt(at, "a record before any keyspace");
    const uint32_t extra = type == 'X' ? 8 : 0;
    if (len < 4 + extra) return Corrupt(at, "record frame too short");
    const uint32_t klen = Get<uint32_t>(body);
    if (klen == 0 || klen > len - 4 - extra) {
      return Corrupt(
          at, "key length " + std::to_string(klen) + " does not fit the frame");
    }
    key->assign(body + 4, klen);
    const uint64_t expiry = extra ? Get<uint64_t>(body + 4 + klen) : 0;
    if (type == 'X' && expiry == 0) return Corrupt(at, "expiry 0");
    if (expiry_ms != nullptr) *expiry_ms = expiry;
    value->assign(body + 4 + klen + extra, len - 4 - klen - extra);
    records_++;
    *kind = Kind::kRecord;
    return Status::Ok();
  }
  if (len != 16) return Corrupt(at, "end frame of the wrong size");
  if (Get<uint64_t>(body) != keyspaces_ ||
      Get<uint64_t>(body + 8) != records_) {
    return Corrupt(
        at, "the end frame counts " + std::to_string(Get<uint64_t>(body)) +
                " keyspaces and " + std::to_string(Get<uint64_t>(body + 8)) +
                " records, the file holds " + std::to_string(keyspaces_) +
                " and " + std::to_string(records_));
  }
  ended_ = true;
  if (in_->peek() != std::char_traits<char>::eof()) {
    return Corrupt(offset_, "bytes after the end frame");
  }
  *kind = Kind::kEnd;
  return Status::Ok();
}

}  // namespace kv::kvadmin::dump
