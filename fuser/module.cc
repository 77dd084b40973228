#include "fuser/module.h"

#include "fuser/sequential.h"

namespace fuselab {

Module::Module(std::string type, Forward forward, NamedTensors parameters)
    : type_(std::move(type)), forward_(std::move(forward)), parameters_(std::move(parameters)) {
  check(forward_ != nullptr, "Module ", type_, ": no callable");
}

Module::Module(std::shared_ptr<Sequential> nested) : type_("Sequential"), nested_(std::move(nested)) {
  check(nested_ != nullptr, "Module: null nested Sequential");
}

Tensor Module::operator()(const Tensor& x) const {
  const Tensor y = nested_ ? (*nested_)(x) : forward_(x);
  check(y.defined(), describe(), " returned an undefined tensor for an input of shape ", x.shape());
  return y;
}

std::vector<Tensor> Module::parameters() const {
  if (nested_) return nested_->parameters();
  std::vector<Tensor> params;
  for (const auto& [name, p] : parameters_) params.push_back(p);
  return params;
}

NamedTensors Module::named_parameters() const { return nested_ ? nested_->named_parameters() : parameters_; }

void Module::train(bool on) {
  if (nested_) nested_->train(on);
}

void Module::to(Device device) {
  if (nested_) nested_->to(device);
  for (auto& [name, p] : parameters_) p.set_data(p.detach().to(device));
}

void Module::to(DType dtype) {
  if (nested_) nested_->to(dtype);
  for (auto& [name, p] : parameters_) p.set_data(p.detach().to(dtype));
}

}  // namespace fuselab
