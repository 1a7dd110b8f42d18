#include "interval-union.h"

#include <algorithm>

namespace eidolon::sim
{

void
IntervalUnion::Add(double start, double end)
{
    if (!(end > start))
    {
        return;
    }
    if (m_open.size() == m_head || start > m_open.back().second)
    {
        m_open.emplace_back(start, end); // after everything: the common case
        return;
    }
    // Merge with every interval it touches: those from the first whose end reaches `start` to
    // the last whose start is within `end`.
    auto first = std::lower_bound(m_open.begin() + long(m_head), m_open.end(), start,
                                  [](const std::pair<double, double>& interval, double value)
                                  { return interval.second < value; });
    auto last = first;
    while (last != m_open.end() && last->first <= end)
    {
        start = std::min(start, last->first);
        end = std::max(end, last->second);
        ++last;
    }
    if (first == last)
    {
        m_open.insert(first, {start, end});
        return;
    }
    *first = {start, end};
    m_open.erase(first + 1, last);
}

void
IntervalUnion::Close(double before)
{
    while (m_head < m_open.size() && m_open[m_head].second < before)
    {
        m_closed += m_open[m_head].second - m_open[m_head].first;
        ++m_head;
    }
    if (m_head > 1024 && m_head * 2 > m_open.size())
    {
        m_open.erase(m_open.begin(), m_open.begin() + long(m_head));
        m_head = 0;
    }
}

double
IntervalUnion::Covered() const
{
    double total = m_closed;
    for (size_t i = m_head; i < m_open.size(); ++i)
    {
        total += m_open[i].second - m_open[i].first;
    }
    return total;
}

} // namespace eidolon::sim
