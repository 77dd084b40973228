#include "data/window_sampler.h"

#include <algorithm>

#include "tensor/factories.h"

namespace fuselab {
namespace {

// The window starts: 0 .. N - context - 1, checked before the BatchLoader sees them.
int64_t window_count(const Tensor& tokens, int64_t batch, int64_t context) {
  check(tokens.dtype() == DType::Int64 && tokens.device().is_cpu() && tokens.dim() == 1,
        "WindowSampler: needs an int64 CPU tensor [N] of token ids, got ", tokens.dtype(), " ", tokens.shape(), " on ",
        tokens.device());
  check(batch > 0 && context > 0, "WindowSampler: needs batch and context > 0, got ", batch, " and ", context);
  const int64_t windows = tokens.size(0) - context;
  check(windows >= batch, "WindowSampler: ", tokens.size(0), " tokens hold ", std::max<int64_t>(windows, 0),
        " windows of ", context + 1, ", fewer than a batch of ", batch);
  return windows;
}

}  // namespace

WindowSampler::WindowSampler(const Tensor& tokens, int64_t batch, int64_t context, uint64_t seed)
    : tokens_(tokens),
      batch_(batch),
      context_(context),
      starts_(window_count(tokens, batch, context), batch, seed, true, LastBatch::Drop) {}

Tensor WindowSampler::next() {
  const std::vector<int64_t> starts = starts_.next();
  const int64_t width = context_ + 1;
  Tensor out = empty({batch_, width}, DType::Int64);
  const int64_t* tokens = tokens_.data<int64_t>();
  int64_t* rows = out.data<int64_t>();
  for (size_t row = 0; row < starts.size(); ++row) {
    std::copy(tokens + starts[row], tokens + starts[row] + width, rows + int64_t(row) * width);
  }
  return out;
}

}  // namespace fuselab
