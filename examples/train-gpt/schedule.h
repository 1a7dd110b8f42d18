// Pipeline schedules: the order in which one pipeline rank runs the forward and backward passes
// of its micro-batches through its model chunks. With one chunk per rank this is 1F1B (PipeDream-
// Flush); with vp chunks it is Megatron-LM's interleaved schedule (Narayanan et al. 2021). Pure
// host code.
#pragma once

#include <vector>

namespace traingpt
{

struct PipelineAction
{
    bool forward = true;
    int microBatch = 0;
    int chunk = 0; // virtual chunk on this rank, 0 .. vp - 1
};

std::vector<PipelineAction> PipelineSchedule(int pp, int vp, int ppRank, int microBatches);

} // namespace traingpt
