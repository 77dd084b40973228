#include "fuser/fusion_picture.h"

#include <cstdio>
#include <optional>
#include <vector>

#include "fuser/channel_plan.h"
#include "ops/fused_op.h"

namespace fuselab {

namespace {

// Text inside an HTML-like DOT label.
std::string dot_html(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string entry_type(const FusibleOp& op) {
  if (op.is_fused()) return static_cast<const FusedOp&>(op).type();
  return op.basic_ops()[0]->type();
}

// "384 B", "12.3 KB", "1.5 MB" (powers of 1000, as the allocator figures elsewhere are shown).
std::string bytes_text(size_t bytes) {
  char text[32];
  if (bytes < 1000) std::snprintf(text, sizeof(text), "%zu B", bytes);
  else if (bytes < 1000 * 1000) std::snprintf(text, sizeof(text), "%.1f KB", double(bytes) / 1e3);
  else std::snprintf(text, sizeof(text), "%.1f MB", double(bytes) / 1e6);
  return text;
}

// A context edge's label: what the context held after the last call, or the op's name before one.
std::string context_label(const BasicOp& op, const std::optional<SavedSummary>& saved) {
  if (!saved) return dot_html(op.name());
  if (saved->held.empty()) return "nothing saved";
  const std::string bytes = saved->bytes ? bytes_text(*saved->bytes) : "bytes not listed";
  return dot_html(saved->held) + "<br/>" + bytes;
}

// A Module between groups, and how many basic ops come before it.
struct PlacedModule {
  std::shared_ptr<Module> module;
  size_t basic_ops_before;
};

// The Modules and the fusible groups' ops, as the Sequential runs them.
struct Layout {
  std::vector<PlacedModule> modules;
  std::vector<std::vector<std::shared_ptr<BasicOp>>> groups;
};

Layout layout_of(const Sequential& seq) {
  Layout layout;
  size_t basic = 0;
  bool in_group = false;
  for (const SequentialEntry& entry : seq) {
    if (entry.module) {
      layout.modules.push_back({entry.module, basic});
      in_group = false;
      continue;
    }
    if (!in_group) layout.groups.emplace_back();
    layout.groups.back().push_back(entry.op);
    in_group = true;
    ++basic;
  }
  return layout;
}

std::string module_node(const std::string& id, const Module& module) {
  return "    " + id + " [label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\"><tr><td bgcolor=\"lightgrey\"><b>" +
         dot_html(module.type()) + "</b></td></tr><tr><td>" + dot_html(module.name()) + "</td></tr></table>>];\n";
}

// One node per entry, a table of its type and the basic ops it covers, where port b<i> is basic
// op i, and the Modules in place. The forward row puts the type above the ops, the backward row
// below them, so that the edges between the rows meet the op cells. HTML-like labels rather than
// records: dot keeps the invisible edges that hold a row in order only between non-record nodes.
void dot_cluster(std::string& dot, const std::string& name, const std::string& label, const std::string& prefix,
                 const IndexedOpList& list, const std::vector<std::shared_ptr<BasicOp>>& ops,
                 const std::vector<PlacedModule>& modules, bool type_on_top) {
  // Each row's title on its far side from the other row, clear of the edges between them.
  dot += "  subgraph cluster_" + name + " {\n    label=\"" + label + "\";\n    labelloc=\"" + (type_on_top ? "t" : "b") + "\";\n";
  std::vector<std::string> row;  // node ids in forward order
  size_t next_module = 0;
  auto place_modules_up_to = [&](size_t basic_ops_before) {
    for (; next_module < modules.size() && modules[next_module].basic_ops_before <= basic_ops_before; ++next_module) {
      row.push_back(prefix + "m" + std::to_string(next_module));
      dot += module_node(row.back(), *modules[next_module].module);
    }
  };
  for (size_t e = 0; e < list.ops.size(); ++e) {
    place_modules_up_to(list.covers[e].front());
    std::string cells;
    for (size_t i : list.covers[e]) cells += "<td port=\"b" + std::to_string(i) + "\">" + dot_html(ops[i]->name()) + "</td>";
    const std::string colour = list.ops[e]->is_fused() ? " bgcolor=\"lightblue\"" : "";
    const std::string type = "<tr><td colspan=\"" + std::to_string(list.covers[e].size()) + "\"" + colour + "><b>" +
                             dot_html(entry_type(*list.ops[e])) + "</b></td></tr>";
    const std::string rows = type_on_top ? type + "<tr>" + cells + "</tr>" : "<tr>" + cells + "</tr>" + type;
    row.push_back(prefix + std::to_string(e));
    dot += "    " + row.back() + " [label=<<table border=\"0\" cellborder=\"1\" cellspacing=\"0\">" + rows + "</table>>];\n";
  }
  place_modules_up_to(ops.size());
  // One row, in forward op order.
  dot += "    { rank=same;";
  for (const std::string& id : row) dot += " " + id + ";";
  dot += " }\n";
  for (size_t k = 0; k + 1 < row.size(); ++k) dot += "    " + row[k] + " -> " + row[k + 1] + " [style=invis];\n";
  dot += "  }\n";
}

// For each basic op, the entry of `list` that covers it.
std::vector<size_t> entry_of_op(const IndexedOpList& list, size_t num_ops) {
  std::vector<size_t> entry(num_ops);
  for (size_t e = 0; e < list.covers.size(); ++e)
    for (size_t i : list.covers[e]) entry[i] = e;
  return entry;
}

std::string small_node(const std::string& id, const std::string& text) {
  return "  " + id + " [label=<<i>" + dot_html(text) + "</i>>, shape=ellipse];\n";
}

// Channels, the call's extra inputs and its public extra outputs, group by group (a channel never
// crosses a Module), joined to the cells of the forward entries that produce and read them.
void dot_channels(std::string& dot, const Layout& layout, const std::vector<size_t>& forward_entry) {
  auto cell = [&](size_t op) { return "f" + std::to_string(forward_entry[op]) + ":b" + std::to_string(op); };
  size_t first_op = 0;
  int caller_inputs = 0, caller_outputs = 0;
  for (const auto& ops : layout.groups) {
    const ChannelPlan plan = ChannelPlan::build(ops);
    for (size_t i = 0; i < ops.size(); ++i) {
      const size_t op = first_op + i;
      for (size_t s = 0; s < plan.inputs[i].size(); ++s) {
        const ExtraInputSource& source = plan.inputs[i][s];
        if (source.caller_index < 0) continue;  // a channel, drawn from its producer
        const std::string id = "in" + std::to_string(caller_inputs + source.caller_index);
        dot += small_node(id, "extra input " + std::to_string(caller_inputs + source.caller_index));
        dot += "  " + id + " -> " + cell(op) + ":n [color=darkgreen];\n";
      }
      for (size_t s = 0; s < plan.consumers[i].size(); ++s) {
        if (!plan.consumers[i][s].empty()) {
          const std::string id = "ch" + std::to_string(op) + "_" + std::to_string(s);
          dot += small_node(id, "channel " + ops[i]->extra_output_channel(int(s)));
          // Drawn from the channel down to both ends (the producer's arrow reversed), so that the
          // channel sits above the row as an extra input does and the row keeps its order.
          dot += "  " + id + " -> " + cell(op) + ":n [color=darkgreen, dir=back];\n";
          for (size_t consumer : plan.consumers[i][s])
            dot += "  " + id + " -> " + cell(first_op + consumer) + ":n [color=darkgreen];\n";
        }
        const int caller = plan.output_caller_index[i][s];
        if (caller < 0) continue;
        const std::string id = "out" + std::to_string(caller_outputs + caller);
        dot += small_node(id, "extra output " + std::to_string(caller_outputs + caller));
        dot += "  " + cell(op) + ":n -> " + id + " [color=darkgreen];\n";
      }
    }
    first_op += ops.size();
    caller_inputs += plan.num_caller_inputs;
    caller_outputs += plan.num_caller_outputs;
  }
}

}  // namespace

std::string to_dot(Sequential& seq) {
  const auto lists = seq.fused_lists();
  const auto basic = seq.ops();
  const auto saved = seq.last_saved();
  const Layout layout = layout_of(seq);
  std::string dot = "digraph fusion {\n  node [shape=plaintext, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n";
  dot_cluster(dot, "forward", "forward list", "f", lists->forward, basic, layout.modules, /*type_on_top=*/true);
  dot_cluster(dot, "backward", "backward list", "b", lists->backward, basic, layout.modules, /*type_on_top=*/false);
  // Each basic op's context, filled by the forward entry, is read by the backward entry that
  // covers the op: the edge says what it carries between the passes.
  const std::vector<size_t> forward_entry = entry_of_op(lists->forward, basic.size());
  const std::vector<size_t> backward_entry = entry_of_op(lists->backward, basic.size());
  for (size_t i = 0; i < basic.size(); ++i) {
    const std::string port = ":b" + std::to_string(i);
    dot += "  f" + std::to_string(forward_entry[i]) + port + ":s -> b" + std::to_string(backward_entry[i]) + port +
           ":n [style=dashed, label=<" + context_label(*basic[i], i < saved.size() ? saved[i] : std::nullopt) + ">];\n";
  }
  for (size_t m = 0; m < layout.modules.size(); ++m) {
    const std::string id = std::to_string(m);
    dot += "  fm" + id + " -> bm" + id + " [style=dotted, label=<its own tape>];\n";
  }
  dot_channels(dot, layout, forward_entry);
  return dot + "}\n";
}

}  // namespace fuselab
