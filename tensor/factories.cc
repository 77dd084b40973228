#include "tensor/factories.h"

#include "tensor/checked_numel.h"
#include "tensor/dispatch.h"

namespace fuselab {

Tensor empty(const Shape& shape, DType dtype, Device device) {
  auto storage = std::make_shared<Storage>(checked_bytes(shape, dtype_size(dtype), "empty"), device);
  return Tensor(std::make_shared<TensorImpl>(TensorImpl{storage, shape, dtype}));
}

Tensor from_memory(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> owner) {
  const size_t bytes = checked_bytes(shape, dtype_size(dtype), "from_memory");
  check(owner != nullptr, "from_memory: no owner keeps the memory alive");
  check(reinterpret_cast<uintptr_t>(data) % dtype_size(dtype) == 0, "from_memory: ", data, " is not aligned for ",
        dtype);
  auto storage = std::make_shared<Storage>(data, bytes, std::move(owner));
  return Tensor(std::make_shared<TensorImpl>(TensorImpl{storage, shape, dtype}));
}

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1, dtype, device); }
Tensor empty_like(const Tensor& like) { return empty(like.shape(), like.dtype(), like.device()); }
Tensor zeros_like(const Tensor& like) { return zeros(like.shape(), like.dtype(), like.device()); }

namespace {

// Fills a new CPU tensor with draw(i) for each element i in order, then moves it to `device`.
template <class Draw>
Tensor generate(const Shape& shape, DType dtype, Device device, Draw&& draw) {
  Tensor t = empty(shape, dtype);
  dispatch_all(dtype, "generate", [&](auto zero) {
    using T = decltype(zero);
    T* data = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) data[i] = T(draw(i));
  });
  return t.to(device);
}

Generator& or_default(Generator* gen) { return gen ? *gen : default_generator(); }

}  // namespace

Tensor arange(int64_t n, DType dtype, Device device) {
  return generate({n}, dtype, device, [](int64_t i) { return double(i); });
}

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  check(int64_t(values.size()) == checked_numel(shape, "from_vector"), "from_vector: ", values.size(),
        " values do not fill shape ", shape);
  Tensor t = empty(shape, dtype_of<T>());
  std::copy(values.begin(), values.end(), t.data<T>());
  return t.to(device);
}
template Tensor from_vector(const std::vector<float>&, const Shape&, Device);
template Tensor from_vector(const std::vector<double>&, const Shape&, Device);
template Tensor from_vector(const std::vector<int64_t>&, const Shape&, Device);

Tensor uniform(const Shape& shape, double low, double high, DType dtype, Generator* gen) {
  Generator& g = or_default(gen);
  return generate(shape, dtype, Device::cpu(), [&](int64_t) { return low + (high - low) * g.uniform(); });
}

Tensor rand(const Shape& shape, DType dtype, Generator* gen) { return uniform(shape, 0, 1, dtype, gen); }

Tensor normal(const Shape& shape, double mean, double stddev, DType dtype, Generator* gen) {
  Generator& g = or_default(gen);
  return generate(shape, dtype, Device::cpu(), [&](int64_t) { return mean + stddev * g.normal(); });
}

Tensor randn(const Shape& shape, DType dtype, Generator* gen) { return normal(shape, 0, 1, dtype, gen); }

Tensor randint(const Shape& shape, int64_t high, Generator* gen) {
  check(high > 0, "randint: high must be positive, got ", high);
  Generator& g = or_default(gen);
  return generate(shape, DType::Int64, Device::cpu(),
                  [&](int64_t) { return double(g.next_u64() % uint64_t(high)); });
}

}  // namespace fuselab
