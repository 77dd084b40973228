// Functions that make new tensors: filled with a constant, a range, given values or random draws.
#pragma once

#include <vector>

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace fuselab {

Tensor empty(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
Tensor zeros(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
Tensor ones(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
Tensor full(const Shape& shape, double value, DType dtype = DType::Float32, Device device = Device::cpu());
Tensor zeros_like(const Tensor& like);
Tensor empty_like(const Tensor& like);

// 0, 1, ..., n-1.
Tensor arange(int64_t n, DType dtype = DType::Int64, Device device = Device::cpu());

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device = Device::cpu());

// A CPU tensor over memory that `owner` keeps alive (a mapped file, say), not copied: the tensor
// and its views hold `owner` until the last of them goes. `data` must be aligned for `dtype`.
Tensor from_memory(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> owner);

// Random draws, consumed in row-major order from `gen` (default_generator() when null).
Tensor uniform(const Shape& shape, double low, double high, DType dtype = DType::Float32,
               Generator* gen = nullptr);
Tensor rand(const Shape& shape, DType dtype = DType::Float32, Generator* gen = nullptr);  // U[0, 1)
Tensor normal(const Shape& shape, double mean, double stddev, DType dtype = DType::Float32,
              Generator* gen = nullptr);
Tensor randn(const Shape& shape, DType dtype = DType::Float32, Generator* gen = nullptr);  // N(0, 1)
// Integers uniform in [0, high).
Tensor randint(const Shape& shape, int64_t high, Generator* gen = nullptr);

}  // namespace fuselab
