// Training checkpoints in one safetensors file: the parameters under their own names, the
// optimizer's state under "optimizer.<name>", the program's run state under "run.<name>" (tensors
// and metadata alike), and the step counter in the metadata. Saves are
// atomic (see tensor/safetensors.h); loads check every name, shape and dtype before changing
// anything.
#pragma once

#include <cstdint>
#include <string>

#include "optim/optimizer.h"
#include "tensor/safetensors.h"

namespace fuselab {

// What a training program keeps beside the parameters and the optimizer so that a resumed run
// goes on as an uninterrupted one: its generators' and data order's states as tensors, and its
// configuration as text, to be compared with the resuming run's.
struct RunState {
  NamedTensors tensors;
  Metadata settings;
};

void save_checkpoint(const std::string& path, const NamedTensors& params, const Optimizer& optimizer, int64_t step,
                     const RunState& run = {});

// Copies the saved values into `params` (in place, so models keep their tensors) and the
// optimizer; returns the saved step. When `run` is given, its settings (this run's) are first
// compared with the saved ones, so that a checkpoint of another configuration is refused naming
// both values before any shape is, and then `run` receives the saved state. Throws, naming the
// file and changing nothing, on a setting that differs or was not saved, on saved settings this
// run lacks (all of them named), on a tensor that holds a
// NaN or an infinity, on a metadata step that is not a non-negative integer equal to the
// optimizer's count, and when the optimizer refuses its state (Optimizer::load_state).
int64_t load_checkpoint(const std::string& path, const NamedTensors& params, Optimizer& optimizer,
                        RunState* run = nullptr);

// For a program that uses a trained model without its optimizer (generation): the settings the
// checkpoint was saved with (RunState::settings), to rebuild the model from; and its parameters
// copied into `params` in place, checked as load_checkpoint checks them.
Metadata checkpoint_settings(const std::string& path);
void load_checkpoint_parameters(const std::string& path, const NamedTensors& params);
// A checkpoint of a model alone (one imported from elsewhere, say): the parameters and the
// settings, no optimizer state, so that it can be read as above but not resumed from.
void save_checkpoint_parameters(const std::string& path, const NamedTensors& params, const Metadata& settings);

}  // namespace fuselab
