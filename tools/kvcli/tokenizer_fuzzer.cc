// libFuzzer target: Tokenize() never crashes on any line, and whatever
// it reads back, Quote() of every token tokenizes to that same token.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  auto tokens = kv::kvcli::Tokenize(line);
  if (!tokens.ok()) return 0;
  for (const kv::kvcli::Token& t : *tokens) {
    auto again = kv::kvcli::Tokenize(kv::kvcli::Quote(t.text));
    if (!again.ok() || again->size() != 1 || (*again)[0].text != t.text ||
        (*again)[0].from_file) {
      abort();
    }
  }
  return 0;
}
