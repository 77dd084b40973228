// FusedOp: a run of consecutive basic ops computed together. It holds no parameters or state of
// its own (it reaches them through its basic ops) and implements the passes it was made for.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "ops/basic_op.h"

namespace fuselab {

class FusedOp : public FusibleOp {
 public:
  // Throws unless `ops` is non-empty and every entry is a basic op (fused ops never nest).
  FusedOp(std::string type, const OpList& ops, Pass pass);

  const std::string& type() const { return type_; }
  bool is_fused() const override { return true; }
  std::vector<std::shared_ptr<BasicOp>> basic_ops() const override { return ops_; }
  bool implements(Pass pass) const override;
  std::string describe() const override;

  // A device fallback met at run time that undoes part of the fusion (cuBLASLt refusing the
  // epilogue it was asked for), kept for Sequential::explain(); the first one is kept.
  void note_fallback(const std::string& what);
  std::string fallback() const;

  // By default a fused op does not implement a pass; these throw naming the op.
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& input,
                             const TensorLists& extra_inputs) override;
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& grad_output,
                               const TensorLists& grad_extra_outputs) override;

 protected:
  // The i-th covered basic op as its concrete type.
  template <class Op>
  Op& op(size_t i) const {
    return static_cast<Op&>(*ops_.at(i));
  }

 private:
  std::string type_;
  std::vector<std::shared_ptr<BasicOp>> ops_;
  Pass pass_;
  mutable std::mutex fallback_mutex_;
  std::string fallback_;
};

}  // namespace fuselab
