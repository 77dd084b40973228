// Reading and writing the safetensors format, so that Python's safetensors and PyTorch read what
// FuseLab writes and the reverse:
//
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   JSON: {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//             "__metadata__": {"key": "value"}}   (offsets relative to the data section)
//   the data  raw little-endian tensors, covering the data section without gaps or overlap
//
// Writes are atomic (the temporary file `<path>.tmp`, fsync, rename), so a process killed during
// a save leaves the previous file intact, and the next save reuses that one temporary name. Loading validates everything and throws fuselab::Error naming the
// file and the problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "tensor/tensor.h"

namespace fuselab {

using NamedTensors = std::map<std::string, Tensor>;
using Metadata = std::map<std::string, std::string>;

struct Safetensors {
  NamedTensors tensors;
  Metadata metadata;
};

void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata = {});
Safetensors load_safetensors(const std::string& path);
// Parses a whole file's bytes; `name` is used in error messages.
Safetensors parse_safetensors(const uint8_t* bytes, size_t size, const std::string& name);

}  // namespace fuselab
