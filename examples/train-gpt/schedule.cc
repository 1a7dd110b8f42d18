// Pipeline schedules (schedule.h).
#include "schedule.h"

#include <algorithm>

namespace traingpt
{

std::vector<PipelineAction>
PipelineSchedule(int pp, int vp, int ppRank, int microBatches)
{
    std::vector<PipelineAction> order;
    if (pp == 1)
    {
        // Gradient accumulation: each micro-batch's backward right after its forward, so that
        // only one micro-batch's activations are alive.
        for (int mb = 0; mb < microBatches; mb++)
        {
            order.push_back({true, mb, 0});
            order.push_back({false, mb, 0});
        }
        return order;
    }
    // Virtual micro-batch k runs chunk (k / pp) % vp of micro-batch (k / (pp vp)) pp + k % pp;
    // backward walks the chunks in reverse. Warm-up: the forwards that fill the pipeline before
    // the first backward reaches this rank.
    const int total = microBatches * vp;
    auto at = [&](int k, bool forward)
    {
        const int group = k % (pp * vp);
        int chunk = group / pp;
        if (!forward)
            chunk = vp - 1 - chunk;
        return PipelineAction{forward, (k / (pp * vp)) * pp + k % pp, chunk};
    };
    const int warmup = std::min(total, (pp - ppRank - 1) * (vp > 1 ? 2 : 1) + (vp - 1) * pp);
    for (int k = 0; k < warmup; k++)
        order.push_back(at(k, true));
    for (int k = 0; k < total - warmup; k++)
    {
        order.push_back(at(k + warmup, true));
        order.push_back(at(k, false));
    }
    for (int k = total - warmup; k < total; k++)
        order.push_back(at(k, false));
    return order;
}

} // namespace traingpt
