// The bridge protocol version (bridge/proto/wire.proto says the same). Bump it on any change a
// peer of the previous version would misread; both sides refuse a mismatch with a clear error.
#pragma once

namespace eidolon::wire
{
constexpr unsigned kProtocolVersion = 1;
} // namespace eidolon::wire
