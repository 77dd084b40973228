#include "kernels/cpu/onednn_conv.h"

#include <cstring>
#include <optional>
#include <tuple>
#include <vector>

#include "kernels/cpu/onednn_runtime.h"
#include "kernels/cpu/threading.h"

namespace fuselab::kernels::cpu {
namespace {
using dnnl::memory;
using namespace onednn;

enum class Pass { Forward, BackwardData, BackwardWeights };

// Everything a primitive is specialised for: two convolutions with equal keys share one.
struct Key {
  Pass pass;
  Conv2dGeometry g;
  bool bias;
  Activation act;
  int threads;

  auto tied() const {
    return std::tie(pass, g.batch, g.in_channels, g.height, g.width, g.out_channels, g.kernel_h, g.kernel_w, g.stride,
                    g.padding, bias, act, threads);
  }
  bool operator<(const Key& other) const { return tied() < other.tied(); }
};

// FuseLab's layouts: x [N, C, H, W], w [K, C, R, S], y [N, K, P, Q], b [K].
memory::desc plain_x(const Conv2dGeometry& g) {
  return {{g.batch, g.in_channels, g.height, g.width}, memory::data_type::f32, memory::format_tag::nchw};
}
memory::desc plain_w(const Conv2dGeometry& g) {
  return {{g.out_channels, g.in_channels, g.kernel_h, g.kernel_w}, memory::data_type::f32, memory::format_tag::oihw};
}
memory::desc plain_y(const Conv2dGeometry& g) {
  return {{g.batch, g.out_channels, g.out_h(), g.out_w()}, memory::data_type::f32, memory::format_tag::nchw};
}
memory::desc plain_b(const Conv2dGeometry& g) {
  return {{g.out_channels}, memory::data_type::f32, memory::format_tag::x};
}
// The same shape in whatever layout the primitive prefers.
memory::desc any(const memory::desc& plain) { return {plain.dims(), plain.data_type(), memory::format_tag::any}; }

// The forward description with free layouts; the backward passes take its primitive as a hint.
// The right padding is the left one: P = (H + 2 pad - R) / stride + 1 either way.
dnnl::convolution_forward::desc forward_desc(const Conv2dGeometry& g, bool bias) {
  const memory::dims strides{g.stride, g.stride}, padding{g.padding, g.padding};
  const auto kind = dnnl::prop_kind::forward_training;
  const auto algorithm = dnnl::algorithm::convolution_direct;
  return bias ? dnnl::convolution_forward::desc(kind, algorithm, any(plain_x(g)), any(plain_w(g)), plain_b(g),
                                                any(plain_y(g)), strides, padding, padding)
              : dnnl::convolution_forward::desc(kind, algorithm, any(plain_x(g)), any(plain_w(g)), any(plain_y(g)),
                                                strides, padding, padding);
}

// One argument of the primitive in FuseLab's layout and in the primitive's, with the reorder
// between them (into it for an input, out of it for an output); none where the two are equal.
struct Operand {
  int arg;
  bool output;
  memory::desc plain, chosen;
  std::optional<dnnl::reorder> reorder;
  memory::desc reorder_scratchpad;
};

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

Operand operand(int arg, bool output, const memory::desc& plain, const memory::desc& chosen) {
  Operand o{arg, output, plain, chosen, std::nullopt, {}};
  if (plain == chosen) return o;
  const memory::desc& from = output ? chosen : plain;
  const memory::desc& to = output ? plain : chosen;
  const dnnl::reorder::primitive_desc pd(cpu_engine(), from, cpu_engine(), to, user_scratchpad());
  o.reorder = dnnl::reorder(pd);
  o.reorder_scratchpad = pd.scratchpad_desc();
  return o;
}

struct Conv {
  dnnl::primitive primitive;
  std::vector<Operand> operands;
  memory::desc scratchpad;
};

bool is_reference(const char* implementation) { return std::strncmp(implementation, "ref", 3) == 0; }

std::optional<Conv> make_forward(const Key& key) {
  dnnl::primitive_attr attr = user_scratchpad();
  dnnl::post_ops ops;
  append_activation(ops, key.act);
  attr.set_post_ops(ops);
  const dnnl::convolution_forward::primitive_desc pd(forward_desc(key.g, key.bias), attr, cpu_engine());
  if (is_reference(pd.impl_info_str())) return std::nullopt;
  std::vector<Operand> operands{operand(DNNL_ARG_SRC, false, plain_x(key.g), pd.src_desc()),
                                operand(DNNL_ARG_WEIGHTS, false, plain_w(key.g), pd.weights_desc()),
                                operand(DNNL_ARG_DST, true, plain_y(key.g), pd.dst_desc())};
  if (key.bias) operands.push_back(operand(DNNL_ARG_BIAS, false, plain_b(key.g), pd.bias_desc()));
  return Conv{dnnl::convolution_forward(pd), operands, pd.scratchpad_desc()};
}

std::optional<Conv> make_backward_data(const Key& key) {
  const Conv2dGeometry& g = key.g;
  const dnnl::convolution_forward::primitive_desc hint(forward_desc(g, false), cpu_engine());
  const memory::dims strides{g.stride, g.stride}, padding{g.padding, g.padding};
  const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, any(plain_x(g)),
                                                   any(plain_w(g)), any(plain_y(g)), strides, padding, padding);
  const dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), cpu_engine(), hint);
  if (is_reference(pd.impl_info_str())) return std::nullopt;
  return Conv{dnnl::convolution_backward_data(pd),
              {operand(DNNL_ARG_DIFF_DST, false, plain_y(g), pd.diff_dst_desc()),
               operand(DNNL_ARG_WEIGHTS, false, plain_w(g), pd.weights_desc()),
               operand(DNNL_ARG_DIFF_SRC, true, plain_x(g), pd.diff_src_desc())},
              pd.scratchpad_desc()};
}

std::optional<Conv> make_backward_weights(const Key& key) {
  const Conv2dGeometry& g = key.g;
  const dnnl::convolution_forward::primitive_desc hint(forward_desc(g, false), cpu_engine());
  const memory::dims strides{g.stride, g.stride}, padding{g.padding, g.padding};
  const dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, any(plain_x(g)),
                                                      any(plain_w(g)), any(plain_y(g)), strides, padding, padding);
  const dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), cpu_engine(), hint);
  if (is_reference(pd.impl_info_str())) return std::nullopt;
  return Conv{dnnl::convolution_backward_weights(pd),
              {operand(DNNL_ARG_SRC, false, plain_x(g), pd.src_desc()),
               operand(DNNL_ARG_DIFF_DST, false, plain_y(g), pd.diff_dst_desc()),
               operand(DNNL_ARG_DIFF_WEIGHTS, true, plain_w(g), pd.diff_weights_desc())},
              pd.scratchpad_desc()};
}

// The primitive for a key, or none where oneDNN has only its reference implementation or none.
std::optional<Conv> make_conv(const Key& key) {
  try {
    switch (key.pass) {
      case Pass::Forward:
        return make_forward(key);
      case Pass::BackwardData:
        return make_backward_data(key);
      case Pass::BackwardWeights:
        return make_backward_weights(key);
    }
  } catch (const dnnl::error&) {
  }
  return std::nullopt;
}

memory scratch_memory(const memory::desc& desc, KernelContext& ctx) {
  return wrap(desc, ctx.scratch<char>(int64_t(desc.get_size())));
}

// Reorders a FuseLab buffer into the primitive's layout (an input) or out of it (an output).
void reorder(const Operand& o, const memory& plain, const memory& chosen, KernelContext& ctx) {
  const memory& from = o.output ? chosen : plain;
  const memory& to = o.output ? plain : chosen;
  run(*o.reorder,
      {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratch_memory(o.reorder_scratchpad, ctx)}});
}

// Runs the convolution for key on FuseLab's buffers (data[arg]): each input reordered into the
// primitive's layout in scratch, the primitive, each output reordered back.
bool run_conv(const Key& key, const std::unordered_map<int, const void*>& data, KernelContext& ctx) {
  if (key.g.batch == 0) return false;
  const OpenMpThreads use_threads(key.threads);
  const auto conv = cached<Key, std::optional<Conv>>(key, make_conv);
  if (!conv) return false;
  std::unordered_map<int, memory> args{{DNNL_ARG_SCRATCHPAD, scratch_memory(conv->scratchpad, ctx)}};
  for (const Operand& o : conv->operands) {
    const memory plain = wrap(o.plain, data.at(o.arg));
    if (!o.reorder) {
      args.emplace(o.arg, plain);
      continue;
    }
    const memory chosen = scratch_memory(o.chosen, ctx);
    if (!o.output) reorder(o, plain, chosen, ctx);
    args.emplace(o.arg, chosen);
  }
  run(conv->primitive, args);
  for (const Operand& o : conv->operands) {
    if (o.output && o.reorder) reorder(o, wrap(o.plain, data.at(o.arg)), args.at(o.arg), ctx);
  }
  return true;
}

// The multiply-adds of one pass (all three have the same count).
int64_t work(const Conv2dGeometry& g) { return g.batch * g.out_channels * g.out_plane() * g.patch(); }

Key key_for(Pass pass, const Conv2dGeometry& g, bool bias = false, Activation act = Activation::None) {
  return {pass, g, bias, act, work(g) < kThreadedWork ? 1 : num_threads()};
}

}  // namespace

bool onednn_conv_forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b, Activation act,
                         float* y, KernelContext& ctx) {
  std::unordered_map<int, const void*> data{{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}};
  if (b) data.emplace(DNNL_ARG_BIAS, b);
  return run_conv(key_for(Pass::Forward, g, b != nullptr, act), data, ctx);
}

bool onednn_conv_backward_data(const Conv2dGeometry& g, const float* w, const float* dy, float* dx,
                               KernelContext& ctx) {
  return run_conv(key_for(Pass::BackwardData, g),
                  {{DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_SRC, dx}}, ctx);
}

bool onednn_conv_backward_weights(const Conv2dGeometry& g, const float* x, const float* dy, float* dw,
                                  KernelContext& ctx) {
  return run_conv(key_for(Pass::BackwardWeights, g),
                  {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dw}}, ctx);
}

}  // namespace fuselab::kernels::cpu
