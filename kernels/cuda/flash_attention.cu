// The CUDA bodies of kernels/flash_attention.h.
#include "kernels/flash_attention.h"

#include <stdexcept>

namespace fuselab::kernels {

template <class T>
void FlashAttentionForward<T>::cuda(KernelContext&) const {
  throw std::runtime_error("flash_attention_forward_kernel: not written yet");
}

template <class T>
void FlashAttentionBackward<T>::cuda(KernelContext&) const {
  throw std::runtime_error("flash_attention_backward_kernel: not written yet");
}

FUSELAB_FLASH_ATTENTION_KERNELS(FUSELAB_INSTANTIATE_CUDA)

}  // namespace fuselab::kernels
