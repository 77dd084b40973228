// A picture of a Sequential's fusion, as Graphviz DOT text: the fused forward and backward lists,
// each basic op's context carried from the one to the other, the channels between ops and the
// Modules between groups. Render with `dot -Tsvg`; tools/fusion_picture.cc draws the docs' figures.
#pragma once

#include <string>

#include "fuser/sequential.h"

namespace fuselab {

// A "forward list" cluster and a "backward list" cluster, both in forward op order, one node per
// list entry (its type over the basic ops it covers) and per Module, in place. A dashed edge goes
// from each basic op in the forward list to the backward entry that reads its context, labelled
// with what the context holds and its bytes for the last call recorded for backward while its
// output is held and backward has not run (Sequential::last_saved), else with the op's name. Channels, the call's extra inputs
// and its public extra outputs are nodes of their own, joined to the ops that use them.
std::string to_dot(Sequential& seq);

}  // namespace fuselab
