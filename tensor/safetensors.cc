#include "tensor/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "tensor/factories.h"

namespace fuselab {
namespace {

using Json = nlohmann::json;

// FuseLab's dtypes under their safetensors names.
const char* safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Int64: return "I64";
    case DType::BFloat16: return "BF16";
  }
  return "?";
}

bool dtype_from_name(const std::string& name, DType& dtype) {
  for (DType d : {DType::Float32, DType::Float64, DType::Int64, DType::BFloat16}) {
    if (name == safetensors_dtype(d)) {
      dtype = d;
      return true;
    }
  }
  return false;
}

void write_all(int fd, const void* data, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, p, size);
    if (written < 0 && errno == EINTR) continue;
    check(written > 0, "save_safetensors ", path, ": write failed: ", std::strerror(errno));
    p += written;
    size -= size_t(written);
  }
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian");
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<Tensor> host;
  for (const auto& [name, tensor] : tensors) {
    check(!name.empty() && name != "__metadata__", "save_safetensors ", path, ": invalid tensor name '", name, "'");
    check(tensor.defined(), "save_safetensors ", path, ": tensor '", name, "' is undefined");
    host.push_back(tensor.to(Device::cpu()));
    header[name] = {{"dtype", safetensors_dtype(tensor.dtype())},
                    {"shape", tensor.shape()},
                    {"data_offsets", {offset, offset + tensor.nbytes()}}};
    offset += tensor.nbytes();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::type_error& e) {  // a name or a metadata value that is not UTF-8
    fail("save_safetensors ", path, ": a tensor name or metadata value is not valid UTF-8 (", e.what(), ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // pad so the data starts 8-byte aligned
  const uint64_t length = text.size();

  // One fixed temporary name per target: a save killed mid-write leaves at most this one file,
  // and the next save to the same target truncates and reuses it.
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  check(fd >= 0, "save_safetensors ", path, ": cannot create ", temporary, ": ", std::strerror(errno));
  try {
    write_all(fd, &length, sizeof(length), path);
    write_all(fd, text.data(), text.size(), path);
    for (const Tensor& t : host) write_all(fd, t.raw_data(), t.nbytes(), path);
    check(::fsync(fd) == 0, "save_safetensors ", path, ": fsync failed: ", std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    fail("save_safetensors ", path, ": rename failed: ", std::strerror(error));
  }
}

Safetensors parse_safetensors(const uint8_t* bytes, size_t size, const std::string& name) {
  const std::string where = "safetensors file " + name + ": ";
  check(size >= 8, where, "only ", size, " bytes; a file needs at least the 8-byte header length");
  uint64_t length = 0;
  std::memcpy(&length, bytes, sizeof(length));
  check(length <= size - 8, where, "header length ", length, " runs past the end of the file (", size, " bytes)");
  const uint8_t* data = bytes + 8 + length;
  const uint64_t data_size = size - 8 - length;

  Json header;
  try {
    header = Json::parse(bytes + 8, bytes + 8 + length);
  } catch (const Json::exception& e) {
    fail(where, "the header is not valid JSON: ", e.what());
  }
  check(header.is_object(), where, "the header must be a JSON object");

  Safetensors result;
  struct Span {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  for (const auto& [key, entry] : header.items()) {
    if (key == "__metadata__") {
      check(entry.is_object(), where, "__metadata__ must be an object of strings");
      for (const auto& [k, v] : entry.items()) {
        check(v.is_string(), where, "__metadata__ value of '", k, "' is not a string");
        result.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    const std::string what = where + "tensor '" + key + "': ";
    check(entry.is_object() && entry.contains("dtype") && entry.contains("shape") && entry.contains("data_offsets"),
          what, "needs dtype, shape and data_offsets");
    const Json& dtype_json = entry["dtype"];
    const Json& shape_json = entry["shape"];
    const Json& offsets = entry["data_offsets"];
    DType dtype;
    check(dtype_json.is_string() && dtype_from_name(dtype_json.get<std::string>(), dtype), what, "dtype ",
          dtype_json.dump(), " is not one FuseLab reads (F32, F64, I64, BF16)");
    check(shape_json.is_array(), what, "shape must be an array");
    Shape shape;
    for (const Json& d : shape_json) {
      check(d.is_number_unsigned() && d.get<uint64_t>() < (uint64_t(1) << 40), what, "bad dimension ", d.dump());
      shape.push_back(d.get<int64_t>());
    }
    // Each product is checked before it is taken, so no shape can wrap around to a small byte
    // count (a shape with a zero dimension needs no bytes).
    const bool empty_tensor = std::find(shape.begin(), shape.end(), 0) != shape.end();
    uint64_t bytes_needed = empty_tensor ? 0 : dtype_size(dtype);
    for (const int64_t dim : shape) {
      check(empty_tensor || bytes_needed <= UINT64_MAX / uint64_t(dim), what, "shape ", shape_json.dump(), " of ",
            dtype_name(dtype), " is too large: its byte count overflows 64 bits");
      if (!empty_tensor) bytes_needed *= uint64_t(dim);
    }
    check(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
              offsets[1].is_number_unsigned(),
          what, "data_offsets must be [begin, end]");
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    check(begin <= end && end <= data_size, what, "data_offsets [", begin, ", ", end, "] are outside the ",
          data_size, "-byte data section");
    check(end - begin == bytes_needed, what, "data_offsets cover ", end - begin, " bytes, but shape ", shape, " of ",
          dtype_name(dtype), " needs ", bytes_needed);
    Tensor t = empty(shape, dtype);
    if (end > begin) std::memcpy(t.raw_data(), data + begin, end - begin);
    result.tensors[key] = t;
    spans.push_back({begin, end, key});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  uint64_t covered = 0;
  for (const Span& s : spans) {
    check(s.begin >= covered, where, "tensor '", s.name, "' overlaps the tensor before it");
    check(s.begin == covered, where, "a gap of ", s.begin - covered, " bytes before tensor '", s.name, "'");
    covered = s.end;
  }
  check(covered == data_size, where, data_size - covered, " bytes after the last tensor are not indexed");
  return result;
}

Safetensors load_safetensors(const std::string& path) {
  std::error_code error;
  check(std::filesystem::is_regular_file(path, error), "safetensors file ", path, ": ",
        std::filesystem::exists(path, error) ? "is not a regular file" : "does not exist");
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  check(file.good(), "safetensors file ", path, ": cannot open it");
  const std::streamsize size = file.tellg();
  check(size >= 0, "safetensors file ", path, ": cannot read its size");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  file.seekg(0);
  check(bool(file.read(reinterpret_cast<char*>(bytes.data()), size)), "safetensors file ", path, ": read failed");
  return parse_safetensors(bytes.data(), bytes.size(), path);
}

}  // namespace fuselab
