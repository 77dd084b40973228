#include "examples/language_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/functional.h"
#include "ops/basic/cross_entropy.h"
#include "tensor/factories.h"

namespace fuselab::examples {

std::pair<Tensor, Tensor> inputs_and_targets(const Tensor& windows) {
  const int64_t rows = windows.size(0), t = windows.size(1) - 1;
  const auto all = windows.to_vector<int64_t>();
  std::vector<int64_t> ids, next;
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = all.begin() + r * (t + 1);
    ids.insert(ids.end(), row, row + t);
    next.insert(next.end(), row + 1, row + t + 1);
  }
  return {from_vector<int64_t>(ids, {rows, t}), from_vector<int64_t>(next, {rows * t})};
}

bool ends_in_loss(const Sequential& model) {
  const auto ops = model.ops();
  return !ops.empty() && dynamic_cast<const CrossEntropy*>(ops.back().get()) != nullptr;
}

Tensor next_token_loss(Sequential& model, const Tensor& ids, const Tensor& next, int64_t vocab) {
  if (ends_in_loss(model)) return model(ids, {next.view(ids.shape())}).output;
  return cross_entropy(reshape(model(ids), {-1, vocab}), next);
}

double validation_loss(Sequential& model, const Tensor& tokens, int64_t context, int64_t vocab, Device device) {
  NoGradGuard no_grad;
  model.eval();
  const int64_t targets = tokens.size(0) - 1, windows = targets / context, rows_per_call = 64;
  double total = 0;
  auto add = [&](const Tensor& window) {
    const auto [ids, next] = inputs_and_targets(window);
    const Tensor loss = next_token_loss(model, ids.to(device), next.to(device), vocab);
    total += loss.item() * double(next.numel());
  };
  // Window w holds tokens [w T, w T + T]: T inputs and the T targets after them.
  std::vector<int64_t> all = tokens.to_vector<int64_t>();
  for (int64_t w = 0; w < windows; w += rows_per_call) {
    const int64_t rows = std::min(rows_per_call, windows - w);
    std::vector<int64_t> window;
    for (int64_t r = 0; r < rows; ++r) {
      const auto begin = all.begin() + (w + r) * context;
      window.insert(window.end(), begin, begin + context + 1);
    }
    add(from_vector<int64_t>(window, {rows, context + 1}));
  }
  if (const int64_t rest = targets - windows * context; rest > 0) {
    add(from_vector<int64_t>(std::vector<int64_t>(all.end() - rest - 1, all.end()), {1, rest + 1}));
  }
  model.train();
  return total / double(targets);
}

}  // namespace fuselab::examples
