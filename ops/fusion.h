// What a fusion is, in the terms of the ops layer: the facts it may read, the function that
// rewrites an op list, and an example model that check_fusion runs it on. The fuser (fuser/)
// registers and runs fusions; each built-in one is defined beside its fused op in ops/fused/ as a
// FusionDefinition, and fuser/builtin_fusions.cc registers them in one ordered list.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ops/basic_op.h"
#include "ops/fusible_op.h"
#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/random.h"

namespace fuselab {

// Read-only facts a fusion may depend on; a change in any of them re-runs fusion.
struct FusionFacts {
  Device device;
  DType dtype = DType::Float32;
  bool training = true;
  bool grad_enabled = true;  // whether this call records a backward
  bool operator==(const FusionFacts& o) const {
    return device == o.device && dtype == o.dtype && training == o.training && grad_enabled == o.grad_enabled;
  }
};

// Takes a list in forward order (basic ops, and fused ops from earlier fusion functions of the
// same pass) and returns a new one; the fuser checks that it covers the same basic ops in order.
using FusionFunction = std::function<OpList(OpList ops, const FusionFacts& facts)>;

// An example model on which a fusion fires: ops plus inputs of the given dtype.
struct FusionExample {
  std::vector<std::shared_ptr<BasicOp>> ops;
  Tensor input;
  std::vector<Tensor> extra_inputs;
};
using FusionExampleMaker = std::function<FusionExample(int64_t rows, int64_t width, DType dtype, Generator& gen)>;

// `ops` converted to `dtype`, with a random [rows, width] input and one such extra input per
// extra input the ops take from the caller (not from a channel): the example model of most fusions.
FusionExample make_fusion_example(std::vector<std::shared_ptr<BasicOp>> ops, int64_t rows, int64_t width,
                                  DType dtype, Generator& gen);

// A fusion as it is registered: its name, its pass, its function and its example model.
struct FusionDefinition {
  std::string name;
  Pass pass;
  FusionFunction fn;
  FusionExampleMaker example;
};

}  // namespace fuselab
