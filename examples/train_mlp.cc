// The main job until the character-level model lands: an MLP classifier trained on a synthetic
// three-armed spiral (CS231n's classic toy problem, not linearly separable).
//
//   bazel run -c opt //examples:train_mlp -- [--steps=N] [--seed=S] [--no-fusion] [--target-loss=L]
//
// The model is one Sequential of fusible ops: Linear, Bias, GELU, Linear, Bias, GELU, Linear, Bias,
// trained with the functional cross_entropy and SGD with momentum on mini-batches.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "autograd/functional.h"
#include "fuser/sequential.h"
#include "ops/basic/activation.h"
#include "ops/basic/linear.h"
#include "optim/sgd.h"
#include "tensor/factories.h"

using namespace fuselab;

struct Options {
  int steps = 3000;
  uint64_t seed = 0;
  bool fusion = true;
  double target_loss = -1;  // exit non-zero when the final loss is above it
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) { return arg.rfind(flag, 0) == 0 ? arg.c_str() + std::strlen(flag) : nullptr; };
    if (const char* v = value("--steps=")) o.steps = std::atoi(v);
    else if (const char* v = value("--seed=")) o.seed = std::strtoull(v, nullptr, 10);
    else if (const char* v = value("--target-loss=")) o.target_loss = std::atof(v);
    else if (arg == "--no-fusion") o.fusion = false;
    else {
      std::fprintf(stderr, "usage: %s [--steps=N] [--seed=S] [--no-fusion] [--target-loss=L]\n", argv[0]);
      std::exit(2);
    }
  }
  return o;
}

// Three spiral arms of `per_class` points each: class k at radius r has angle 4k + 4r + noise.
void make_spirals(int per_class, Generator& gen, Tensor& points, Tensor& labels) {
  const int classes = 3;
  std::vector<float> xy;
  std::vector<int64_t> ys;
  for (int k = 0; k < classes; ++k) {
    for (int i = 0; i < per_class; ++i) {
      const double r = double(i) / per_class;
      const double t = 4.0 * k + 4.0 * r + 0.2 * gen.normal();
      xy.push_back(float(r * std::sin(t)));
      xy.push_back(float(r * std::cos(t)));
      ys.push_back(k);
    }
  }
  points = from_vector<float>(xy, {classes * per_class, 2});
  labels = from_vector<int64_t>(ys, {classes * per_class});
}

// Rows of `t` picked by `rows`.
Tensor gather_rows(const Tensor& t, const std::vector<int64_t>& rows) {
  const int64_t width = t.numel() / t.size(0);
  Shape shape = t.shape();
  shape[0] = int64_t(rows.size());
  Tensor out = empty(shape, t.dtype());
  const size_t row_bytes = size_t(width) * dtype_size(t.dtype());
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(static_cast<char*>(out.raw_data()) + i * row_bytes,
                static_cast<const char*>(t.raw_data()) + rows[i] * row_bytes, row_bytes);
  }
  return out;
}

double accuracy(const Tensor& logits, const Tensor& labels) {
  const auto l = logits.to_vector<float>();
  const auto y = labels.to_vector<int64_t>();
  const int64_t classes = logits.size(1);
  int correct = 0;
  for (size_t r = 0; r < y.size(); ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) best = l[r * classes + c] > l[r * classes + best] ? c : best;
    correct += best == y[r];
  }
  return double(correct) / double(y.size());
}

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Generator gen(o.seed);
  Tensor points, labels;
  make_spirals(300, gen, points, labels);

  const int64_t hidden = 64, classes = 3, batch = 128;
  Sequential model;
  model.append(linear_with_bias(2, hidden, &gen)).append(std::make_shared<GELU>());
  model.append(linear_with_bias(hidden, hidden, &gen)).append(std::make_shared<GELU>());
  model.append(linear_with_bias(hidden, classes, &gen));
  model.set_fusion_enabled(o.fusion);
  SGD sgd(model.parameters(), {0.2, 0.9});
  std::printf("FuseLab spiral MLP: %lld points, 3 classes, %d steps of batch %lld, fusion %s\n%s\n\n",
              (long long)points.size(0), o.steps, (long long)batch, o.fusion ? "on" : "off", model.describe().c_str());

  const auto start = std::chrono::steady_clock::now();
  for (int step = 1; step <= o.steps; ++step) {
    std::vector<int64_t> rows(batch);
    for (int64_t& r : rows) r = int64_t(gen.next_u64() % uint64_t(points.size(0)));
    sgd.zero_grad();
    const Tensor loss = cross_entropy(model(gather_rows(points, rows)), gather_rows(labels, rows));
    backward(loss);
    sgd.step();
    if (step % 500 == 0 || step == o.steps) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("step %5d  batch loss %.4f  %.0f steps/s\n", step, loss.item(), step / seconds);
    }
  }

  NoGradGuard no_grad;
  const Tensor logits = model.eval()(points);
  const double final_loss = cross_entropy(logits, labels).item();
  std::printf("\nfinal: loss %.4f, accuracy %.1f%% on all %lld points\n", final_loss, 100 * accuracy(logits, labels),
              (long long)points.size(0));
  if (o.target_loss > 0 && !(final_loss <= o.target_loss)) {
    std::printf("did not reach the target loss %.3f\n", o.target_loss);
    return 1;
  }
  return 0;
}
