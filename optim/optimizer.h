// Optimizer: updates a fixed list of parameters from their grads, and saves and restores its
// state (per-parameter buffers and the step count) as named tensors, for checkpoints.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tensor/safetensors.h"  // NamedTensors
#include "tensor/tensor.h"

namespace fuselab {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params);
  virtual ~Optimizer() = default;

  virtual void step() = 0;  // parameters without a grad are skipped
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  int64_t steps() const { return steps_; }
  const std::vector<Tensor>& params() const { return params_; }

  // "step" and one entry per buffer, named "<buffer>.<parameter index>".
  NamedTensors state() const;
  // Throws naming the entry if a buffer is missing or has the wrong shape or dtype.
  void load_state(const NamedTensors& state);

 protected:
  // Buffers per parameter, e.g. {"exp_avg", "exp_avg_sq"}; created zeroed on first use.
  virtual std::vector<std::string> buffer_names() const = 0;
  Tensor& buffer(size_t name_index, size_t param_index);
  // Indices of the parameters that have a grad: the ones a step updates.
  std::vector<size_t> params_with_grad() const;

  std::vector<Tensor> params_;
  double lr_ = 0;
  int64_t steps_ = 0;

 private:
  std::vector<std::vector<Tensor>> buffers_;  // [name][param]
};

}  // namespace fuselab
