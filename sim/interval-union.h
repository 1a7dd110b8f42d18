// The time a set of intervals covers, kept small: intervals that end before the horizon can no
// longer meet a new one (new work starts at or after it) and fold into a total.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace eidolon::sim
{

class IntervalUnion
{
public:
    void Add(double start, double end);
    // Folds the intervals that end before `before` into the total.
    void Close(double before);
    double Covered() const;

private:
    // Disjoint, by start, from m_head on (work mostly arrives in time order: appends are O(1),
    // the rest a binary search).
    std::vector<std::pair<double, double>> m_open;
    size_t m_head = 0;
    double m_closed = 0;
};

} // namespace eidolon::sim
