// An MLP classifier on a CSV data set: numeric feature columns and an integer label column.
// The rows are split 80/20 into train and test by a seeded shuffle; features are standardized
// with the training set's mean and deviation. The model (examples/models.h) is Linear, Bias, GELU,
// Linear, Bias, GELU, Linear, Bias.
//
//   bazel run -c opt //examples:classify -- [--data=FILE.csv] [--label-column=-1] [--steps=N]
//       [--hidden=H] [--seed=S] [--no-fusion]
//
// --help lists every flag with its default and its range.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "autograd/functional.h"
#include "data/batch_loader.h"
#include "data/csv.h"
#include "examples/flags.h"
#include "examples/models.h"
#include "fuser/sequential.h"
#include "optim/adamw.h"
#include "optim/anomaly.h"
#include "tensor/factories.h"

using namespace fuselab;

namespace {

// (x - mean) / std per column, with the statistics of `reference`.
Tensor standardize(const Tensor& x, const Tensor& reference) {
  const int64_t rows = reference.size(0), cols = reference.size(1);
  const auto r = reference.to_vector<float>();
  std::vector<float> mean(size_t(cols), 0), stddev(size_t(cols), 0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mean[j] += r[i * cols + j] / float(rows);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const float d = r[i * cols + j] - mean[j];
      stddev[j] += d * d / float(rows);
    }
  auto v = x.to_vector<float>();
  for (size_t k = 0; k < v.size(); ++k) v[k] = (v[k] - mean[k % cols]) / std::sqrt(stddev[k % cols] + 1e-8f);
  return from_vector<float>(v, x.shape());
}

double accuracy(const Tensor& logits, const Tensor& labels) {
  const auto l = logits.to_vector<float>();
  const auto y = labels.to_vector<int64_t>();
  const int64_t classes = logits.size(1);
  int64_t correct = 0;
  for (size_t r = 0; r < y.size(); ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) best = l[r * classes + c] > l[r * classes + best] ? c : best;
    correct += best == y[r];
  }
  return double(correct) / double(y.size());
}

}  // namespace

int main(int argc, char** argv) {
  try {
    examples::Flags flags("classify", "Trains an MLP classifier on a CSV file of numeric features and an integer label.");
    std::string path = "examples/data/blobs.csv";
    int64_t label_column = -1, steps = 600, hidden = examples::ClassifyConfig{}.hidden, seed = 0;
    bool no_fusion = false;
    flags.add("data", path, "the CSV file, with a header line");
    flags.add("label-column", label_column, "the label's column; negative counts from the end", {-(1 << 20), 1 << 20});
    flags.add("steps", steps, "training steps", {1, 1'000'000'000});
    flags.add("hidden", hidden, "width of the hidden layer", {1, 8192});
    flags.add("seed", seed, "seed of the train/test split and the initialization", {0, INT64_MAX});
    flags.add("no-fusion", no_fusion, "run the model unfused");
    if (!flags.parse(argc, argv)) return 0;
    const bool fusion = !no_fusion;

    const LabeledData data = read_csv(path, int(label_column));
    const int64_t n = data.labels.size(0), features = data.features.size(1);
    const auto labels = data.labels.to_vector<int64_t>();
    const int64_t classes = *std::max_element(labels.begin(), labels.end()) + 1;
    check(classes <= n, "classify: ", path, ": the largest label is ", classes - 1, ", which means ", classes,
          " classes for only ", n, " rows; labels must be class ids 0..K-1");
    const std::vector<int64_t> order = BatchLoader(n, n, seed).next();  // one seeded shuffle of all rows
    Generator gen(seed);
    const int64_t train_rows = n * 4 / 5;
    check(train_rows > 0 && train_rows < n, "classify: ", path, " needs at least 2 rows");
    const std::vector<int64_t> train_idx(order.begin(), order.begin() + train_rows);
    const std::vector<int64_t> test_idx(order.begin() + train_rows, order.end());
    const Tensor train_x_raw = take_rows(data.features, train_idx);
    const Tensor train_x = standardize(train_x_raw, train_x_raw);
    const Tensor test_x = standardize(take_rows(data.features, test_idx), train_x_raw);
    const Tensor train_y = take_rows(data.labels, train_idx), test_y = take_rows(data.labels, test_idx);

    Sequential model = examples::classify_model({features, hidden, classes}, gen);
    model.set_fusion_switches(fusion);
    AdamW optimizer(model.parameters(), {3e-3, 0.9, 0.999, 1e-8, 1e-4});
    BatchLoader loader(train_rows, 64, seed + 1);
    std::printf("classify: %s, %lld rows (%lld train / %lld test), %lld features, %lld classes, fusion %s\n",
                path.c_str(), (long long)n, (long long)train_rows, (long long)(n - train_rows), (long long)features,
                (long long)classes, fusion ? "on" : "off");
    for (int64_t step = 1; step <= steps; ++step) {
      const auto rows = loader.next();
      optimizer.zero_grad();
      const Tensor loss = cross_entropy(model(take_rows(train_x, rows)), take_rows(train_y, rows));
      check_finite_loss("classify", loss.item(), step);
      backward(loss);
      optimizer.step();
      if (step % 100 == 0 || step == steps) std::printf("step %4lld  batch loss %.4f\n", (long long)step, loss.item());
    }
    NoGradGuard no_grad;
    model.eval();
    const Tensor test_logits = model(test_x);
    std::printf("train accuracy %.1f%%, test accuracy %.1f%% (test loss %.4f)\n", 100 * accuracy(model(train_x), train_y),
                100 * accuracy(test_logits, test_y), cross_entropy(test_logits, test_y).item());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
