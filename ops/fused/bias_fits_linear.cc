#include "ops/fused/bias_fits_linear.h"

#include "ops/basic/bias.h"
#include "ops/basic/linear.h"

namespace fuselab {

PatternPredicate bias_fits_linear() {
  return {"bias fits the linear", [](const PatternMatch& m, const FusionFacts&) {
            if (!m.has(1)) return std::string();
            const Linear& linear = m.get<Linear>(0);
            const Bias& bias = m.get<Bias>(1);
            return bias.features() == linear.out_features()
                       ? std::string()
                       : bias.describe() + " has " + std::to_string(bias.features()) + " features, " +
                             linear.describe() + " gives " + std::to_string(linear.out_features());
          }};
}

}  // namespace fuselab
