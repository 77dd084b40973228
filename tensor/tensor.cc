#include "tensor/tensor.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "kernels/cpu/cast.h"
#include "kernels/cuda/cast.h"
#include "kernels/cuda/device_api.h"
#include "kernels/elementwise.h"
#include "tensor/allocator.h"
#include "tensor/dispatch.h"
#include "tensor/launch.h"

namespace fuselab {

Storage::Storage(size_t bytes, Device device)
    : data_(CachingAllocator::of(device).allocate(bytes)), bytes_(bytes), device_(device) {}

Storage::Storage(void* data, size_t bytes, std::shared_ptr<void> owner)
    : data_(data), bytes_(bytes), device_(Device::cpu()), owner_(std::move(owner)) {}

Storage::~Storage() {
  if (!owner_) CachingAllocator::of(device_).deallocate(data_, bytes_);
}

TensorImpl& Tensor::impl() const {
  check(impl_ != nullptr, "use of an undefined Tensor");
  return *impl_;
}

int64_t Tensor::size(int64_t d) const {
  const int64_t wrapped = d < 0 ? d + dim() : d;
  check(wrapped >= 0 && wrapped < dim(), "size(", d, ") of a tensor of shape ", shape());
  return shape()[wrapped];
}

void* Tensor::raw_data() const {
  return static_cast<char*>(impl().storage->data()) + impl().offset * dtype_size(dtype());
}

void Tensor::check_typed_access(DType wanted, Device::Kind kind) const {
  const bool cpu = kind == Device::Kind::CPU;
  check(wanted == dtype(), cpu ? "data<" : "cuda_data<", dtype_name(wanted), ">() on a ", dtype(), " tensor of shape ",
        shape());
  check(device().kind == kind, cpu ? "data" : "cuda_data", "() on a tensor of shape ", shape(), " on ", device(),
        cpu ? ": this op has no CUDA kernel yet (move the tensor with .to(Device::cpu()))"
            : ": a CUDA kernel was handed a CPU tensor");
}

Tensor Tensor::view(Shape new_shape, const std::string& op) const {
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < new_shape.size(); ++i) {
    if (new_shape[i] == -1) {
      check(inferred < 0, op, ": more than one -1 in ", new_shape);
      inferred = int64_t(i);
    } else {
      check(new_shape[i] >= 0, op, ": negative size in ", new_shape);
      check(!__builtin_mul_overflow(known, new_shape[i], &known), op, ": shape ", new_shape,
            " has more elements than an int64 counts");
    }
  }
  if (inferred >= 0) {
    check(known > 0 && numel() % known == 0, op, ": cannot view shape ", shape(), " as ", new_shape);
    new_shape[inferred] = numel() / known;
  }
  check(fuselab::numel(new_shape) == numel(), op, ": cannot view shape ", shape(), " (", numel(),
        " elements) as ", new_shape);
  auto impl = std::make_shared<TensorImpl>(TensorImpl{impl_->storage, new_shape, dtype(), impl_->offset});
  return Tensor(impl);
}

Tensor Tensor::slice(int64_t start, int64_t end) const {
  check(dim() >= 1 && 0 <= start && start <= end && end <= shape()[0], "slice(", start, ", ", end,
        ") of a tensor of shape ", shape());
  Shape new_shape = shape();
  new_shape[0] = end - start;
  const int64_t row = numel() / (shape()[0] ? shape()[0] : 1);
  auto impl =
      std::make_shared<TensorImpl>(TensorImpl{impl_->storage, new_shape, dtype(), impl_->offset + start * row});
  return Tensor(impl);
}

Tensor Tensor::detach() const {
  return Tensor(std::make_shared<TensorImpl>(TensorImpl{impl().storage, shape(), dtype(), impl().offset}));
}

namespace {

Tensor empty_like_on(const Tensor& t, Device device, DType dtype) {
  const size_t bytes = size_t(t.numel()) * dtype_size(dtype);
  auto storage = std::make_shared<Storage>(bytes, device);
  return Tensor(std::make_shared<TensorImpl>(TensorImpl{storage, t.shape(), dtype}));
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  namespace cuda = kernels::cuda;
  if (bytes == 0) return;
  try {
    if (dst_device.is_cpu() && src_device.is_cpu()) {
      std::memcpy(dst, src, bytes);
    } else if (dst_device.is_cuda() && src_device.is_cpu()) {
      cuda::copy_host_to_device(dst, src, bytes, dst_device.index);
    } else if (dst_device.is_cpu()) {
      cuda::copy_device_to_host(dst, src, bytes, src_device.index);
    } else {
      check(dst_device == src_device, "copy between ", src_device, " and ", dst_device,
            ": go through the cpu");
      cuda::copy_device_to_device(dst, src, bytes, dst_device.index);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("copy from ", src_device, " to ", dst_device, ": ", e.what());
  }
}

}  // namespace

Tensor Tensor::clone() const { return empty_like_on(*this, device(), dtype()).copy_(*this); }

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  if (target.is_cuda()) {
    const int count = kernels::cuda::device_count();
    check(target.index < count, "to(", target, "): this machine has ", count, " CUDA device(s)");
  }
  return empty_like_on(*this, target, dtype()).copy_(*this);
}

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return *this;
  if (device().is_cuda() && is_floating(dtype()) && is_floating(target)) {  // on the device, one kernel
    Tensor result = empty_like_on(*this, device(), target);
    dispatch_floating<WithBFloat16::Yes>(dtype(), "to(dtype)", [&](auto from) {
      dispatch_floating<WithBFloat16::Yes>(target, "to(dtype)", [&](auto into) {
        using From = decltype(from);
        using Into = decltype(into);
        try {
          kernels::cuda::cast<From, Into>(cuda_data<From>(), result.cuda_data<Into>(), numel(), device().index);
        } catch (const std::runtime_error& e) {
          fail("to(", target, ") of a ", dtype(), " tensor of shape ", shape(), " on ", device(), ": ", e.what());
        }
      });
    });
    return result;
  }
  const Tensor source = to(Device::cpu());
  Tensor result = empty_like_on(source, Device::cpu(), target);
  dispatch_all(dtype(), "to(dtype)", [&](auto from) {
    dispatch_all(target, "to(dtype)", [&](auto into) {
      using From = decltype(from);
      using Into = decltype(into);
      const From* src = source.data<From>();
      Into* dst = result.data<Into>();
      if constexpr (std::is_same_v<From, int64_t> || std::is_same_v<Into, int64_t>) {
        for (int64_t i = 0; i < source.numel(); ++i) dst[i] = Into(src[i]);
      } else {
        kernels::cpu::cast(src, dst, source.numel());
      }
    });
  });
  return result.to(device());
}

Tensor& Tensor::copy_(const Tensor& source) {
  check(source.shape() == shape() && source.dtype() == dtype(), "copy_: source ", source.shape(), " ",
        source.dtype(), " does not match destination ", shape(), " ", dtype());
  copy_bytes(raw_data(), device(), source.raw_data(), source.device(), nbytes());
  return *this;
}

Tensor& Tensor::set_data(const Tensor& source) {
  check(is_leaf(), "set_data: only a leaf tensor can take new data (shape ", shape(), ")");
  check(!requires_grad() || is_floating(source.dtype()), "set_data: a tensor that requires grad cannot hold ",
        source.dtype(), " data (shape ", source.shape(), ")");
  TensorImpl& self = impl();
  const TensorImpl& from = source.impl();
  if (self.grad) {
    const Tensor grad(self.grad);
    self.grad = grad.shape() == from.shape ? grad.to(source.device()).to(from.dtype).impl_ptr() : nullptr;
  }
  self.storage = from.storage;
  self.shape = from.shape;
  self.dtype = from.dtype;
  self.offset = from.offset;
  return *this;
}

Tensor& Tensor::fill_(double value) {
  dispatch_all(dtype(), "fill_", [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T>) {  // a conversion that does not fit is undefined
      check(value == std::trunc(value) && value >= -0x1p63 && value < 0x1p63, "fill_: ", value, " is not an ",
            dtype(), " value (tensor of shape ", shape(), ")");
    }
    launch("fill_", *this, kernels::Fill<T>{nullptr, compute_t<T>(value), ptr<T>(), numel()});
  });
  return *this;
}

double Tensor::item() const {
  check(numel() == 1, "item() needs a one-element tensor, got shape ", shape());
  double value = 0;
  dispatch_all(dtype(), "item", [&](auto zero) { value = double(to_vector<decltype(zero)>()[0]); });
  return value;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  const Tensor host = to(Device::cpu());
  const T* data = host.data<T>();
  return std::vector<T>(data, data + numel());
}
template std::vector<float> Tensor::to_vector() const;
template std::vector<double> Tensor::to_vector() const;
template std::vector<int64_t> Tensor::to_vector() const;
template std::vector<bfloat16> Tensor::to_vector() const;

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  check(is_leaf(), "set_requires_grad: only leaf tensors can change requires_grad (shape ", shape(), ")");
  check(!requires_grad || is_floating(dtype()), "set_requires_grad: a ", dtype(),
        " tensor cannot require grad (shape ", shape(), ")");
  impl().requires_grad = requires_grad;
  return *this;
}

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream os;
  os << "Tensor(shape=" << shape() << ", dtype=" << dtype() << ", device=" << device() << ", values=[";
  const int64_t shown = numel() < 8 ? numel() : 8;
  dispatch_all(dtype(), "print", [&](auto zero) {
    const auto values = to_vector<decltype(zero)>();
    for (int64_t i = 0; i < shown; ++i) os << (i ? ", " : "") << values[i];
  });
  os << (numel() > shown ? ", ...])" : "])");
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& tensor) { return os << tensor.str(); }

}  // namespace fuselab
