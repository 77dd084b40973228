// Untracked math on whole tensors, for forward and backward code in autograd/ and ops/:
// each allocates its result and calls one kernel. Nothing here records on the tape.
#pragma once

#include <optional>
#include <vector>

#include "kernels/activation_math.h"
#include "kernels/elementwise_kinds.h"
#include "kernels/index_fault.h"
#include "tensor/tensor.h"

namespace fuselab::math {

using kernels::Activation;
using kernels::BinaryOp;
using kernels::Broadcast;

// How b lines up with a for the fast kernels, when a already has the result's shape: the same
// shape, a vector over a's last dim ([n] or [1, ..., 1, n]), or one element. Nothing otherwise.
std::optional<Broadcast> fast_broadcast(const Tensor& a, const Tensor& b);

// a (op) b with NumPy broadcasting of both operands (tensor/broadcast.h). The fast_broadcast
// patterns run as they are; for any other pair the operands are first copied out to the
// result's shape. Throws naming `op` for operands of different dtypes or devices, or shapes
// that do not broadcast.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* name = "binary");
Tensor scaled(const Tensor& x, double alpha);
void scale_into(Tensor& out, const Tensor& x, double alpha);  // out = alpha * x, same shapes; out may be x
void add_(Tensor& y, const Tensor& x, double alpha = 1);  // y += alpha * x, same shapes
// into += grad out of place, as grads are summed (one in flight may be shared); an undefined grad
// counts as zero, and into undefined takes grad itself.
void accumulate(Tensor& into, const Tensor& grad);
// A grad summed back to a fast_broadcast operand of `shape` (any broadcast: reduce_to).
Tensor sum_to(const Tensor& grad, Broadcast broadcast, const Shape& shape);
Tensor activation(Activation act, const Tensor& x);
Tensor activation_backward(Activation act, const Tensor& x, const Tensor& dy);

// alpha op(a) op(b) (+ addend) in a new tensor, where op transposes the last two dims when its flag
// is set. a and b are both 2-D, or both 3-D with the same batch size. A defined addend, of the
// result's shape, is added by the GEMM itself (kernels/matmul.h), and alpha is the GEMM's scale.
Tensor matmul(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, const Tensor& addend = Tensor(),
              double alpha = 1);
// out += alpha op(a) op(b) in place, out of the product's shape, dtype and device: the GEMM reads
// out as its C (beta = 1), so the sum costs no pass of its own. matmul_into writes out = alpha
// op(a) op(b) (beta = 0; out may be a view, as a block of rows of a larger tensor).
void matmul_add_into(Tensor& out, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b,
                     double alpha = 1);
void matmul_into(Tensor& out, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, double alpha = 1);
// The products of a grouped Linear (kernels/matmul.h, GroupedMatmul), into out written whole, for
// `sizes` [G] groups of consecutive rows of a (on the host, summing to its rows): out[rows_g] = a[rows_g]
// op(w_g) with w [G, ., .], op transposing with transpose_w; or with weight_grad out_g = a[rows_g]^T
// w[rows_g] with w [R, .], out [G, ., .], 0 for a group without rows. Throws for sizes, shapes,
// dtypes or devices that do not agree.
void grouped_matmul_into(const Tensor& out, const Tensor& a, const Tensor& w, bool weight_grad, bool transpose_w,
                         const std::vector<int64_t>& sizes);
// out[i] = table[ids[i]] for a [V, D] table and int64 ids on its device (throws naming `op` when
// an id is out of range), and its adjoint, the scatter-add dtable[ids[i]] += dout[i].
Tensor embedding(const char* op, const Tensor& table, const Tensor& ids);
Tensor embedding_backward(const Tensor& dout, const Tensor& ids, const Shape& table_shape);

// Where the CUDA kernels `op` launches on `device` record an index out of range
// (kernels/index_fault.h), so that the error names `op`; null on the CPU, whose callers check
// indices before the kernel runs.
kernels::IndexFault* index_fault_record(Device device, const char* op);

// Rows of a 2-D-or-more tensor: all dims but the last, flattened.
int64_t rows_of(const Tensor& x);

}  // namespace fuselab::math
