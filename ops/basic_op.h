// BasicOp: one mathematical operation with its parameters, written as op_forward/op_backward.
//
// Extra inputs and outputs are tensors besides the main input and output (AddExtraInput takes
// one; MakeExtraOutput gives one). They are the Sequential call's arguments and results, or are
// bound by name to each other through channels inside one Sequential.
#pragma once

#include <string>
#include <vector>

#include "ops/fusible_op.h"

namespace fuselab {

struct OpForward {
  Tensor output;
  std::vector<Tensor> extra_outputs;
};

struct OpBackward {
  Tensor grad_input;
  std::vector<Tensor> grad_extra_inputs;
  std::vector<Tensor> grad_params;
};

class BasicOp : public FusibleOp, public std::enable_shared_from_this<BasicOp> {
 public:
  explicit BasicOp(std::string type) : type_(std::move(type)) {}

  const std::string& type() const { return type_; }   // "Linear"
  const std::string& name() const { return name_; }   // "linear0", set by the Sequential
  void set_name(std::string name) { name_ = std::move(name); }

  virtual int num_extra_inputs() const { return 0; }
  virtual int num_extra_outputs() const { return 0; }
  // Whether extra output `slot` carries grads: false for one that holds integers (a router's
  // expert indices), so that its consumers owe it no grad, as PyTorch's mark_non_differentiable.
  virtual bool extra_output_differentiable(int /*slot*/) const { return true; }

  // Leaves that require grad (unless frozen). to() converts them in place (Tensor::set_data).
  const std::vector<Tensor>& parameters() const { return params_; }
  Tensor& parameter(size_t i) { return params_.at(i); }
  // Makes parameter `name` the very tensor `shared` (of the same shape, dtype and device), another
  // op's parameter: tied weights, as a language model's token embedding and output Linear. Both
  // uses add their grads into it; a Sequential lists it once, under its first op's name.
  void share_parameter(const std::string& name, const Tensor& shared);
  const std::vector<std::string>& parameter_names() const { return param_names_; }
  // Moves or converts the parameters in place, as PyTorch's module.to(): handles taken before
  // (by an optimizer, say) then refer to the converted tensors, which keep their requires_grad;
  // grads are converted with them. Call it between steps: a backward whose forward ran before it
  // is refused (as is one after a parameter tensor was assigned).
  void to(Device device);
  void to(DType dtype);

  // Channels: bind extra input `slot` to the extra output of an earlier op with the same name.
  // A fuser reads the bindings once, when it is built over the op (a Sequential's first call,
  // describe(), ...), and locks them: changing one afterwards throws, naming the op and channel.
  void set_extra_input_channel(int slot, std::string channel);
  // Name extra output `slot`; a hidden output (to_caller false) only feeds channel consumers.
  void set_extra_output_channel(int slot, std::string channel, bool to_caller = true);
  const std::string& extra_input_channel(int slot) const;
  const std::string& extra_output_channel(int slot) const;
  bool extra_output_to_caller(int slot) const;
  void lock_channels() { channels_locked_ = true; }

  // The keys of the per-call arguments (ops/call_args.h) this op's forward reads; none by
  // default. check_call_args throws, naming the op, for an op that takes none or an unknown key.
  virtual std::vector<std::string> call_arg_keys() const { return {}; }
  void check_call_args(const CallArgs& args) const;

  // Whether op_forward and op_backward run on CUDA tensors; ops whose kernels are CPU-only
  // refuse them with a clear error.
  virtual bool has_cuda_kernels() const { return false; }

  // Throws unless x is a floating tensor of the parameters' dtype and device, with last dim
  // `features` (any when negative), on a device this op has kernels for, and the parameters have
  // the shapes they were built with (check_parameters). Fused ops call it for the ops they cover.
  void check_input(const Tensor& x, int64_t features) const;
  // Throws unless every parameter is defined, on `device`, of `dtype` (when that is floating) and of
  // the shape it was built with (a program may assign a parameter tensor; one of another shape
  // would be read out of bounds). `input` and `input_is` say what was given, for the message.
  void check_parameters(DType dtype, Device device, const Shape& input, const char* input_is = "input") const;

  virtual OpForward op_forward(OpContext& ctx, const Tensor& input, const std::vector<Tensor>& extra_inputs) = 0;
  // grad_extra_outputs[s] is undefined, meaning zero, when nothing used extra output s.
  virtual OpBackward op_backward(OpContext& ctx, const Tensor& grad_output,
                                 const std::vector<Tensor>& grad_extra_outputs) = 0;

  // FusibleOp, by way of op_forward/op_backward.
  bool is_fused() const override { return false; }
  std::vector<std::shared_ptr<BasicOp>> basic_ops() const override;
  bool implements(Pass) const override { return true; }
  std::string describe() const override { return type_ + "(" + name_ + ")"; }
  FusedForward fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& input,
                             const TensorLists& extra_inputs) override;
  FusedBackward fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& grad_output,
                               const TensorLists& grad_extra_outputs) override;

 protected:
  // Registers a parameter (made a leaf that requires grad).
  void add_parameter(std::string name, Tensor value);

 private:
  std::string type_, name_;
  std::vector<Tensor> params_;
  std::vector<std::string> param_names_;
  std::vector<Shape> param_shapes_;  // as built
  std::vector<std::string> input_channels_, output_channels_;
  std::vector<bool> output_to_caller_;
  bool channels_locked_ = false;

  void check_channels_unlocked(const char* which, int slot, const std::string& channel) const;
};

}  // namespace fuselab
