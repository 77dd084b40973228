// The one table of op cases: every functional op (autograd/functional.h) and every basic op
// (ops/basic/) registered with the inputs it is run on, the dtypes it takes, its tolerances and
// a function that runs it. tests/op_cases_test.cc runs every case in every mode (float64 grads
// against finite differences, float32 against float64, each CUDA device against the CPU,
// bfloat16 against float32) and fails for an op of the sources that has no case.
//
// A case's function takes the inputs (for a basic op: its input, its extra inputs, then its
// parameters) and returns the op's outputs; the harness turns them into one scalar loss,
// sum_k sum(output_k * w_k) with fixed random w_k, so every input's and parameter's grad is
// checked. Adding an op is one line in op_cases.cc, or a few with more shapes:
//
//   add(op("softmax").input({3, 5}, -4, 4).runs(unary(softmax)));
//   add(op("Linear").input({2, 3, 4}).input({3, 4}).bfloat16().runs(basic<Linear>(4, 3)));
//
// The builder (op_case.h): op() names the op (a function of autograd/functional.h or a basic-op
// class); each input() is a shape and a range, ids() and labels() make int64 inputs; bfloat16()
// says it takes bfloat16 (float64 and float32 it always takes; a case without bfloat16() must
// refuse it); float32_within(), bfloat16_within() and finite_differences() change the
// tolerances; named() tells apart cases of one op on the same shapes.
//
// Cases with at most kFiniteDifferenceElements floating input elements also run against finite
// differences; each op needs at least one such case.
#pragma once

#include <vector>

#include "tests/op_case.h"

namespace fuselab::testing {

// The table, built once.
const std::vector<OpCase>& op_cases();

}  // namespace fuselab::testing
