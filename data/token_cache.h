// A file of token ids, so that a corpus is tokenized once and later runs map the ids instead:
//
//   header, 64 bytes   "FLTOKENS", then u64 each: the format version (1), the key, the sizes of
//                      the tokenizer bytes, the training ids and the validation ids, the checksum
//                      (FNV-1a of everything after the header), and 0
//   tokenizer          the bytes the tokenizer is saved as, zero-padded to a multiple of 8
//   ids                int64, little-endian: the training ids, then the validation ids
//
// The key names what the ids were made from (a hash of the text and the tokenizer's settings);
// the caller puts it in the file name, and the header must repeat it. Reading maps the file
// (private, copy-on-write) and hands out tensors over the mapping. A file whose header, size or
// checksum disagrees is stale or damaged: reading says why and the caller makes the ids again.
// Writes are atomic (a temporary, then a rename), so a killed run leaves no half file behind.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tensor/tensor.h"

namespace fuselab {

struct TokenStreams {
  std::string tokenizer;     // the tokenizer's saved bytes
  Tensor train, validation;  // int64 [tokens]
};

// 64-bit FNV-1a of `bytes`, going on from `hash` (chain calls to hash several pieces).
constexpr uint64_t kFnvOffset = 14695981039346656037ull;
uint64_t fnv1a(std::string_view bytes, uint64_t hash = kFnvOffset);

// The streams of the cache file at `path` made for `key`, mapped; nullopt where there is no such
// file (*why empty) or where it is stale or damaged (*why says how).
std::optional<TokenStreams> read_token_cache(const std::string& path, uint64_t key, std::string* why);
// Writes the streams (CPU int64 tensors) to `path`, creating its folder. Throws naming the path
// where it cannot.
void write_token_cache(const std::string& path, uint64_t key, const TokenStreams& streams);

}  // namespace fuselab
