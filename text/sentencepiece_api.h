// The C functions of libfuselab_sentencepiece.so (sentencepiece_api.cc): SentencePiece's BPE
// trainer and processor behind a C interface, so that FuseLab opens the library on first use
// (runtime/shared_library.h) rather than linking SentencePiece's C++ library into every program.
// Every function returns an error message (owned by the library, valid until the thread's next
// call), or null when it succeeded; buffers it hands out are freed with fuselab_spm_free_buffer.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// A BPE model of `vocab_size` pieces trained on `lines` (count of them, each `sizes[i]` bytes),
// serialized into *model (malloc'ed, *model_size bytes).
const char* fuselab_spm_train(const char* const* lines, const size_t* sizes, size_t count, int64_t vocab_size,
                              char** model, size_t* model_size);
// A processor of a serialized model (freed with fuselab_spm_free), and its number of pieces.
const char* fuselab_spm_load(const char* model, size_t model_size, void** processor, int64_t* pieces);
void fuselab_spm_free(void* processor);
// The ids of text (malloc'ed, *count of them), and the text of ids (malloc'ed, *size bytes).
const char* fuselab_spm_encode(const void* processor, const char* text, size_t size, int32_t** ids, size_t* count);
const char* fuselab_spm_decode(const void* processor, const int32_t* ids, size_t count, char** text, size_t* size);
void fuselab_spm_free_buffer(void* buffer);
}
