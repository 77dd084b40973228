#include "examples/training_run.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "fuser/registry.h"
#include "ops/basic/dropout.h"
#include "ops/fused/recompute.h"
#include "optim/anomaly.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "runtime/machine_limits.h"
#include "runtime/runtime.h"
#include "tensor/allocator.h"
#include "tensor/factories.h"

namespace fuselab::examples {
namespace {

double seconds_since(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

void print_progress(int64_t step, int64_t total, double loss, double tokens_per_s, double seconds_left,
                    const std::string& note) {
  const int width = 30, filled = int(width * step / total);
  std::printf("\r[%s%s] step %lld/%lld  loss %.4f  %.1fk tok/s  %3.0fs left %s", std::string(filled, '#').c_str(),
              std::string(width - filled, '.').c_str(), (long long)step, (long long)total, loss, tokens_per_s / 1000,
              seconds_left, note.empty() ? "" : (" " + note + " ").c_str());
  std::fflush(stdout);
}

// A generator's state as an int64 tensor, and back, so a checkpoint can hold it.
Tensor generator_state(const Generator& gen) {
  const Generator::State state = gen.state();
  std::vector<int64_t> words(state.begin(), state.end());
  return from_vector<int64_t>(words, {int64_t(words.size())});
}

void load_generator_state(Generator& gen, const Tensor& saved) {
  Generator::State state;
  check(saved.dtype() == DType::Int64 && saved.numel() == int64_t(state.size()), "a generator's state is int64 [",
        state.size(), "], got ", saved.dtype(), " ", saved.shape());
  const std::vector<int64_t> words = saved.to_vector<int64_t>();
  std::copy(words.begin(), words.end(), state.begin());
  gen.set_state(state);
}

// A number as JSON writes it: whole numbers (counts, bytes) in full, others as a stream does.
std::string json_number(double value) {
  std::ostringstream text;
  if (value == std::floor(value) && std::fabs(value) < 9e15) {
    text << (long long)value;
  } else {
    text << value;
  }
  return text.str();
}

// The --checkpoint folder, created and locked (none when empty), so that two runs cannot write
// one checkpoint.
std::unique_ptr<FolderLock> lock_checkpoint_folder(const std::string& program, const std::string& folder) {
  if (folder.empty()) return nullptr;
  create_output_folder("checkpoint", folder);
  return std::make_unique<FolderLock>(program + ": --checkpoint", folder);
}

}  // namespace

void add_run_flags(Flags& flags, RunFlags& run) {
  flags.add("steps", run.steps, "training steps", {1, 1'000'000'000});
  flags.add("stop-after", run.stop_after, "stop after this many steps, as an interrupted run would", {1, 1'000'000'000});
  flags.show("stop-after", "= --steps", "[1, --steps]");  // checked once --steps is known
  flags.add("lr", run.lr, "peak learning rate of the schedule (with --resume the checkpoint's lr wins)", {1e-9, 10});
  flags.add("seed", run.seed, "seed of the data order, the initialization, dropout and the sampling", {0, INT64_MAX});
  flags.add("no-fusion", run.no_fusion, "run the model unfused");
  flags.add("recompute", run.recompute, "activations to recompute in backward instead of keeping: none, mlp (the "
            "MLP branch), norms (each norm and the Linear it feeds) or block (every residual branch whole, "
            "attention and experts included, keeping only the residual stream)");
  flags.add("device", run.device, "cpu or cuda");
  flags.add("checkpoint", run.checkpoint, "folder to save the training state in (none: no checkpoints)");
  flags.add("checkpoint-every", run.checkpoint_every, "steps between checkpoints", {1, 1'000'000'000});
  flags.add("resume", run.resume, "continue from the state in --checkpoint");
  flags.add("json", run.json, "file for the final report, as JSON");
  flags.add("loss-log", run.loss_log, "file for the loss of every step");
  flags.add("detect-anomaly", run.detect_anomaly, "check every grad for non-finite values, naming the parameter");
}

void check_run_flags(const std::string& program, const Flags& flags, RunFlags& run) {
  if (!flags.given("stop-after")) run.stop_after = run.steps;
  run.lr_given = flags.given("lr");
  check_different_files("json", run.json, "loss-log", run.loss_log);
  check_in_range("stop-after", run.stop_after, {1, run.steps});
  check(!run.resume || !run.checkpoint.empty(), program, ": --resume needs --checkpoint=DIR to resume from");
  check(run.recompute == "none" || run.recompute == "mlp" || run.recompute == "norms" || run.recompute == "block",
        program, ": --recompute must be none, mlp, norms or block, got ", run.recompute);
}

void apply_fusion_flags(Sequential& model, const RunFlags& run) {
  model.set_fusion_switches(!run.no_fusion);
  if (const std::optional<RecomputeScope> scope = parse_recompute_scope(run.recompute)) {
    // Registered once for the process, as a user's fusion is.
    const FusionDefinition fusion = recompute_fusion(*scope);
    const std::vector<std::string> names = registered_fusion_names();
    if (std::find(names.begin(), names.end(), fusion.name) == names.end()) {
      register_forward_backward_fusion(fusion.name, fusion.fn);
    }
  }
}

Device run_device(const std::string& program, const RunFlags& run) {
  check(run.device == "cpu" || run.device == "cuda", program, ": --device must be cpu or cuda, got ", run.device);
  check(run.device == "cpu" || cuda_device_count() > 0, program,
        ": --device cuda, but this machine has no CUDA device");
  return run.device == "cpu" ? Device::cpu() : Device::cuda(0);
}

TrainingRun::TrainingRun(std::string program, RunFlags flags, Sequential& model, Optimizer& optimizer,
                         LoopSettings loop, bool leader)
    : program_(std::move(program)),
      flags_(std::move(flags)),
      model_(model),
      optimizer_(optimizer),
      loop_(loop),
      leader_(leader),
      checkpoint_lock_(lock_checkpoint_folder(program_, leader ? flags_.checkpoint : "")),
      loss_log_("loss-log", leader ? flags_.loss_log : "", flags_.resume ? std::ios::app : std::ios::trunc),
      json_("json", leader ? flags_.json : "") {
  const auto ops = model.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (auto* dropout = dynamic_cast<Dropout*>(ops[i].get())) {
      Generator& gen = dropout->generator();
      kept_.push_back({"dropout." + std::to_string(i), [&gen] { return generator_state(gen); },
                       [&gen](const Tensor& saved) { load_generator_state(gen, saved); }});
    }
  }
  if (leader_ && loop_.flops_per_token > 0 && flags_.device == "cpu") {
    if (const std::optional<double> core = runtime::fma_peak_gflops()) peak_flops_ = *core * 1e9 * num_threads();
  }
}

TrainingRun::~TrainingRun() = default;

std::string quote_setting(const std::string& text) {
  std::string quoted = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    char escaped[8];
    if (c == '\n') {
      quoted += "\\n";
    } else if (c == '"' || c == '\\') {
      quoted += std::string("\\") + c;
    } else if (byte < 0x20 || byte >= 0x7f) {
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      quoted += escaped;
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

std::string unquote_setting(const std::string& quoted) {
  auto bad = [&] { fail("the recorded text ", quoted.substr(0, 40), " is not quoted as quote_setting writes it"); };
  if (quoted.size() < 2 || quoted.front() != '"' || quoted.back() != '"') bad();
  std::string text;
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    if (quoted[i] != '\\') {
      text += quoted[i];
    } else if (i + 2 < quoted.size() && quoted[i + 1] == 'n') {
      text += '\n', ++i;
    } else if (i + 2 < quoted.size() && (quoted[i + 1] == '"' || quoted[i + 1] == '\\')) {
      text += quoted[++i];
    } else if (i + 4 < quoted.size() && quoted[i + 1] == 'x' && std::isxdigit(quoted[i + 2]) &&
               std::isxdigit(quoted[i + 3])) {
      text += char(std::stoi(quoted.substr(i + 2, 2), nullptr, 16)), i += 3;
    } else {
      bad();
    }
  }
  return text;
}

void TrainingRun::record_text(const std::string& name, const std::string& text) {
  settings_.settings[name] = quote_setting(text);
}

std::string TrainingRun::checkpoint_file() const {
  return flags_.checkpoint.empty() ? "" : flags_.checkpoint + "/" + program_ + ".safetensors";
}

RunState TrainingRun::run_state() const {
  RunState state = settings_;
  for (const Kept& kept : kept_) state.tensors[kept.name] = kept.save();
  return state;
}

void TrainingRun::resume() {
  const std::string file = checkpoint_file();
  check(std::filesystem::exists(file), program_, ": --resume, but there is no checkpoint ", file);
  RunState saved = settings_;
  const std::vector<GroupHyper> asked = optimizer_.groups();  // as this run's flags set them
  start_ = load_checkpoint(file, model_.named_parameters(), optimizer_, &saved);
  check(start_ <= flags_.steps, program_, ": checkpoint ", file, " is at step ", start_, ", past --steps=",
        flags_.steps);
  for (const Kept& kept : kept_) {
    auto it = saved.tensors.find(kept.name);
    check(it != saved.tensors.end(), program_, ": checkpoint ", file, " does not hold the state of ", kept.name);
    try {
      kept.load(it->second);
    } catch (const Error& e) {
      fail(program_, ": checkpoint ", file, ": ", kept.name, ": ", e.what());
    }
  }
  if (!leader_) return;
  std::printf("resumed from %s at step %lld\n", file.c_str(), (long long)start_);
  if (flags_.lr_given) {  // the schedule and the saved moments belong to the saved lr
    std::fprintf(stderr, "%s: --lr %g is not applied: a resumed run keeps the learning rate its checkpoint saved "
                 "(%g)\n", program_.c_str(), flags_.lr, optimizer_.groups()[0].lr);
  }
  for (size_t g = 0; g < asked.size(); ++g) {  // e.g. gpt's --weight-decay, which the saved state also holds
    if (asked[g].weight_decay == optimizer_.groups()[g].weight_decay) continue;
    std::fprintf(stderr, "%s: a weight decay of %g for parameter group %zu is not applied: a resumed run keeps the "
                 "one its checkpoint saved (%g)\n", program_.c_str(), asked[g].weight_decay, g,
                 optimizer_.groups()[g].weight_decay);
  }
}

void TrainingRun::save(int64_t step) {
  if (leader_ && !flags_.checkpoint.empty()) {
    save_checkpoint(checkpoint_file(), model_.named_parameters(), optimizer_, step, run_state());
    loss_log_.commit_and_continue();  // the losses up to the checkpoint, which --resume appends to
  }
}

bool TrainingRun::train(const std::function<double(int64_t step)>& step_loss) {
  if (flags_.resume) resume();
  const int64_t stop = std::min(flags_.steps, flags_.stop_after);
  begin_ = std::chrono::steady_clock::now();
  for (int64_t step = start_; step < stop; ++step) {
    optimizer_.set_lr_scale(cosine_with_warmup(step, loop_.warmup, flags_.steps, 1.0, loop_.final_lr_scale));
    optimizer_.zero_grad();
    last_loss_ = step_loss_or_explain(step_loss, step);
    finish_step(step + 1, stop);
  }
  seconds_ = seconds_since(begin_);
  loss_log_.commit();  // a stopped run's too: --resume appends to it
  if (!leader_) return stop == flags_.steps;
  std::printf("\n");
  if (const std::optional<double> mfu = flops_utilization()) {
    std::printf("model FLOPs utilization %.1f%%: %.1f GFLOP/s of the %.1f GFLOP/s float32 FMA peak of %d threads\n",
                100 * *mfu, tokens_per_s() * loop_.flops_per_token / 1e9, *peak_flops_ / 1e9, num_threads());
  }
  if (stop < flags_.steps) {
    std::printf("stopped after step %lld of %lld (--stop-after)\n", (long long)stop, (long long)flags_.steps);
    return false;
  }
  return true;
}

// A step that runs out of memory says what it was doing and which flags size it: a bare
// std::bad_alloc would name neither.
double TrainingRun::step_loss_or_explain(const std::function<double(int64_t step)>& step_loss, int64_t step) {
  auto sizes = [&] {
    std::string flags = loop_.sized_by;
    for (const auto& [name, value] : settings_.settings) {
      if (name.rfind("--", 0) == 0) flags += (flags.empty() ? "" : " ") + name + "=" + value;
    }
    return flags;
  };
  const Device device = model_.parameters().empty() ? Device::cpu() : model_.parameters()[0].device();
  const size_t in_use = CachingAllocator::of(device).stats().bytes_in_use;
  try {
    return step_loss(step);
  } catch (const OutOfMemory& e) {
    fail(program_, ": training step ", step + 1, " ran out of memory for its activations and grads (", e.what(),
         ", with ", in_use, " bytes in use before the step); they grow with ", sizes(), ": give smaller values");
  } catch (const std::bad_alloc&) {
    fail(program_, ": training step ", step + 1, " ran out of host memory for its batch (", in_use, " bytes on ",
         device, " in use before the step); it grows with ", sizes(), ": give smaller values");
  }
}

// Everything after the forward and backward passes of step `step` (counted from 1).
void TrainingRun::finish_step(int64_t step, int64_t stop) {
  if (flags_.detect_anomaly) check_finite_grads(program_, model_.named_parameters(), step);
  if (loop_.max_grad_norm > 0) {
    const double grad_norm = clip_grad_norm(model_.parameters(), loop_.max_grad_norm);
    check(std::isfinite(grad_norm), program_, ": the grad norm is ", grad_norm, " at step ", step,
          "; stopping (--detect-anomaly names the parameter)");
  }
  optimizer_.step();
  check_finite_loss(program_, last_loss_, step);
  loss_log_.write(step, ' ', last_loss_, '\n');
  if (step % flags_.checkpoint_every == 0 || step == stop) save(step);
  seconds_ = seconds_since(begin_);
  done_ = step - start_;
  if (leader_ && (step % loop_.progress_every == 0 || step == stop)) {
    print_progress(step, flags_.steps, last_loss_, tokens_per_s(), seconds_ / double(done_) * double(flags_.steps - step),
                   loop_.progress_note ? loop_.progress_note() : "");
  }
}

double TrainingRun::tokens_per_s() const {
  return seconds_ > 0 ? steps_per_s() * double(loop_.tokens_per_step) : 0;
}

double TrainingRun::steps_per_s() const {
  return seconds_ > 0 ? double(done_) / seconds_ : 0;
}

std::optional<double> TrainingRun::flops_utilization() const {
  if (!peak_flops_ || seconds_ <= 0) return std::nullopt;
  return tokens_per_s() * loop_.flops_per_token / *peak_flops_;
}

void TrainingRun::write_json(const std::vector<std::pair<std::string, double>>& fields) {
  std::string text = "{";
  for (const auto& [name, value] : fields) text += "\"" + name + "\": " + json_number(value) + ", ";
  text += "\"steps\": " + json_number(double(flags_.steps)) + ", \"tokens_per_s\": " + json_number(tokens_per_s()) +
          ", \"steps_per_s\": " + json_number(steps_per_s()) + ", ";
  if (const std::optional<double> mfu = flops_utilization()) text += "\"mfu\": " + json_number(*mfu) + ", ";
  text += std::string("\"fused\": ") + (flags_.no_fusion ? "false" : "true");
  json_.write(text, "}\n");
  json_.commit();
}

int main_reporting_errors(int argc, char** argv, const std::function<int()>& body) {
  use_passive_waits(argc, argv);  // the examples' choice for a shared machine (docs/settings.md)
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.what());
    return 1;
  }
}

}  // namespace fuselab::examples
