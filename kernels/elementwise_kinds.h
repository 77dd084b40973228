// What an elementwise kernel computes, shared by the CPU and CUDA kernels.
#pragma once

namespace fuselab::kernels {

enum class BinaryOp { Add, Sub, Mul, Div };

// How b lines up with a, which is [rows, cols]: the same shape, one row of [cols], or a scalar.
enum class Broadcast { None, Row, Scalar };

}  // namespace fuselab::kernels
