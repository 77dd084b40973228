#include "data/token_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tensor/factories.h"

namespace fuselab {
namespace {

constexpr char kMagic[8] = {'F', 'L', 'T', 'O', 'K', 'E', 'N', 'S'};
constexpr uint64_t kVersion = 1;

struct Header {
  char magic[8];
  uint64_t version, key, tokenizer_bytes, train_ids, validation_ids, checksum, zero;
};
static_assert(sizeof(Header) == 64);

uint64_t padded(uint64_t bytes) { return (bytes + 7) / 8 * 8; }

// The whole file mapped, unmapped when the last tensor over it goes; null (and *size 0 for an
// empty file) where it cannot be.
std::shared_ptr<void> map_file(int fd, size_t* size) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || info.st_size <= 0) return nullptr;
  *size = size_t(info.st_size);
  void* data = ::mmap(nullptr, *size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (data == MAP_FAILED) return nullptr;
  const size_t length = *size;
  return std::shared_ptr<void>(data, [length](void* p) { ::munmap(p, length); });
}

}  // namespace

uint64_t fnv1a(std::string_view bytes, uint64_t hash) {
  for (const char c : bytes) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return hash;
}

std::optional<TokenStreams> read_token_cache(const std::string& path, uint64_t key, std::string* why) {
  why->clear();
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0 && errno == ENOENT) return std::nullopt;
  if (fd < 0) return *why = path + " cannot be opened: " + std::strerror(errno), std::nullopt;
  size_t size = 0;
  const std::shared_ptr<void> file = map_file(fd, &size);
  ::close(fd);
  Header h;
  if (size < sizeof h) return *why = path + " is shorter than its header", std::nullopt;
  if (!file) return *why = path + " cannot be mapped", std::nullopt;
  auto* bytes = static_cast<char*>(file.get());
  std::memcpy(&h, bytes, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kVersion || h.zero != 0) {
    return *why = path + " is not a token cache of this version", std::nullopt;
  }
  if (h.key != key) return *why = path + " was made from another text or tokenizer", std::nullopt;
  const uint64_t body = padded(h.tokenizer_bytes) + 8 * (h.train_ids + h.validation_ids);
  if (h.tokenizer_bytes > size || h.train_ids > size || h.validation_ids > size || size != sizeof h + body) {
    return *why = path + " is " + std::to_string(size) + " bytes, not the size its header gives", std::nullopt;
  }
  if (fnv1a(std::string_view(bytes + sizeof h, body)) != h.checksum) {
    return *why = path + " fails its checksum", std::nullopt;
  }
  char* ids = bytes + sizeof h + padded(h.tokenizer_bytes);
  return TokenStreams{std::string(bytes + sizeof h, h.tokenizer_bytes),
                      from_memory(ids, {int64_t(h.train_ids)}, DType::Int64, file),
                      from_memory(ids + 8 * h.train_ids, {int64_t(h.validation_ids)}, DType::Int64, file)};
}

void write_token_cache(const std::string& path, uint64_t key, const TokenStreams& streams) {
  std::string body = streams.tokenizer;
  body.resize(padded(body.size()), '\0');
  for (const Tensor& ids : {streams.train, streams.validation}) {
    check(ids.dtype() == DType::Int64 && ids.dim() == 1 && ids.device().is_cpu(), "write_token_cache ", path,
          ": ids are int64 [tokens] on the CPU, got ", ids.dtype(), " ", ids.shape(), " on ", ids.device().str());
    body.append(static_cast<const char*>(ids.raw_data()), ids.nbytes());
  }
  Header h{{}, kVersion, key, streams.tokenizer.size(), uint64_t(streams.train.numel()),
           uint64_t(streams.validation.numel()), fnv1a(body), 0};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  const std::filesystem::path file(path);
  std::error_code error;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), error);
  check(!error, "write_token_cache: cannot create the folder of ", path, ": ", error.message());
  const std::string temporary = path + "." + std::to_string(::getpid()) + ".tmp";  // one per writer
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&h), sizeof h).write(body.data(), std::streamsize(body.size()));
    check(out.good(), "write_token_cache: cannot write ", temporary);
  }
  check(std::rename(temporary.c_str(), path.c_str()) == 0, "write_token_cache: cannot rename ", temporary, " to ",
        path);
}

}  // namespace fuselab
