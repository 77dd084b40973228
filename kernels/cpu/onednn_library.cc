// oneDNN, opened on first use (runtime/shared_library.h): every dnnl_* C function that dnnl.hpp's
// wrappers call in FuseLab's kernels jumps to the library's own, found on its first call. A new
// use of dnnl.hpp that calls a function not listed here fails to link, naming it: add its line.
#include <dnnl.h>

#include "runtime/shared_library.h"

namespace {

const fuselab::runtime::SharedLibrary& onednn() {
  static const fuselab::runtime::SharedLibrary library("oneDNN", {"libdnnl.so.2"},
                                                       "Debian's libdnnl2 (bash tools/setup.sh)");
  return library;
}

}  // namespace

FUSELAB_FORWARD(onednn, dnnl_convolution_backward_data_desc_init);
FUSELAB_FORWARD(onednn, dnnl_convolution_backward_weights_desc_init);
FUSELAB_FORWARD(onednn, dnnl_convolution_forward_desc_init);
FUSELAB_FORWARD(onednn, dnnl_engine_create);
FUSELAB_FORWARD(onednn, dnnl_engine_destroy);
FUSELAB_FORWARD(onednn, dnnl_get_effective_cpu_isa);
FUSELAB_FORWARD(onednn, dnnl_matmul_desc_init);
FUSELAB_FORWARD(onednn, dnnl_memory_create);
FUSELAB_FORWARD(onednn, dnnl_memory_desc_equal);
FUSELAB_FORWARD(onednn, dnnl_memory_desc_get_size);
FUSELAB_FORWARD(onednn, dnnl_memory_desc_init_by_strides);
FUSELAB_FORWARD(onednn, dnnl_memory_desc_init_by_tag);
FUSELAB_FORWARD(onednn, dnnl_memory_destroy);
FUSELAB_FORWARD(onednn, dnnl_post_ops_append_binary);
FUSELAB_FORWARD(onednn, dnnl_post_ops_append_eltwise);
FUSELAB_FORWARD(onednn, dnnl_post_ops_append_sum);
FUSELAB_FORWARD(onednn, dnnl_post_ops_create);
FUSELAB_FORWARD(onednn, dnnl_post_ops_destroy);
FUSELAB_FORWARD(onednn, dnnl_primitive_attr_create);
FUSELAB_FORWARD(onednn, dnnl_primitive_attr_destroy);
FUSELAB_FORWARD(onednn, dnnl_primitive_attr_set_output_scales);
FUSELAB_FORWARD(onednn, dnnl_primitive_attr_set_post_ops);
FUSELAB_FORWARD(onednn, dnnl_primitive_attr_set_scratchpad_mode);
FUSELAB_FORWARD(onednn, dnnl_primitive_create);
FUSELAB_FORWARD(onednn, dnnl_primitive_desc_destroy);
FUSELAB_FORWARD(onednn, dnnl_primitive_desc_iterator_create);
FUSELAB_FORWARD(onednn, dnnl_primitive_desc_iterator_destroy);
FUSELAB_FORWARD(onednn, dnnl_primitive_desc_iterator_fetch);
FUSELAB_FORWARD(onednn, dnnl_primitive_desc_query);
FUSELAB_FORWARD(onednn, dnnl_primitive_desc_query_md);
FUSELAB_FORWARD(onednn, dnnl_primitive_destroy);
FUSELAB_FORWARD(onednn, dnnl_primitive_execute);
FUSELAB_FORWARD(onednn, dnnl_reorder_primitive_desc_create);
FUSELAB_FORWARD(onednn, dnnl_stream_create);
FUSELAB_FORWARD(onednn, dnnl_stream_destroy);
FUSELAB_FORWARD(onednn, dnnl_stream_wait);
