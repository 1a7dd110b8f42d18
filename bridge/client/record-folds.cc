#include "record-folds.h"

#include "wire-ticks.h"

#include <algorithm>

namespace eidolon::bridge
{

wire::OpKind
WireKind(gpu::OpKind kind)
{
    switch (kind)
    {
    case gpu::OpKind::Kernel:
        return wire::OP_KERNEL;
    case gpu::OpKind::Gemm:
        return wire::OP_GEMM;
    case gpu::OpKind::Copy:
        return wire::OP_COPY;
    case gpu::OpKind::Memset:
        return wire::OP_MEMSET;
    case gpu::OpKind::EventRecord:
        return wire::OP_EVENT;
    case gpu::OpKind::GraphNode:
        return wire::OP_GRAPH;
    case gpu::OpKind::Communication:
        return wire::OP_COMMUNICATION;
    }
    return wire::OP_KERNEL;
}

bool
ExtendsSpan(const wire::Span& span, const gpu::DeviceOp& op)
{
    return op.start <= span.end_ns();
}

void
StartSpan(wire::Span& span, const gpu::DeviceOp& op)
{
    span.set_device(op.device);
    span.set_stream(op.streamId);
    span.set_kind(WireKind(op.kind));
    span.set_start_ns(op.start);
    span.set_end_ns(op.end);
    span.set_busy_ns(op.end - op.start);
    span.set_count(1);
    span.set_label(*op.label);
}

void
AddToSpan(wire::Span& span, const gpu::DeviceOp& op)
{
    span.set_end_ns(op.end);
    span.set_busy_ns(span.busy_ns() + (op.end - op.start));
    span.set_count(span.count() + 1);
}

bool
ExtendsChain(const wire::Chain& chain, const gpu::PendingOp& op)
{
    return op.deps.size() == 1 && op.deps[0] == chain.id() &&
           wire::WholeTicks(op.ready) <= chain.b_ns();
}

void
StartChain(wire::Chain& chain, uint64_t id, const gpu::PendingOp& op)
{
    chain.set_id(id);
    chain.set_device(op.device);
    chain.set_stream(op.streamId);
    for (uint64_t dep : op.deps)
    {
        chain.add_deps(dep);
    }
    const double ready = wire::WholeTicks(op.ready);
    const double duration = wire::WholeTicks(op.duration);
    chain.set_ready_ns(ready);
    chain.set_a_ns(duration);
    chain.set_b_ns(ready + duration);
    chain.set_busy_ns(duration);
    chain.set_count(1);
    chain.set_label(*op.label);
    chain.set_kind(WireKind(op.kind));
}

void
AddToChain(wire::Chain& chain, const gpu::PendingOp& op)
{
    // The chain f(s) = max(s + a, b) followed by (ready r, duration d) is
    // s -> max(f(s), r) + d = max(s + a + d, max(b, r) + d); ExtendsChain held, so r <= b.
    const double duration = wire::WholeTicks(op.duration);
    chain.set_a_ns(chain.a_ns() + duration);
    chain.set_b_ns(std::max(chain.b_ns(), wire::WholeTicks(op.ready)) + duration);
    chain.set_busy_ns(chain.busy_ns() + duration);
    chain.set_count(chain.count() + 1);
}

} // namespace eidolon::bridge
