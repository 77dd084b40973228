// One training run of an example program, so that each program keeps only its model and its data:
// the flags every program shares (steps, checkpoints, output files, device, anomaly stops); the
// checkpoint, which holds all a resumed run needs to go on exactly as an uninterrupted one (the
// parameters, the optimizer, every Dropout's generator, the data order) and the configuration it
// was saved with; the step loop with its learning-rate schedule, grad clipping, anomaly stops,
// --loss-log and progress bar; and the --json report.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "examples/flags.h"
#include "examples/folder_lock.h"
#include "examples/output_file.h"
#include "fuser/sequential.h"
#include "optim/checkpoint.h"
#include "optim/optimizer.h"
#include "tensor/device.h"

namespace fuselab::examples {

// The flags every training program shares; a program sets its defaults before add_run_flags.
struct RunFlags {
  int64_t steps = 1000, stop_after = 0, checkpoint_every = 500, seed = 0;
  double lr = 1e-3;
  bool no_fusion = false, resume = false, detect_anomaly = false;
  bool lr_given = false;  // --lr was on the command line (a resumed run says it keeps the checkpoint's)
  std::string device = "cpu", checkpoint, json, loss_log;
  std::string recompute = "none";  // none, mlp, norms or block (ops/fused/recompute.h)
};

// Declares the shared flags, their current values the defaults --help shows.
void add_run_flags(Flags& flags, RunFlags& run);
// After Flags::parse: --stop-after defaults to --steps and must not pass it; --resume needs
// --checkpoint; --json and --loss-log must be two files.
void check_run_flags(const std::string& program, const Flags& flags, RunFlags& run);
// --no-fusion and --recompute: the model's fusion switches, and the recompute fusion chosen,
// registered for the process as a user fusion is (the same choice for every model of the program).
void apply_fusion_flags(Sequential& model, const RunFlags& run);
// --device as a Device; throws unless it is cpu, or cuda on a machine with a CUDA device.
Device run_device(const std::string& program, const RunFlags& run);

// What each program chooses for its step loop.
struct LoopSettings {
  int64_t tokens_per_step = 1;  // for the tokens/s of the progress bar and --json
  int64_t warmup = 0;           // steps of linear lr warm-up, then a cosine decay
  double final_lr_scale = 1;    // where the decay ends, times --lr (1: a constant lr)
  double max_grad_norm = 0;     // the grad norm is clipped to this (0: no clipping)
  int64_t progress_every = 10;  // steps between updates of the progress bar
  // The data flags that size a step's memory, as "--batch=32": a step that runs out of memory
  // names them and the recorded model settings.
  std::string sized_by;
  // Model FLOPs of one token's forward and backward (examples/models.h): with it, a CPU run reports
  // its model FLOPs utilization against the FMA peak measured at start (0: none reported).
  double flops_per_token = 0;
  // More for the progress bar, after the step's figures (e.g. the experts' load); none when empty.
  std::function<std::string()> progress_note;
};

class TrainingRun {
 public:
  // `leader`: whether this process prints, logs and writes files (rank 0 of data-parallel ranks).
  // Opens --json and --loss-log and creates and locks the --checkpoint folder now (examples/
  // folder_lock.h), so a path that cannot be written, or a folder another run writes to, fails
  // before any training; finds the model's Dropouts, whose generators it saves.
  TrainingRun(std::string program, RunFlags flags, Sequential& model, Optimizer& optimizer, LoopSettings loop,
              bool leader = true);
  ~TrainingRun();

  // A setting the checkpoint records and a resumed run must match, e.g. ("--heads", 4): one of
  // another value is refused naming both.
  template <class T>
  void record(const std::string& name, const T& value) {
    std::ostringstream text;
    text << value;
    settings_.settings[name] = text.str();
  }
  // A text setting, recorded quoted, with bytes outside printable ASCII escaped (\n, \xNN).
  void record_text(const std::string& name, const std::string& text);
  // State the checkpoint keeps, of an object with `Tensor state()` and `load_state(const Tensor&)`
  // (a data loader's order and place in it).
  template <class Stateful>
  void keep(const std::string& name, Stateful& thing) {
    kept_.push_back({name, [&thing] { return thing.state(); }, [&thing](const Tensor& t) { thing.load_state(t); }});
  }

  // Resumes from the checkpoint with --resume, then runs the steps to --stop-after. Each step sets
  // the scheduled lr, zeroes the grads, calls step_loss(step) (the forward and backward passes,
  // returning the step's loss), checks and clips the grads, steps the optimizer, checks the loss,
  // logs it and saves a checkpoint when due. A step that runs out of memory is an error saying how
  // much it asked for and which flags size it. When the run ends the --loss-log file is renamed
  // into place (examples/output_file.h), as --json is when written. Returns whether the run
  // reached --steps.
  bool train(const std::function<double(int64_t step)>& step_loss);

  int64_t start() const { return start_; }  // the step the run began (or resumed) at
  double seconds() const { return seconds_; }
  double last_loss() const { return last_loss_; }
  double tokens_per_s() const;
  double steps_per_s() const;
  // Model FLOPs per second over the float32 FMA peak of the threads the kernels use
  // (runtime/machine_limits.h), or none without flops_per_token, on CUDA or without FMA.
  std::optional<double> flops_utilization() const;

  // The --json report: the program's fields, then steps, tokens_per_s, steps_per_s, mfu (where
  // known) and fused.
  void write_json(const std::vector<std::pair<std::string, double>>& fields);

 private:
  struct Kept {
    std::string name;
    std::function<Tensor()> save;
    std::function<void(const Tensor&)> load;
  };
  std::string checkpoint_file() const;
  RunState run_state() const;
  void resume();
  double step_loss_or_explain(const std::function<double(int64_t step)>& step_loss, int64_t step);
  void finish_step(int64_t step, int64_t stop);
  void save(int64_t step);

  std::string program_;
  RunFlags flags_;
  Sequential& model_;
  Optimizer& optimizer_;
  LoopSettings loop_;
  bool leader_;
  RunState settings_;  // only its settings: what the run was started with
  std::vector<Kept> kept_;
  std::unique_ptr<FolderLock> checkpoint_lock_;  // taken before the output files are opened
  OutputFile loss_log_, json_;
  int64_t start_ = 0, done_ = 0;  // done_: the steps this process ran
  double seconds_ = 0, last_loss_ = 0;
  std::optional<double> peak_flops_;  // the threads' float32 FMA peak, measured at start
  std::chrono::steady_clock::time_point begin_;
};

// A text as a recorded setting: quoted, with \n, \", \\ and \xNN for bytes outside printable
// ASCII (TrainingRun::record_text); and back, an Error for a text not quoted so.
std::string quote_setting(const std::string& text);
std::string unquote_setting(const std::string& quoted);

// Runs a program's main body, given main's arguments: first chooses passive OpenMP waits
// (runtime/runtime.h), then runs `body`; an exception is printed as "error: <what>" and exits 1.
int main_reporting_errors(int argc, char** argv, const std::function<int()>& body);

}  // namespace fuselab::examples
