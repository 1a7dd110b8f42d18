// How consecutive device ops of a stream become one record (bridge/README.md "Records in a
// batch"). An op joins the stream's open record only where it starts the moment the record's last
// op ends, whatever start the simulator gives the record: a record is then busy on one interval,
// [end - busy, end], and the covered and idle time the run reports are exact however the batches
// were cut (the background thread cuts them at moments of this machine's clock, so a record that
// spanned an idle gap put the gap in a different place from run to run).
#pragma once

#include "device-op-sink.h"
#include "wire.pb.h"

#include <cstdint>

namespace eidolon::bridge
{

wire::OpKind WireKind(gpu::OpKind kind);

// A span holds ops with known times: `op` joins it when it starts no later than the span ends.
bool ExtendsSpan(const wire::Span& span, const gpu::DeviceOp& op);
void StartSpan(wire::Span& span, const gpu::DeviceOp& op);
void AddToSpan(wire::Span& span, const gpu::DeviceOp& op);

// A chain ends at max(start + a, b) for start = max(ready, ends of its deps). `op` joins it when
// it waits on the chain alone and is ready by b, the chain's end from its earliest start: then it
// is ready by the chain's end for every start, and a chain always has b = ready + a (no gap).
bool ExtendsChain(const wire::Chain& chain, const gpu::PendingOp& op);
void StartChain(wire::Chain& chain, uint64_t id, const gpu::PendingOp& op);
void AddToChain(wire::Chain& chain, const gpu::PendingOp& op);

} // namespace eidolon::bridge
