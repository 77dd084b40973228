// An MLP classifier on a CSV data set: numeric feature columns and an integer label column.
// The rows are split 80/20 into train and test by a seeded shuffle; features are standardized
// with the training set's mean and deviation. The model (examples/models.h) is Linear, Bias, GELU,
// Linear, Bias, GELU, Linear, Bias.
//
//   bazel run -c opt //examples:classify -- [--data=FILE.csv] [--label-column=-1] [--hidden=H]
//       and the flags every training program has (examples/training_run.h: --steps, --lr, --seed, ...)
//
// --help lists every flag with its default and its range.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "autograd/functional.h"
#include "data/batch_loader.h"
#include "data/csv.h"
#include "examples/models.h"
#include "examples/training_run.h"
#include "fuser/sequential.h"
#include "optim/adamw.h"
#include "tensor/factories.h"

using namespace fuselab;
using namespace fuselab::examples;

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

struct Split {
  Tensor train_x, train_y, test_x, test_y;
};

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

// The accuracy on the training and test rows, printed with the test loss and written to --json.
void report(TrainingRun& run, Sequential& model, const Split& data, Device device) {
  NoGradGuard no_grad;
  model.eval();
  const Tensor test_logits = model(data.test_x.to(device)).to(Device::cpu());
  const double train_accuracy = accuracy(model(data.train_x.to(device)).to(Device::cpu()), data.train_y);
  const double test_accuracy = accuracy(test_logits, data.test_y), test_loss = cross_entropy(test_logits, data.test_y).item();
  std::printf("train accuracy %.1f%%, test accuracy %.1f%% (test loss %.4f)\n", 100 * train_accuracy,
              100 * test_accuracy, test_loss);
  run.write_json({{"train_accuracy", train_accuracy}, {"test_accuracy", test_accuracy}, {"test_loss", test_loss}});
}

// The rows split 80/20 into train and test by one seeded shuffle, standardized by the training rows.
Split split(const LabeledData& data, const std::string& path, int64_t seed) {
  const int64_t n = data.labels.size(0), train_rows = n * 4 / 5;
  check(train_rows > 0 && train_rows < n, "classify: ", path, " needs at least 2 rows");
  const std::vector<int64_t> order = BatchLoader(n, n, uint64_t(seed)).next();
  const std::vector<int64_t> train_idx(order.begin(), order.begin() + train_rows);
  const std::vector<int64_t> test_idx(order.begin() + train_rows, order.end());
  const Tensor train_x_raw = take_rows(data.features, train_idx);
  return {standardize(train_x_raw, train_x_raw), take_rows(data.labels, train_idx),
          standardize(take_rows(data.features, test_idx), train_x_raw), take_rows(data.labels, test_idx)};
}

}  // namespace

int main(int argc, char** argv) {
  return main_reporting_errors(argc, argv, [&] {
    Flags flags("classify", "Trains an MLP classifier on a CSV file of numeric features and an integer label.");
    RunFlags c;
    c.steps = 600, c.lr = 3e-3;
    std::string path = "examples/data/blobs.csv";
    int64_t label_column = -1, hidden = ClassifyConfig{}.hidden;
    add_run_flags(flags, c);
    flags.add("data", path, "the CSV file, with a header line");
    flags.add("label-column", label_column, "the label's column; negative counts from the end", {-(1 << 20), 1 << 20});
    flags.add("hidden", hidden, "width of the hidden layer", {1, 8192});
    if (!flags.parse(argc, argv)) return 0;
    check_run_flags("classify", flags, c);
    const Device device = run_device("classify", c);

    const LabeledData data = read_csv(path, int(label_column));
    const int64_t n = data.labels.size(0), features = data.features.size(1);
    const auto labels = data.labels.to_vector<int64_t>();
    const int64_t classes = *std::max_element(labels.begin(), labels.end()) + 1;
    check(classes <= n, "classify: ", path, ": the largest label is ", classes - 1, ", which means ", classes,
          " classes for only ", n, " rows; labels must be class ids 0..K-1");
    const Split rows = split(data, path, c.seed);
    const int64_t train_rows = rows.train_y.size(0);
    Generator gen(uint64_t(c.seed));
    Sequential model = classify_model({features, hidden, classes}, gen);
    model.set_fusion_switches(!c.no_fusion);
    model.to(device);
    AdamW optimizer(model.parameters(), {c.lr, 0.9, 0.999, 1e-8, 1e-4});
    BatchLoader loader(train_rows, 64, uint64_t(c.seed) + 1);
    std::printf("classify: %s, %lld rows (%lld train / %lld test), %lld features, %lld classes, fusion %s\n",
                path.c_str(), (long long)n, (long long)train_rows, (long long)(n - train_rows), (long long)features,
                (long long)classes, c.no_fusion ? "off" : "on");
    // A constant lr, no clipping: the batch's rows are its tokens.
    TrainingRun run("classify", c, model, optimizer, {64, 0, 1.0, 0, 100, "", matmul_flops_per_token(model)});
    run.record("--hidden", hidden);
    run.keep("data_order", loader);
    const bool finished = run.train([&](int64_t) {
      const auto batch = loader.next();
      const Tensor loss = cross_entropy(model(take_rows(rows.train_x, batch).to(device)),
                                        take_rows(rows.train_y, batch).to(device));
      backward(loss);
      return loss.item();
    });
    if (finished) report(run, model, rows, device);
    return 0;
  });
}
