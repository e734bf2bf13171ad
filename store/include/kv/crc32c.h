// CRC32C (Castagnoli), the checksum of every record and superblock.
//
// Header-only so that clients (which never link store code) verify records
// with the same code the server writes them with. Uses the SSE4.2 crc32
// instruction when the CPU has it, a table otherwise; both give identical
// results. Thread-safe.
#ifndef KV_CRC32C_H_
#define KV_CRC32C_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kv {
namespace crc32c_internal {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}

inline constexpr std::array<uint32_t, 256> kTable = MakeTable();

inline uint32_t Portable(uint32_t crc, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i++) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) inline uint32_t Hardware(uint32_t crc,
                                                           const uint8_t* p,
                                                           size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = __builtin_ia32_crc32di(c, w);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}

inline bool HaveHardware() {
  static const bool have = __builtin_cpu_supports("sse4.2");
  return have;
}
#endif

}  // namespace crc32c_internal

// True when the hardware path is in use (reported by benchmarks).
inline bool Crc32cIsHardwareAccelerated() {
#if defined(__x86_64__)
  return crc32c_internal::HaveHardware();
#else
  return false;
#endif
}

// Extends `crc` (the CRC32C of earlier bytes, 0 to start) over data[0, n).
inline uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  if (crc32c_internal::HaveHardware()) {
    return ~crc32c_internal::Hardware(crc, p, n);
  }
#endif
  return ~crc32c_internal::Portable(crc, p, n);
}

inline uint32_t Crc32c(const void* data, size_t n) {
  return Crc32cExtend(0, data, n);
}

// Test hook: the table implementation, regardless of the CPU.
inline uint32_t Crc32cPortableForTest(const void* data, size_t n) {
  return ~crc32c_internal::Portable(~0u, static_cast<const uint8_t*>(data), n);
}

}  // namespace kv

#endif  // KV_CRC32C_H_
