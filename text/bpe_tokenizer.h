// BpeTokenizer: subword tokens from a byte-level BPE model that SentencePiece trains on a text
// (Sennrich et al., 2016; Kudo and Richardson, 2018). No normalization and no whitespace changes:
// decode(encode(text)) is text, byte for byte, for any bytes (UTF-8 or not), and a byte no merge
// covers is a piece of its own.
// The model is a few KB of serialized protobuf, saved with a checkpoint (model_bytes()).
//
// SentencePiece runs in libfuselab_sentencepiece.so (text/sentencepiece_api.h), which FuseLab
// opens on first use: a program that never tokenizes never loads it, and one without it (Debian's
// libsentencepiece0 missing) gets an Error saying what to install.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor.h"

namespace fuselab {

class BpeTokenizer {
 public:
  // Trains a model of `vocab_size` pieces on `text`, one sentence per line: at least one piece
  // for each distinct character of the text, the 256 bytes and the unknown piece.
  static BpeTokenizer train(std::string_view text, int64_t vocab_size);
  // The model of serialized bytes; `source` names them in errors (a file, a checkpoint).
  static BpeTokenizer from_model_bytes(const std::string& bytes, const std::string& source);

  int64_t size() const { return pieces_; }
  const std::string& model_bytes() const { return model_; }
  Tensor encode(std::string_view text) const;  // int64 [tokens]
  std::string decode(const std::vector<int64_t>& ids) const;

 private:
  BpeTokenizer(std::string model, std::shared_ptr<void> processor, int64_t pieces);

  std::string model_;
  std::shared_ptr<void> processor_;
  int64_t pieces_ = 0;
};

}  // namespace fuselab
