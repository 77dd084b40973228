#include "ops/fusion_trace.h"

namespace fuselab {
namespace {
thread_local FusionStepLog* current_step = nullptr;
}  // namespace

FusionStepLog* current_fusion_step() { return current_step; }

FusionStepScope::FusionStepScope(FusionStepLog* step) : previous_(current_step) { current_step = step; }
FusionStepScope::~FusionStepScope() { current_step = previous_; }

}  // namespace fuselab
