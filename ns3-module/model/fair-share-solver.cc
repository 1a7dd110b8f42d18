/*
 * SPDX-License-Identifier: GPL-2.0-only
 */
#include "fair-share-solver.h"

#include <algorithm>
#include <limits>

namespace ns3
{
namespace eidolon
{

void
FairShareProblem::Clear()
{
    capacity.clear();
    flowBegin.clear();
    useResource.clear();
    useWeight.clear();
    rateCap.clear();
    fixedRate.clear();
}

uint32_t
FairShareProblem::AddResource(double cap)
{
    capacity.push_back(cap);
    return uint32_t(capacity.size() - 1);
}

uint32_t
FairShareProblem::AddFlow(double cap, double fixed)
{
    if (flowBegin.empty())
    {
        flowBegin.push_back(0);
    }
    flowBegin.push_back(uint32_t(useResource.size()));
    rateCap.push_back(cap);
    fixedRate.push_back(fixed);
    return uint32_t(flowBegin.size() - 2);
}

void
FairShareProblem::Use(uint32_t resource, uint32_t weight)
{
    useResource.push_back(resource);
    useWeight.push_back(weight);
    flowBegin.back() = uint32_t(useResource.size());
}

namespace
{
/// Min-heap order: smaller share first, then lower resource index (determinism).
struct LevelAfter
{
    template<class L> bool operator()(const L& a, const L& b) const
    {
        return a.share > b.share || (a.share == b.share && a.resource > b.resource);
    }
};
} // namespace

uint32_t
FairShareSolver::Solve(const FairShareProblem& p, std::vector<double>& rates)
{
    const uint32_t nFlows = p.FlowCount();
    const uint32_t nRes = uint32_t(p.capacity.size());
    rates.assign(nFlows, 0.0);
    m_remaining.assign(nRes, 0.0);
    m_weight.assign(nRes, 0);
    m_version.assign(nRes, 0);
    m_frozen.assign(nFlows, 0);
    m_lastTouch.assign(nRes, 0);
    m_overcommitted = false;
    std::copy(p.capacity.begin(), p.capacity.end(), m_remaining.begin());

    // Reverse index resource -> flows (counting sort keeps flows in index order per resource).
    m_resBegin.assign(nRes + 1, 0);
    for (uint32_t k = 0; k < p.useResource.size(); ++k)
    {
        ++m_resBegin[p.useResource[k] + 1];
    }
    for (uint32_t r = 0; r < nRes; ++r)
    {
        m_resBegin[r + 1] += m_resBegin[r];
    }
    m_resFlows.resize(m_resBegin[nRes]);
    {
        std::vector<uint32_t>& fill = m_version; // reuse as insertion cursor, reset below
        std::copy(m_resBegin.begin(), m_resBegin.end() - 1, fill.begin());
        for (uint32_t f = 0; f < nFlows; ++f)
        {
            for (uint32_t k = p.flowBegin[f]; k < p.flowBegin[f + 1]; ++k)
            {
                m_resFlows[fill[p.useResource[k]]++] = f;
            }
        }
        std::fill(m_version.begin(), m_version.end(), 0);
    }

    // Reservations first: fixed-rate flows take their rate off every resource they cross.
    // A rate cap is a resource of the flow's own whose level never changes (the cap): the caps
    // are walked in (cap, flow) order beside the heap of the shared resources, and a cap level
    // goes after a shared level of the same share (as a private resource numbered after every
    // shared one would).
    m_caps.clear();
    for (uint32_t f = 0; f < nFlows; ++f)
    {
        if (p.fixedRate[f] >= 0)
        {
            m_frozen[f] = 1;
            rates[f] = p.fixedRate[f];
            for (uint32_t k = p.flowBegin[f]; k < p.flowBegin[f + 1]; ++k)
            {
                m_remaining[p.useResource[k]] -= p.useWeight[k] * rates[f];
            }
            continue;
        }
        for (uint32_t k = p.flowBegin[f]; k < p.flowBegin[f + 1]; ++k)
        {
            m_weight[p.useResource[k]] += p.useWeight[k];
        }
        if (p.rateCap[f] > 0)
        {
            m_caps.push_back({p.rateCap[f], f});
        }
    }
    std::sort(m_caps.begin(), m_caps.end(),
              [](const Cap& a, const Cap& b)
              { return a.cap < b.cap || (a.cap == b.cap && a.flow < b.flow); });

    m_heap.clear();
    for (uint32_t r = 0; r < nRes; ++r)
    {
        if (m_remaining[r] < 0)
        {
            m_overcommitted = true;
        }
        if (m_weight[r] > 0)
        {
            m_heap.push_back({std::max(0.0, m_remaining[r]) / double(m_weight[r]), r, 0});
        }
    }
    std::make_heap(m_heap.begin(), m_heap.end(), LevelAfter{});

    uint32_t levels = 0;
    size_t nextCap = 0;
    auto freeze = [&](uint32_t f, double share)
    {
        m_frozen[f] = 1;
        rates[f] = share;
        for (uint32_t k = p.flowBegin[f]; k < p.flowBegin[f + 1]; ++k)
        {
            const uint32_t r = p.useResource[k];
            m_remaining[r] -= double(p.useWeight[k]) * share;
            m_weight[r] -= p.useWeight[k];
            ++m_version[r];
            if (m_lastTouch[r] != levels)
            {
                m_lastTouch[r] = levels;
                m_touched.push_back(r);
            }
        }
    };
    while (true)
    {
        while (nextCap < m_caps.size() && m_frozen[m_caps[nextCap].flow])
        {
            ++nextCap; // frozen at a shared level below its cap
        }
        // The lowest live shared level (stale entries: the resource changed since its push).
        while (!m_heap.empty() && (m_heap.front().version != m_version[m_heap.front().resource] ||
                                   m_weight[m_heap.front().resource] == 0))
        {
            std::pop_heap(m_heap.begin(), m_heap.end(), LevelAfter{});
            m_heap.pop_back();
        }
        const bool capFirst = nextCap < m_caps.size() &&
                              (m_heap.empty() || m_caps[nextCap].cap < m_heap.front().share);
        if (!capFirst && m_heap.empty())
        {
            break;
        }
        ++levels;
        // Freeze every unfrozen flow of the bottleneck at the common level; every resource they
        // cross gets one new heap entry once all are frozen (its level after the last release,
        // which is the only entry that would not be stale).
        m_touched.clear();
        uint32_t bottleneck = nRes; // none: a cap
        if (capFirst)
        {
            const Cap cap = m_caps[nextCap++];
            freeze(cap.flow, cap.cap);
        }
        else
        {
            std::pop_heap(m_heap.begin(), m_heap.end(), LevelAfter{});
            const Level top = m_heap.back();
            m_heap.pop_back();
            bottleneck = top.resource;
            for (uint32_t i = m_resBegin[top.resource]; i < m_resBegin[top.resource + 1]; ++i)
            {
                const uint32_t f = m_resFlows[i];
                if (!m_frozen[f])
                {
                    freeze(f, top.share);
                }
            }
        }
        for (uint32_t r : m_touched)
        {
            if (m_weight[r] > 0 && r != bottleneck)
            {
                m_heap.push_back(
                    {std::max(0.0, m_remaining[r]) / double(m_weight[r]), r, m_version[r]});
                std::push_heap(m_heap.begin(), m_heap.end(), LevelAfter{});
            }
        }
    }
    // A flow that crosses no resource at all is limited by nothing but its cap.
    for (uint32_t f = 0; f < nFlows; ++f)
    {
        if (!m_frozen[f])
        {
            rates[f] = p.rateCap[f] > 0 ? p.rateCap[f] : std::numeric_limits<double>::infinity();
        }
    }
    return levels;
}

} // namespace eidolon
} // namespace ns3
