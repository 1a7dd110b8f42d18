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
constexpr uint32_t kNotInHeap = ~uint32_t(0);
} // namespace

bool
FairShareSolver::Before(uint32_t a, uint32_t b) const
{
    // Lower level first, then the lower resource index (determinism).
    return m_level[a] < m_level[b] || (m_level[a] == m_level[b] && a < b);
}

void
FairShareSolver::Place(uint32_t i, uint32_t r)
{
    m_heap[i] = r;
    m_heapPos[r] = i;
}

uint32_t
FairShareSolver::SiftUp(uint32_t i)
{
    const uint32_t r = m_heap[i];
    while (i > 0 && Before(r, m_heap[(i - 1) / 2]))
    {
        Place(i, m_heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    Place(i, r);
    return i;
}

void
FairShareSolver::SiftDown(uint32_t i)
{
    const uint32_t r = m_heap[i];
    const uint32_t n = uint32_t(m_heap.size());
    while (true)
    {
        uint32_t child = 2 * i + 1;
        if (child >= n)
        {
            break;
        }
        if (child + 1 < n && Before(m_heap[child + 1], m_heap[child]))
        {
            ++child;
        }
        if (!Before(m_heap[child], r))
        {
            break;
        }
        Place(i, m_heap[child]);
        i = child;
    }
    Place(i, r);
}

void
FairShareSolver::Fix(uint32_t i)
{
    SiftDown(SiftUp(i));
}

void
FairShareSolver::Remove(uint32_t r)
{
    const uint32_t i = m_heapPos[r];
    const uint32_t last = m_heap.back();
    m_heap.pop_back();
    m_heapPos[r] = kNotInHeap;
    if (last != r)
    {
        Place(i, last);
        Fix(i);
    }
}

uint32_t
FairShareSolver::Solve(const FairShareProblem& p, std::vector<double>& rates)
{
    const uint32_t nFlows = p.FlowCount();
    const uint32_t nRes = uint32_t(p.capacity.size());
    rates.assign(nFlows, 0.0);
    m_remaining.assign(nRes, 0.0);
    m_weight.assign(nRes, 0);
    m_frozen.assign(nFlows, 0);
    m_lastTouch.assign(nRes, 0);
    m_levelWeight.assign(nRes, 0);
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
        std::vector<uint32_t>& fill = m_heapPos; // the insertion cursor; the heap's below
        fill.assign(m_resBegin.begin(), m_resBegin.end() - 1);
        for (uint32_t f = 0; f < nFlows; ++f)
        {
            for (uint32_t k = p.flowBegin[f]; k < p.flowBegin[f + 1]; ++k)
            {
                m_resFlows[fill[p.useResource[k]]++] = f;
            }
        }
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

    // The shared resources' levels (remaining capacity over unfrozen weight) in an indexed
    // min-heap: a level only rises as flows freeze, so a resource's entry moves in place and the
    // heap never holds more than one entry a resource.
    m_level.assign(nRes, 0.0);
    m_heapPos.assign(nRes, kNotInHeap);
    m_heap.clear();
    for (uint32_t r = 0; r < nRes; ++r)
    {
        if (m_remaining[r] < 0)
        {
            m_overcommitted = true;
        }
        if (m_weight[r] > 0)
        {
            m_level[r] = std::max(0.0, m_remaining[r]) / double(m_weight[r]);
            m_heapPos[r] = uint32_t(m_heap.size());
            m_heap.push_back(r);
        }
    }
    for (uint32_t i = uint32_t(m_heap.size()) / 2; i-- > 0;)
    {
        SiftDown(i); // bottom-up: every subtree below i is a heap already
    }

    // A level freezes its flows at one share and takes share x (their summed integer weight) off
    // each resource they cross, once: the result is then the same in whatever order the flows
    // were given (a subtraction per flow rounded differently with the order), so a caller need not
    // sort them. Flows capped at the same rate are one level for the same reason.
    uint32_t levels = 0;
    size_t nextCap = 0;
    auto freeze = [&](uint32_t f, double share)
    {
        m_frozen[f] = 1;
        rates[f] = share;
        for (uint32_t k = p.flowBegin[f]; k < p.flowBegin[f + 1]; ++k)
        {
            const uint32_t r = p.useResource[k];
            if (m_lastTouch[r] != levels)
            {
                m_lastTouch[r] = levels;
                m_levelWeight[r] = 0;
                m_touched.push_back(r);
            }
            m_levelWeight[r] += p.useWeight[k];
        }
    };
    while (true)
    {
        while (nextCap < m_caps.size() && m_frozen[m_caps[nextCap].flow])
        {
            ++nextCap; // frozen at a shared level below its cap
        }
        const bool capFirst = nextCap < m_caps.size() &&
                              (m_heap.empty() || m_caps[nextCap].cap < m_level[m_heap.front()]);
        if (!capFirst && m_heap.empty())
        {
            break;
        }
        ++levels;
        // Freeze every unfrozen flow of the bottleneck (or of the cap) at the common level; then
        // every resource they cross moves to its level after the release.
        m_touched.clear();
        double share;
        if (capFirst)
        {
            share = m_caps[nextCap].cap;
            for (; nextCap < m_caps.size() && m_caps[nextCap].cap == share; ++nextCap)
            {
                if (!m_frozen[m_caps[nextCap].flow])
                {
                    freeze(m_caps[nextCap].flow, share);
                }
            }
        }
        else
        {
            const uint32_t bottleneck = m_heap.front();
            share = m_level[bottleneck];
            for (uint32_t i = m_resBegin[bottleneck]; i < m_resBegin[bottleneck + 1]; ++i)
            {
                const uint32_t f = m_resFlows[i];
                if (!m_frozen[f])
                {
                    freeze(f, share);
                }
            }
        }
        for (uint32_t r : m_touched)
        {
            m_remaining[r] -= double(m_levelWeight[r]) * share;
            m_weight[r] -= m_levelWeight[r];
            if (m_weight[r] == 0)
            {
                Remove(r); // the bottleneck itself, and any resource left without shared flows
            }
            else
            {
                m_level[r] = std::max(0.0, m_remaining[r]) / double(m_weight[r]);
                Fix(m_heapPos[r]);
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
