#include "value.h"

#include <cstring>

#include "kv/crc32c.h"

namespace kvbench {
namespace {

constexpr size_t kHeader = 16;
constexpr size_t kTrailer = 4;

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The body bytes for (key id, version), written into p[0, n).
void FillBody(uint64_t key_id, uint32_t version, char* p, size_t n) {
  uint64_t state = key_id * 0x100000001b3ull ^ version;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = SplitMix64(&state);
    std::memcpy(p + i, &r, n - i < 8 ? n - i : 8);
  }
}

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t Crc(const char* p, size_t n) { return kv::Crc32c(p, n); }

}  // namespace

void MakeValue(uint64_t key_id, uint32_t version, size_t size,
               std::string* out) {
  out->resize(size);
  char* p = out->data();
  uint32_t n = static_cast<uint32_t>(size);
  std::memcpy(p, &key_id, 8);
  std::memcpy(p + 8, &version, 4);
  std::memcpy(p + 12, &n, 4);
  FillBody(key_id, version, p + kHeader, size - kHeader - kTrailer);
  uint32_t crc = Crc(p, size - kTrailer);
  std::memcpy(p + size - kTrailer, &crc, 4);
}

std::string CheckValue(uint64_t key_id, std::string_view value) {
  size_t size = value.size();
  if (size < kMinValueSize) {
    return "value of " + std::to_string(size) + " bytes is too short";
  }
  const char* p = value.data();
  if (Load<uint32_t>(p + size - kTrailer) != Crc(p, size - kTrailer)) {
    return "value checksum mismatch (" + std::to_string(size) + " bytes)";
  }
  if (Load<uint32_t>(p + 12) != size) {
    return "value length " + std::to_string(size) + " differs from the " +
           std::to_string(Load<uint32_t>(p + 12)) + " it was written with";
  }
  if (Load<uint64_t>(p) != key_id) {
    return "value belongs to key id " + std::to_string(Load<uint64_t>(p)) +
           ", not " + std::to_string(key_id);
  }
  std::string body(size - kHeader - kTrailer, '\0');
  FillBody(key_id, Load<uint32_t>(p + 8), body.data(), body.size());
  if (std::memcmp(body.data(), p + kHeader, body.size()) != 0) {
    return "value body differs from the pattern of its key and version";
  }
  return "";
}

uint32_t ValueVersion(std::string_view value) {
  return value.size() >= kMinValueSize ? Load<uint32_t>(value.data() + 8) : 0;
}

}  // namespace kvbench
