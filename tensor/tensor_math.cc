#include "tensor/tensor_math.h"

#include <limits>

#include "kernels/cuda/device_api.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/matmul.h"
#include "tensor/broadcast.h"
#include "tensor/factories.h"
#include "tensor/launch.h"

namespace fuselab::math {



kernels::IndexFault* index_fault_record(Device device, const char* op) {
  return device.is_cuda() ? kernels::cuda::index_fault_record(device.index, op) : nullptr;
}

int64_t rows_of(const Tensor& x) {
  const int64_t cols = x.dim() ? x.size(-1) : 1;
  return cols ? x.numel() / cols : 0;
}

std::optional<Broadcast> fast_broadcast(const Tensor& a, const Tensor& b) {
  if (b.shape() == a.shape()) return Broadcast::None;
  if (b.dim() > a.dim()) return std::nullopt;  // the result would have b's extra dims
  if (b.numel() == 1) return Broadcast::Scalar;
  for (int64_t d = 0; d + 1 < b.dim(); ++d) {
    if (b.size(d) != 1) return std::nullopt;
  }
  if (b.dim() >= 1 && b.size(-1) == a.size(-1)) return Broadcast::Row;
  return std::nullopt;
}

namespace {

// out = a (op) b where b lines up with a as `broadcast` says.
void binary_into(BinaryOp op, const Tensor& a, const Tensor& b, Broadcast broadcast, Tensor& out) {
  const int64_t rows = rows_of(a), cols = a.dim() ? a.size(-1) : 1;
  launch_floating<WithBFloat16::Yes>("binary", a, [&](auto zero) {
    using T = decltype(zero);
    return kernels::Binary<T>{op, a.ptr<T>(), b.ptr<T>(), out.ptr<T>(), rows, cols, broadcast};
  });
}

}  // namespace

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  check(a.dtype() == b.dtype() && a.device() == b.device(), name, ": operands ", a.shape(), " ", a.dtype(),
        " on ", a.device(), " and ", b.shape(), " ", b.dtype(), " on ", b.device(),
        " must have the same dtype and device");
  if (const std::optional<Broadcast> broadcast = fast_broadcast(a, b)) {
    Tensor out = empty_like(a);
    binary_into(op, a, b, *broadcast, out);
    return out;
  }
  // Any other broadcast: copy each operand that is smaller than the result out to its shape,
  // keeping b as it is where a fast kernel still takes it (e.g. a scalar a and a row b).
  const Shape shape = broadcast_shapes(name, a.shape(), b.shape());
  const Tensor a_full = a.shape() == shape ? a : expand(a, shape);
  const std::optional<Broadcast> broadcast = fast_broadcast(a_full, b);
  const Tensor b_full = broadcast ? b : expand(b, shape);
  Tensor out = empty_like(a_full);
  binary_into(op, a_full, b_full, broadcast.value_or(Broadcast::None), out);
  return out;
}

Tensor scaled(const Tensor& x, double alpha) {
  Tensor out = empty_like(x);
  scale_into(out, x, alpha);
  return out;
}

void scale_into(Tensor& out, const Tensor& x, double alpha) {
  check(x.shape() == out.shape() && x.dtype() == out.dtype() && x.device() == out.device(), "scale_into: ", x.shape(),
        " ", x.dtype(), " on ", x.device(), " into ", out.shape(), " ", out.dtype(), " on ", out.device());
  launch_floating<WithBFloat16::Yes>("scale", x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::Scale<T>{x.ptr<T>(), compute_t<T>(alpha), out.ptr<T>(), x.numel()};
  });
}

void accumulate(Tensor& into, const Tensor& grad) {
  if (!grad.defined()) return;
  into = into.defined() ? binary(BinaryOp::Add, into, grad) : grad;
}

void add_(Tensor& y, const Tensor& x, double alpha) {
  check(x.shape() == y.shape() && x.dtype() == y.dtype() && x.device() == y.device(), "add_: ", x.shape(), " ",
        x.dtype(), " on ", x.device(), " into ", y.shape(), " ", y.dtype(), " on ", y.device());
  launch_floating<WithBFloat16::Yes>("add_", y, [&](auto zero) {
    using T = decltype(zero);
    return kernels::Axpy<T>{compute_t<T>(alpha), x.ptr<T>(), y.ptr<T>(), y.numel()};
  });
}

Tensor sum_to(const Tensor& grad, Broadcast broadcast, const Shape& shape) {
  if (broadcast == Broadcast::None) return grad;
  Tensor out = empty(shape, grad.dtype(), grad.device());
  // A scalar's grad is the sum of one column holding every element.
  const int64_t rows = broadcast == Broadcast::Scalar ? grad.numel() : rows_of(grad);
  const int64_t cols = broadcast == Broadcast::Scalar ? 1 : grad.size(-1);
  launch_floating<WithBFloat16::Yes>("sum_to", grad, [&](auto zero) {
    using T = decltype(zero);
    return kernels::SumRows<T>{grad.ptr<T>(), rows, cols, out.ptr<T>()};
  });
  return out;
}

Tensor activation(Activation act, const Tensor& x) {
  Tensor y = empty_like(x);
  launch_floating<WithBFloat16::Yes>(kernels::activation_name(act), x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::ActivationForward<T>{act, x.ptr<T>(), y.ptr<T>(), x.numel()};
  });
  return y;
}

Tensor activation_backward(Activation act, const Tensor& x, const Tensor& dy) {
  Tensor dx = empty_like(x);
  launch_floating<WithBFloat16::Yes>(kernels::activation_name(act), x, [&](auto zero) {
    using T = decltype(zero);
    return kernels::ActivationBackward<T>{act, x.ptr<T>(), dy.ptr<T>(), dx.ptr<T>(), x.numel()};
  });
  return dx;
}

namespace {

// op(a) op(b) (+ addend) into out, whose shape the caller has checked; addend may be out itself.
void run_matmul(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, const Tensor& addend,
                Tensor& out, double alpha) {
  const int64_t batch = a.dim() == 3 ? a.size(0) : 1;
  const int64_t m = out.size(-2), n = out.size(-1), k = transpose_a ? a.size(-2) : a.size(-1);
  launch_floating<WithBFloat16::Yes>("matmul", a, [&](auto zero) {
    using T = decltype(zero);
    return kernels::Matmul<T>{transpose_a, transpose_b, batch,      m,
                              n,           k,           a.ptr<T>(), b.ptr<T>(),
                              ptr_or_null<T>(addend),   out.ptr<T>(), alpha};
  });
}

// The shape of op(a) op(b), checking that the operands agree on dtype and device.
Shape product_shape(const char* op, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b) {
  check(a.dtype() == b.dtype() && a.device() == b.device(), op, ": operands ", a.shape(), " ", a.dtype(), " on ",
        a.device(), " and ", b.shape(), " ", b.dtype(), " on ", b.device(), " must have the same dtype and device");
  const int64_t ar = a.size(-2), ac = a.size(-1), br = b.size(-2), bc = b.size(-1);
  const int64_t m = transpose_a ? ac : ar, n = transpose_b ? br : bc;
  return a.dim() == 3 ? Shape{a.size(0), m, n} : Shape{m, n};
}

}  // namespace

Tensor matmul(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, const Tensor& addend,
              double alpha) {
  const Shape shape = product_shape("matmul", a, transpose_a, b, transpose_b);
  check(!addend.defined() || addend.shape() == shape, "matmul: addend of shape ",
        addend.defined() ? addend.shape() : Shape{}, " for a product of shape ", shape);
  Tensor out = empty(shape, a.dtype(), a.device());
  run_matmul(a, transpose_a, b, transpose_b, addend, out, alpha);
  return out;
}

// Checks that `out` can take op(a) op(b) for `op`.
void check_product_out(const char* op, const Tensor& out, const Tensor& a, bool transpose_a, const Tensor& b,
                       bool transpose_b) {
  const Shape shape = product_shape(op, a, transpose_a, b, transpose_b);
  check(out.defined(), op, ": out is undefined; it must be ", shape, " ", a.dtype(), " on ", a.device());
  check(out.shape() == shape && out.dtype() == a.dtype() && out.device() == a.device(), op, ": out must be ", shape,
        " ", a.dtype(), " on ", a.device(), ", got ", out.shape(), " ", out.dtype(), " on ", out.device());
}

void matmul_add_into(Tensor& out, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b,
                     double alpha) {
  check_product_out("matmul_add_into", out, a, transpose_a, b, transpose_b);
  run_matmul(a, transpose_a, b, transpose_b, out, out, alpha);
}

void matmul_into(Tensor& out, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, double alpha) {
  check_product_out("matmul_into", out, a, transpose_a, b, transpose_b);
  run_matmul(a, transpose_a, b, transpose_b, Tensor(), out, alpha);
}

void grouped_matmul_into(const Tensor& out, const Tensor& a, const Tensor& w, bool weight_grad, bool transpose_w,
                         const std::vector<int64_t>& sizes) {
  const int64_t groups = int64_t(sizes.size());
  check(a.defined() && w.defined() && out.defined(), "grouped_matmul_into: a, w and out must be defined");
  int64_t rows = 0;
  for (int64_t size : sizes) {
    check(size >= 0, "grouped_matmul_into: a group of size ", size);
    check(size <= std::numeric_limits<int64_t>::max() - rows, "grouped_matmul_into: the groups' sizes ", sizes,
          " sum past the largest int64");
    rows += size;
  }
  check(a.dim() == 2 && w.dim() == (weight_grad ? 2 : 3) && out.dim() == (weight_grad ? 3 : 2),
        "grouped_matmul_into: a must be 2-D, w ", weight_grad ? "2" : "3", "-D and out ", weight_grad ? "3" : "2",
        "-D, got a ", a.shape(), ", w ", w.shape(), ", out ", out.shape());
  const int64_t a_cols = a.size(1), out_cols = weight_grad ? w.size(1) : out.size(1);
  const Shape want_w = weight_grad   ? Shape{rows, out_cols}
                       : transpose_w ? Shape{groups, out_cols, a_cols}
                                     : Shape{groups, a_cols, out_cols};
  const Shape want_out = weight_grad ? Shape{groups, a_cols, out_cols} : Shape{rows, out_cols};
  check(a.size(0) == rows && w.shape() == want_w && out.shape() == want_out && w.dtype() == a.dtype() &&
            out.dtype() == a.dtype() && w.device() == a.device() && out.device() == a.device(),
        "grouped_matmul_into: for ", groups, " groups of ", rows, " rows, a [", rows, ", ", a_cols, "] needs w ",
        want_w, " and out ", want_out, " of its dtype and device; got a ", a.shape(), " ", a.dtype(), " on ",
        a.device(), ", w ", w.shape(), " ", w.dtype(), " on ", w.device(), ", out ", out.shape(), " ", out.dtype(),
        " on ", out.device());
  launch_floating<WithBFloat16::Yes>("grouped_matmul_into", a, [&](auto zero) {
    using T = decltype(zero);
    return kernels::GroupedMatmul<T>{weight_grad, transpose_w, groups,     sizes.data(),
                                     a_cols,      out_cols,    a.ptr<T>(), w.ptr<T>(), out.ptr<T>()};
  });
}

Tensor embedding(const char* op, const Tensor& table, const Tensor& ids) {
  check(table.dim() == 2, op, ": table must be [V, D], got shape ", table.shape());
  check(ids.defined() && ids.dtype() == DType::Int64 && ids.device() == table.device(), op,
        ": ids must be int64 on ", table.device());
  const int64_t vocab = table.size(0), dim = table.size(1);
  if (ids.device().is_cpu()) {  // on CUDA the lookup kernel checks, without a wait (kernels/index_fault.h)
    for (int64_t id : ids.to_vector<int64_t>()) {
      check(0 <= id && id < vocab, op, ": id ", id, " out of range for a table of shape ", table.shape());
    }
  }
  Shape out_shape = ids.shape();
  out_shape.push_back(dim);
  Tensor out = empty(out_shape, table.dtype(), table.device());
  kernels::IndexFault* fault = index_fault_record(table.device(), op);
  launch_floating<WithBFloat16::Yes>(op, table, [&](auto zero) {
    using T = decltype(zero);
    return kernels::EmbeddingForward<T>{table.ptr<T>(), ids.ptr<int64_t>(), out.ptr<T>(), ids.numel(), vocab, dim,
                                        fault};
  });
  return out;
}

Tensor embedding_backward(const Tensor& dout, const Tensor& ids, const Shape& table_shape) {
  Tensor dtable = empty(table_shape, dout.dtype(), dout.device());
  const int64_t vocab = table_shape[0], dim = table_shape[1];
  launch_floating<WithBFloat16::Yes>("embedding backward", dout, [&](auto zero) {
    using T = decltype(zero);
    return kernels::EmbeddingBackward<T>{dout.ptr<T>(), ids.ptr<int64_t>(), dtable.ptr<T>(), ids.numel(), vocab, dim};
  });
  return dtable;
}

}  // namespace fuselab::math
