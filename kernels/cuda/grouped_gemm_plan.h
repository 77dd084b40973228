// The arguments of cuBLAS's grouped GEMM (cublasGemmGroupedBatchedEx) for grouped_gemm's
// row-major problems (gemm.h), host code shared by gemm.cu, which passes them to cuBLAS, and the
// CUDA emulator, which multiplies by them as cuBLAS's documentation states.
//
// cuBLAS is column-major, and a row-major C is its transpose there, so as in gemm():
//
//   C = op(A) op(B)  (row-major)   <=>   C^T = op(B)^T op(A)^T  (column-major)
//
// cuBLAS's m is the problem's n, its n the problem's m, its first operand the problem's B (leading
// dimension ldb, transposed when B is) and its second the problem's A. Problems of one shape form
// one group; cuBLAS reads the groups' shapes from host arrays and the operands' addresses from
// device arrays, one entry per problem in group order.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "kernels/cuda/gemm.h"

namespace fuselab::kernels::cuda {

template <class T>
struct GroupedGemmPlan {
  std::vector<int64_t> m, n, k, group_size;  // per group, cuBLAS's (column-major) shape
  // Per problem: cuBLAS's first operands (the problems' B), then its second (their A), then C.
  std::vector<const void*> pointers;
  std::vector<GemmProblem<T>> empty_sums;  // k = 0, for gemm(): cuBLAS takes no empty sum
  int64_t problems() const { return int64_t(pointers.size() / 3); }
};

// Problems with m or n zero are left out.
template <class T>
GroupedGemmPlan<T> plan_grouped_gemm(const std::vector<GemmProblem<T>>& problems) {
  GroupedGemmPlan<T> plan;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<const GemmProblem<T>*>> shapes;
  for (const GemmProblem<T>& p : problems) {
    if (p.m == 0 || p.n == 0) continue;
    if (p.k == 0) {
      plan.empty_sums.push_back(p);
    } else {
      shapes[{p.m, p.n, p.k}].push_back(&p);
    }
  }
  for (const auto& [shape, members] : shapes) {
    const auto [m, n, k] = shape;
    plan.m.push_back(n), plan.n.push_back(m), plan.k.push_back(k);
    plan.group_size.push_back(int64_t(members.size()));
  }
  const auto append = [&](auto pointer_of) {
    for (const auto& entry : shapes) {
      for (const GemmProblem<T>* p : entry.second) plan.pointers.push_back(pointer_of(*p));
    }
  };
  append([](const GemmProblem<T>& p) -> const void* { return p.b; });
  append([](const GemmProblem<T>& p) -> const void* { return p.a; });
  append([](const GemmProblem<T>& p) -> const void* { return p.c; });
  return plan;
}

// The plan's empty sums (k = 0), which cuBLAS's grouped call does not take, each as gemm() writes
// it: beta C, or 0.
template <class T>
void run_empty_sums(const GroupedGemmPlan<T>& plan, bool transpose_a, bool transpose_b, int64_t lda, int64_t ldb,
                    compute_t<T> beta, int64_t ldc, int device) {
  for (const GemmProblem<T>& p : plan.empty_sums) {
    gemm<T>(transpose_a, transpose_b, p.m, p.n, 0, 1, p.a, lda, p.b, ldb, beta, p.c, ldc, device);
  }
}

}  // namespace fuselab::kernels::cuda
