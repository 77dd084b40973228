// What the character-level GPT does with text around its training steps: cutting windows of
// tokens into the model's inputs and targets, scoring the validation text, and sampling new text.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "data/char_vocabulary.h"
#include "fuser/sequential.h"
#include "tensor/random.h"

namespace fuselab::examples {

// Windows of T + 1 tokens, int64 [rows, T + 1], as the model's inputs, their first T tokens
// [rows, T], and its targets, the T after each input, [rows T].
std::pair<Tensor, Tensor> inputs_and_targets(const Tensor& windows);

// The mean cross entropy of the model's next-token predictions for ids [rows, T] against next
// [rows T]: the model's own output when it ends in its loss (a CrossEntropy taking the targets as
// its extra input, as the llama preset, whose head and loss fuse), else cross_entropy of its logits.
Tensor next_token_loss(Sequential& model, const Tensor& ids, const Tensor& next, int64_t vocab);

// Whether the model ends in its loss (a CrossEntropy); then the model without its last op (sharing
// its ops, Sequential::slice) gives the logits.
bool ends_in_loss(const Sequential& model);

// The mean cross entropy over every token of `tokens` after the first, each predicted from the
// tokens before it in its window of at most `context` (the windows do not overlap).
double validation_loss(Sequential& model, const Tensor& tokens, int64_t context, int64_t vocab, Device device);

}  // namespace fuselab::examples
