// libFuzzer target: the tcp provider's frame parser over arbitrary bytes.
// Checks that the parser never reads past the buffer (ASan), accepts
// only what it can re-encode identically, and that walking a stream is
// consistent with header-by-header parsing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "tcp/frame.h"

using namespace rpma::prov::tcp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FrameHeader h;
  const char* why = nullptr;
  ParseResult r = ParseHeader(data, size, &h, &why);
  if (r == ParseResult::kOk) {
    uint8_t again[kHeaderSize];
    EncodeHeader(h, again);
    if (std::memcmp(again, data, kHeaderSize) != 0) std::abort();
    if (h.length > kMaxIoLength) std::abort();
  } else if (r == ParseResult::kBad) {
    if (why == nullptr) std::abort();
  } else if (size >= kHeaderSize) {
    std::abort();
  }
  long n = CountFrames(data, size);
  if (r == ParseResult::kBad && n != -1) std::abort();
  return 0;
}
