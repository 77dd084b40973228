#include "ops/basic_op.h"

#include <algorithm>

namespace fuselab {

std::vector<std::shared_ptr<BasicOp>> BasicOp::basic_ops() const {
  return {std::const_pointer_cast<BasicOp>(shared_from_this())};
}

void BasicOp::add_parameter(std::string name, Tensor value) {
  value.set_requires_grad(true);
  param_names_.push_back(std::move(name));
  param_shapes_.push_back(value.shape());
  params_.push_back(std::move(value));
}

void BasicOp::share_parameter(const std::string& name, const Tensor& shared) {
  const auto it = std::find(param_names_.begin(), param_names_.end(), name);
  check(it != param_names_.end(), describe(), ": has no parameter '", name, "' to share");
  Tensor& own = params_[size_t(it - param_names_.begin())];
  check(shared.defined() && shared.is_leaf(), describe(), ": parameter '", name,
        "' can only share another parameter (a leaf tensor)");
  check(shared.shape() == own.shape() && shared.dtype() == own.dtype() && shared.device() == own.device(), describe(),
        ": parameter '", name, "' is ", own.shape(), " ", own.dtype(), " on ", own.device(), ", cannot share a ",
        shared.shape(), " ", shared.dtype(), " tensor on ", shared.device());
  own = shared;
}

void BasicOp::to(Device device) {
  for (Tensor& p : params_) p.set_data(p.detach().to(device));
}

void BasicOp::to(DType dtype) {
  for (Tensor& p : params_) p.set_data(p.detach().to(dtype));
}

void BasicOp::check_input(const Tensor& x, int64_t features) const {
  check(x.defined(), describe(), ": undefined input");
  check(is_floating(x.dtype()), describe(), ": input must be float32, float64 or bfloat16, got ", x.dtype(),
        " of shape ", x.shape());
  check(x.dim() >= 1 && (features < 0 || x.size(-1) == features), describe(), ": input of shape ", x.shape(),
        " must have last dim ", features);
  check_parameters(x.dtype(), x.device(), x.shape());
  check(x.device().is_cpu() || has_cuda_kernels(), describe(), " on ", x.device(), " (input of shape ", x.shape(),
        ") is not implemented yet: its kernels are CPU-only so far");
}

void BasicOp::check_parameters(DType dtype, Device device, const Shape& input, const char* input_is) const {
  for (size_t k = 0; k < params_.size(); ++k) {  // the messages are built only on failure: every call runs this
    const Tensor& p = params_[k];
    const std::string& name = param_names_[k];
    if (!p.defined()) fail(describe(), ": parameter ", name, " is undefined");
    // An integer input (an embedding's ids) says nothing of the parameters' dtype.
    if (p.device() != device || (is_floating(dtype) && p.dtype() != dtype)) {
      fail(describe(), ": ", input_is, " ", input, " ", dtype, " on ", device, " does not match parameter ", name, " ",
           p.dtype(), " on ", p.device());
    }
    if (p.shape() != param_shapes_[k]) {
      fail(describe(), ": parameter ", name, " has shape ", p.shape(), ", not the ", param_shapes_[k],
           " it was built with");
    }
  }
}

// A fuser built its channel plan from the bindings; a later change would be silently ignored.
void BasicOp::check_channels_unlocked(const char* which, int slot, const std::string& channel) const {
  check(!channels_locked_, describe(), ": cannot bind extra ", which, " ", slot, " to channel '", channel,
        "': the channel bindings are locked, since a fuser (a Sequential's first call or describe()) has read them;",
        " bind channels before that");
}

void BasicOp::set_extra_input_channel(int slot, std::string channel) {
  check(slot >= 0 && slot < num_extra_inputs(), describe(), ": no extra input slot ", slot);
  check(!channel.empty(), describe(), ": channel names must not be empty");
  check_channels_unlocked("input", slot, channel);
  input_channels_.resize(num_extra_inputs());
  input_channels_[slot] = std::move(channel);
}

void BasicOp::set_extra_output_channel(int slot, std::string channel, bool to_caller) {
  check(slot >= 0 && slot < num_extra_outputs(), describe(), ": no extra output slot ", slot);
  check(!channel.empty(), describe(), ": channel names must not be empty");
  check_channels_unlocked("output", slot, channel);
  output_channels_.resize(num_extra_outputs());
  output_to_caller_.resize(num_extra_outputs(), true);
  output_channels_[slot] = std::move(channel);
  output_to_caller_[slot] = to_caller;
}

const std::string& BasicOp::extra_input_channel(int slot) const {
  static const std::string none;
  return size_t(slot) < input_channels_.size() ? input_channels_[slot] : none;
}

const std::string& BasicOp::extra_output_channel(int slot) const {
  static const std::string none;
  return size_t(slot) < output_channels_.size() ? output_channels_[slot] : none;
}

bool BasicOp::extra_output_to_caller(int slot) const {
  return size_t(slot) < output_to_caller_.size() ? output_to_caller_[slot] : true;
}

void BasicOp::check_call_args(const CallArgs& args) const {
  const std::vector<std::string> keys = call_arg_keys();
  check(!keys.empty(), describe(), " takes no per-call arguments");
  std::string accepted;
  for (const std::string& key : keys) accepted += (accepted.empty() ? "'" : ", '") + key + "'";
  for (const auto& [key, value] : args) {
    check(std::find(keys.begin(), keys.end(), key) != keys.end(), describe(), " takes no per-call argument '", key,
          "' (it takes ", accepted, ")");
  }
}

FusedForward BasicOp::fuser_forward(const std::vector<OpContext*>& ctxs, const Tensor& input,
                                    const TensorLists& extra_inputs) {
  OpForward result = op_forward(*ctxs.at(0), input, extra_inputs.at(0));
  return {result.output, {result.extra_outputs}};
}

FusedBackward BasicOp::fuser_backward(const std::vector<OpContext*>& ctxs, const Tensor& grad_output,
                                      const TensorLists& grad_extra_outputs) {
  OpBackward result = op_backward(*ctxs.at(0), grad_output, grad_extra_outputs.at(0));
  return {result.grad_input, {result.grad_extra_inputs}, {result.grad_params}};
}

}  // namespace fuselab
