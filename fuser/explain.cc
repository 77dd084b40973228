#include "fuser/explain.h"

#include <sstream>

namespace fuselab {

std::string ExplainLog::str() const {
  std::ostringstream out;
  for (const PassLog& pass : passes) {
    out << pass.pass << " pass:\n";
    if (pass.steps.empty()) out << "  (no fusions registered)\n";
    for (const FusionStepLog& step : pass.steps) {
      out << "  " << step.fusion;
      if (step.disabled) {
        out << ": disabled\n";
        continue;
      }
      out << (step.events.empty() ? ": no match\n" : "\n");
      for (const FusionEvent& e : step.events) {
        out << "    " << (e.kind == FusionEvent::Kind::Matched ? "matched  " : "rejected ") << e.where << " -> "
            << e.detail << "\n";
      }
    }
  }
  return out.str();
}

}  // namespace fuselab
