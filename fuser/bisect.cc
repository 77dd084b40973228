#include "fuser/bisect.h"

#include "fuser/fusion_check.h"

namespace fuselab {

std::optional<std::string> bisect_fusions(Sequential& seq, const Tensor& x, const std::vector<Tensor>& extras,
                                          double tolerance) {
  const FusionSwitchesScope restore(seq, false);
  const std::vector<std::string> names = registered_fusion_names();
  const RunResult reference = run_with_backward(seq, x, extras);
  auto differs_with_first = [&](size_t k) {
    seq.set_fusion_switches(FusionSwitches::only(std::vector<std::string>(names.begin(), names.begin() + long(k))));
    return !compare_runs(run_with_backward(seq, x, extras), reference, tolerance, tolerance).empty();
  };
  std::optional<std::string> culprit;
  if (differs_with_first(names.size())) {
    size_t good = 0, bad = names.size();  // invariant: first `good` agree, first `bad` differ
    while (bad - good > 1) {
      const size_t mid = (good + bad) / 2;
      (differs_with_first(mid) ? bad : good) = mid;
    }
    culprit = names[bad - 1];
  }
  return culprit;
}

}  // namespace fuselab
