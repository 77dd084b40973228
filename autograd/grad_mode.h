// Whether differentiable calls record on the tape (per thread), and a guard that turns it off.
#pragma once

namespace fuselab {

bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// Turns recording off for its scope, e.g. for evaluation; restores the previous mode after.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace fuselab
