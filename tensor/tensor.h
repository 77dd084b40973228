// Tensor: a refcounted handle to a contiguous, row-major block of one dtype on one device.
//
// Views (view(), slice()) share storage with the tensor they come from. Autograd state lives
// in the same TensorImpl, but the tensor layer only carries it: autograd/ defines its meaning.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/error.h"
#include "tensor/shape.h"

namespace fuselab {

// Memory owned by the device's caching allocator and returned to it on destruction; or CPU memory
// that something else owns (a mapped file, say), kept alive by `owner` as long as the storage.
class Storage {
 public:
  Storage(size_t bytes, Device device);
  Storage(void* data, size_t bytes, std::shared_ptr<void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  size_t bytes_;
  Device device_;
  std::shared_ptr<void> owner_;  // set for memory the allocator did not give
};

struct AutogradMeta;  // defined by autograd/tape.h

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  DType dtype = DType::Float32;
  int64_t offset = 0;  // in elements
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;              // accumulated by backward() on leaves
  // A leaf's mark that a backward has added its contribution into `grad` in place and hands back
  // `grad` itself as that contribution (grad_to_accumulate_into, autograd/tape.h).
  bool grad_added_in_place = false;
  std::shared_ptr<AutogradMeta> autograd_meta;   // set on tensors produced by a recorded op
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  int64_t dim() const { return int64_t(shape().size()); }
  int64_t size(int64_t dim) const;  // negative counts from the end
  int64_t numel() const { return fuselab::numel(shape()); }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype()); }

  void* raw_data() const;  // on the tensor's device
  // Typed pointers: data() to host memory (CPU tensors only, so a CPU kernel handed a GPU tensor
  // throws instead of reading device memory), cuda_data() to device memory (CUDA tensors only).
  template <class T>
  T* data() const {
    check_typed_access(dtype_of<T>(), Device::Kind::CPU);
    return static_cast<T*>(raw_data());
  }
  template <class T>
  T* cuda_data() const {
    check_typed_access(dtype_of<T>(), Device::Kind::CUDA);
    return static_cast<T*>(raw_data());
  }
  // On the tensor's own device, for a kernel's argument struct (tensor/launch.h runs it there).
  template <class T>
  T* ptr() const {
    check_typed_access(dtype_of<T>(), device().kind);
    return static_cast<T*>(raw_data());
  }

  // Views sharing storage; not recorded by autograd (use autograd's reshape for that).
  // One size may be -1. Errors name `op`: the caller that asked for the view (reshape, an op).
  Tensor view(Shape shape, const std::string& op = "view") const;
  Tensor slice(int64_t start, int64_t end) const;  // rows [start, end) of dim 0

  Tensor clone() const;
  Tensor to(Device device) const;  // the same tensor when already there
  Tensor to(DType dtype) const;
  Tensor& copy_(const Tensor& source);  // same shape and dtype, any devices
  // Makes this leaf hold source's storage, shape, dtype, offset and device, as PyTorch's
  // module.to() sets `param.data`: every handle to this tensor sees the new contents, and it keeps
  // its requires_grad. A grad of the same shape is converted to the new dtype and device (as
  // module.to() converts param.grad); any other grad is dropped. Throws unless this is a leaf, and a floating dtype when it requires grad.
  Tensor& set_data(const Tensor& source);
  Tensor& fill_(double value);
  Tensor& zero_() { return fill_(0); }

  double item() const;  // a one-element tensor's value
  template <class T>
  std::vector<T> to_vector() const;

  // Autograd flags. requires_grad can only be set on leaves of a floating dtype.
  bool requires_grad() const { return impl().requires_grad; }
  Tensor& set_requires_grad(bool requires_grad = true);
  bool is_leaf() const { return impl().autograd_meta == nullptr; }
  Tensor grad() const { return Tensor(impl().grad); }
  void set_grad(const Tensor& grad) { impl().grad = grad.impl_; }
  void zero_grad() { impl().grad.reset(); }

  // The tensor's data without autograd history: same storage, a leaf.
  Tensor detach() const;

  bool same(const Tensor& other) const { return impl_ == other.impl_; }
  TensorImpl& impl() const;
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  std::string str() const;  // shape, dtype, device and the first few values

 private:
  void check_typed_access(DType dtype, Device::Kind kind) const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& tensor);

}  // namespace fuselab
