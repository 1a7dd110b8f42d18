/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * Test support shared by the eidolon module's TestSuites: the checks ns-3's test.h lacks, and
 * where the shipped topologies are.
 */
#ifndef EIDOLON_TEST_CHECKS_H
#define EIDOLON_TEST_CHECKS_H

#include "ns3/test.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

/**
 * Checks that actual and expected agree to a relative tolerance: |actual - expected| is at most
 * `fraction` of |actual| and of |expected| (Boost.Test's strong `tolerance(fraction)`, which these
 * suites were first written with). Each operand is evaluated once. Reports and goes on if not.
 */
#define EIDOLON_TEST_EXPECT_CLOSE(actual, expected, fraction, msg)                                 \
    do                                                                                             \
    {                                                                                              \
        const double eidolonActual = (actual);                                                     \
        const double eidolonExpected = (expected);                                                 \
        NS_TEST_EXPECT_MSG_EQ_TOL(                                                                 \
            eidolonActual, eidolonExpected,                                                        \
            (fraction)*std::min(std::abs(eidolonActual), std::abs(eidolonExpected)),               \
            #actual << " within a fraction " << #fraction << " of " << #expected << ". " << msg);  \
    } while (false)

/// Checks that `statement` throws `exception` (another exception propagates); reports if not.
#define EIDOLON_TEST_EXPECT_THROW(statement, exception)                                            \
    do                                                                                             \
    {                                                                                              \
        bool eidolonThrown = false;                                                                \
        try                                                                                        \
        {                                                                                          \
            statement;                                                                             \
        }                                                                                          \
        catch (const exception&)                                                                   \
        {                                                                                          \
            eidolonThrown = true;                                                                  \
        }                                                                                          \
        NS_TEST_EXPECT_MSG_EQ(eidolonThrown, true, #statement " throws " #exception);              \
    } while (false)

namespace eidolon::test
{
/// Prints a vector as {a, b, c}, so that NS_TEST_*_MSG_EQ can report vectors that differ.
template<typename T>
std::ostream&
operator<<(std::ostream& os, const std::vector<T>& v)
{
    os << '{';
    for (size_t i = 0; i < v.size(); ++i)
    {
        os << (i ? ", " : "") << v[i];
    }
    return os << '}';
}

/**
 * The repository's shipped topologies/ (GPU specs in its gpus/): $EIDOLON_TOPOLOGIES as the
 * module's ClusterHelper reads it, else the source tree this build came from. Inside an ns-3
 * tree the module is a copy without them: run the suites with EIDOLON_TOPOLOGIES set, or the
 * first file they open names this requirement in its "cannot open" error.
 */
inline std::string
ShippedTopologies()
{
    if (const char* env = std::getenv("EIDOLON_TOPOLOGIES"))
    {
        return env;
    }
#ifdef EIDOLON_SOURCE_DIR
    return std::string(EIDOLON_SOURCE_DIR) + "/topologies";
#else
    return "<set EIDOLON_TOPOLOGIES to eidolon's topologies directory>";
#endif
}
} // namespace eidolon::test

#endif
