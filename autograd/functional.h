// The differentiable functional API: each call computes its result and, when grad mode is on
// and an input requires grad, records one tape node whose backward gives every input's grad.
//
// Binary ops (add, sub, mul, div) broadcast both operands as NumPy does: shapes aligned at their
// last dims, each pair of sizes equal or one of them 1 (so [m, 1] with [1, n] gives [m, n]).
#pragma once

#include <cstdint>

#include "autograd/grad_mode.h"
#include "autograd/tape.h"
#include "tensor/tensor.h"

namespace fuselab {

// a [m, k] x b [k, n] -> [m, n], or batched a [B, m, k] x b [B, k, n] -> [B, m, n].
Tensor matmul(const Tensor& a, const Tensor& b);
// Swaps the last two dims (a copy).
Tensor transpose(const Tensor& x);

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& x, double alpha);

Tensor sum(const Tensor& x);            // all elements -> one-element tensor of shape []
Tensor mean(const Tensor& x);
Tensor sum_last_dim(const Tensor& x);   // [..., n] -> [...]
Tensor mean_last_dim(const Tensor& x);
Tensor reshape(const Tensor& x, const Shape& shape);  // one size may be -1
Tensor cast(const Tensor& x, DType dtype);  // between float32, float64 and bfloat16; grads flow back

Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);  // tanh approximation
Tensor silu(const Tensor& x);
Tensor softmax(const Tensor& x);      // over the last dim
Tensor log_softmax(const Tensor& x);  // over the last dim

// Mean over rows of -log softmax(logits)[label]; rows labelled ignore_index are left out. When
// every row is ignored the mean is over zero rows: NaN, as in PyTorch, and the logits' grad is
// all zeros.
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, int64_t ignore_index = -100);
// Mean of (prediction - target)^2.
Tensor mse(const Tensor& prediction, const Tensor& target);
// Rows of table [V, D] picked by int64 ids of any shape -> ids.shape + [D].
Tensor embedding(const Tensor& table, const Tensor& ids);

}  // namespace fuselab
