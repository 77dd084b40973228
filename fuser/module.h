// Module: a step of a Sequential that the fuser does not see, as a torch.nn.Module between
// TransformerEngine's fusible ops. It is a callable over tensors that records on the tape itself,
// through the functional API (autograd/functional.h), or a nested Sequential run as one step.
//
//   Sequential seq({linear, bias, std::make_shared<Module>("ReLU", [](const Tensor& x) { return relu(x); }), gelu});
//
// A Module splits the Sequential's op list into groups that fuse separately: no fusion crosses it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/safetensors.h"  // NamedTensors
#include "tensor/tensor.h"

namespace fuselab {

class Sequential;

class Module {
 public:
  using Forward = std::function<Tensor(const Tensor&)>;

  // A callable; `parameters` are the leaves it reads, by name, so that the Sequential's
  // parameters(), named_parameters() and to() include them.
  Module(std::string type, Forward forward, NamedTensors parameters = {});
  // A nested Sequential: its ops fuse among themselves, never with the outer ones. It takes no
  // extra inputs and gives no extra outputs.
  explicit Module(std::shared_ptr<Sequential> nested);

  Tensor operator()(const Tensor& x) const;

  const std::string& type() const { return type_; }   // "ReLU", or "Sequential" when nested
  const std::string& name() const { return name_; }   // "relu0", set by the Sequential
  void set_name(std::string name) { name_ = std::move(name); }
  std::string describe() const { return type_ + "(" + name_ + ")"; }
  const std::shared_ptr<Sequential>& nested() const { return nested_; }

  std::vector<Tensor> parameters() const;
  NamedTensors named_parameters() const;  // without this module's name
  void train(bool on);  // a nested Sequential's mode
  void to(Device device);
  void to(DType dtype);

 private:
  std::string type_, name_;
  Forward forward_;
  NamedTensors parameters_;
  std::shared_ptr<Sequential> nested_;
};

}  // namespace fuselab
