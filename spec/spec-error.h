/*
 * SPDX-License-Identifier: GPL-2.0-only
 *
 * eidolon spec library: the one error type of every description file (GPU specs, hosts,
 * topologies).
 */
#ifndef EIDOLON_SPEC_ERROR_H
#define EIDOLON_SPEC_ERROR_H

#include <stdexcept>

namespace eidolon
{
namespace spec
{

/**
 * A bad description: what and where (file, line, field) in one message. The ns-3 module's
 * TopologyError is this type, so that a bad figure in a GPU spec file and a bad link in a topology
 * reach the same handlers.
 */
class SpecError : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

} // namespace spec
} // namespace eidolon

#endif // EIDOLON_SPEC_ERROR_H
