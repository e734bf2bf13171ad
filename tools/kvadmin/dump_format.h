// The kvadmin dump file: every key and value of one or more keyspaces, as
// a stream of checksummed frames (docs/dump_format.md is the prose twin).
// Little-endian throughout.
//
//   header  "RPKVDMP1" (8 bytes), u32 version (2; 1 is read too), u32
//           CRC32C of the 12 bytes before it
//   frame   u8 type, u32 body length, body, u32 CRC32C of type, length
//           and body
//   'K'     a keyspace begins: u64 bucket_count, u64 log_size,
//           u32 segment_size, u32 max_value_size, name (the rest)
//   'R'     a record of the last keyspace: u32 key length, key, value
//           (the rest): binary-safe, any bytes
//   'X'     (version 2) a record with an expiry: u32 key length, key,
//           u64 expiry (Unix ms, the dumped pool's clock; non-zero), value
//   'E'     the end: u64 keyspaces, u64 records (must match the frames)
//
// Thread-safety: DumpReader/DumpWriter are single-threaded objects.
#ifndef KV_TOOLS_KVADMIN_DUMP_FORMAT_H_
#define KV_TOOLS_KVADMIN_DUMP_FORMAT_H_

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <string_view>

#include "kv/status.h"

namespace kv::kvadmin::dump {

inline constexpr char kMagic[8] = {'R', 'P', 'K', 'V', 'D', 'M', 'P', '1'};
// 2: 'X' frames (records with an expiry). Version 1 files are read.
inline constexpr uint32_t kVersion = 2;
inline constexpr size_t kHeaderBytes = 16;
// The largest body a reader accepts: a 1024-byte key, a value of the
// largest max_value_size (4,193,120) and the length fields.
inline constexpr uint32_t kMaxBody = 4u << 20;

struct KeyspaceFrame {
  std::string name;
  uint64_t bucket_count = 0;
  uint64_t log_size = 0;
  uint32_t segment_size = 0;
  uint32_t max_value_size = 0;
};

class DumpWriter {
 public:
  explicit DumpWriter(std::ostream* out);  // writes the header
  void Keyspace(const KeyspaceFrame& k);
  // expiry_ms 0: an 'R' frame; else an 'X' frame carrying it.
  void Record(std::string_view key, std::string_view value,
              uint64_t expiry_ms = 0);
  void End();  // the 'E' frame with the counts written
  uint64_t bytes() const { return bytes_; }

 private:
  void Frame(char type, const std::string& body);
  std::ostream* out_;
  uint64_t bytes_ = 0, keyspaces_ = 0, records_ = 0;
};

// Reads frames one at a time and checks each: a header, checksum, type,
// length or order that is wrong is corruption naming the byte offset of
// the frame ("dump FILE: frame at offset 1234: checksum mismatch …").
class DumpReader {
 public:
  DumpReader(std::istream* in, std::string name);
  Status ReadHeader();
  enum class Kind { kKeyspace, kRecord, kEnd };
  // The next frame into *kind and the matching out-field; a record's
  // expiry into *expiry_ms when given (0: none). After kEnd there must be
  // nothing more (trailing bytes are corruption).
  Status Next(Kind* kind, KeyspaceFrame* keyspace, std::string* key,
              std::string* value, uint64_t* expiry_ms = nullptr);
  uint64_t offset() const { return offset_; }

 private:
  Status Corrupt(uint64_t at, const std::string& what) const;
  std::istream* in_;
  std::string name_;
  uint64_t offset_ = 0, keyspaces_ = 0, records_ = 0;
  uint32_t version_ = 0;
  bool in_keyspace_ = false, ended_ = false;
};

}  // namespace kv::kvadmin::dump

#endif  // KV_TOOLS_KVADMIN_DUMP_FORMAT_H_
