// The cuDNN backend (graph) API: descriptors with attributes, finalization, heuristics and
// execution, as cudnn-frontend drives it. Descriptors keep whatever the program sets; finalizing
// an operation graph reads its operations (graph-work.cc) into the work its execution costs, which
// the engine, engine config and execution plan derived from it carry; cudnnBackendExecute prices
// that work onto the handle's stream. A graph eidolon cannot price fails to finalize with
// CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, which cudnn-frontend and PyTorch report as an
// unsupported graph (never a crash).
#include "cudnn-common.h"

#include <algorithm>
#include <cstring>

using namespace eidolon::gpu;
using namespace eidolon::gpu::dnn;

namespace eidolon::gpu::dnn
{

Descriptor*
DescriptorOf(cudnnBackendDescriptor_t handle)
{
    auto* d = static_cast<Descriptor*>(handle);
    return d && d->magic == kDescriptorMagic ? d : nullptr;
}

size_t
ElementSize(cudnnBackendAttributeType_t type)
{
    switch (type)
    {
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
        return sizeof(void*);
    case CUDNN_TYPE_BOOLEAN:
        return sizeof(bool);
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE:
        return 8;
    case CUDNN_TYPE_CHAR:
        return 1;
    case CUDNN_TYPE_FRACTION:
        return sizeof(cudnnFraction_t);
    default:
        return 4; // float, int32 and every enum type
    }
}

const AttributeValue*
Find(const Descriptor& d, cudnnBackendAttributeName_t name)
{
    auto it = d.attributes.find(name);
    return it == d.attributes.end() ? nullptr : &it->second;
}

std::vector<int64_t>
Int64s(const Descriptor& d, cudnnBackendAttributeName_t name)
{
    const AttributeValue* v = Find(d, name);
    if (!v || v->type != CUDNN_TYPE_INT64)
    {
        return {};
    }
    std::vector<int64_t> values(v->count);
    std::memcpy(values.data(), v->bytes.data(), values.size() * sizeof(int64_t));
    return values;
}

DescriptorPtr
Child(const Descriptor& d, cudnnBackendAttributeName_t name)
{
    const AttributeValue* v = Find(d, name);
    return v && !v->descriptors.empty() ? v->descriptors.front() : nullptr;
}

std::vector<DescriptorPtr>
Children(const Descriptor& d, cudnnBackendAttributeName_t name)
{
    const AttributeValue* v = Find(d, name);
    return v ? v->descriptors : std::vector<DescriptorPtr>{};
}

void
SetInt64(Descriptor& d, cudnnBackendAttributeName_t name, int64_t value)
{
    AttributeValue& v = d.attributes[name];
    v.type = CUDNN_TYPE_INT64;
    v.count = 1;
    v.bytes.resize(sizeof(value));
    std::memcpy(v.bytes.data(), &value, sizeof(value));
    v.descriptors.clear();
}

void
SetChildren(Descriptor& d, cudnnBackendAttributeName_t name,
            const std::vector<DescriptorPtr>& children)
{
    AttributeValue& v = d.attributes[name];
    v.type = CUDNN_TYPE_BACKEND_DESCRIPTOR;
    v.count = int64_t(children.size());
    v.bytes.clear();
    v.descriptors = children;
}

} // namespace eidolon::gpu::dnn

namespace
{

void
SetEnum(Descriptor& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
        const std::vector<int32_t>& values)
{
    AttributeValue& v = d.attributes[name];
    v.type = type;
    v.count = int64_t(values.size());
    v.bytes.resize(values.size() * sizeof(int32_t));
    if (!values.empty())
    {
        std::memcpy(v.bytes.data(), values.data(), v.bytes.size());
    }
    v.descriptors.clear();
}

// An engine of `graph` (finalized, as heuristics hand them out) and a config of it.
std::shared_ptr<Descriptor>
MakeEngine(const DescriptorPtr& graph, int64_t index)
{
    auto engine = std::make_shared<Descriptor>();
    engine->type = CUDNN_BACKEND_ENGINE_DESCRIPTOR;
    engine->work = graph->work;
    engine->engineIndex = index;
    SetChildren(*engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, {graph});
    SetInt64(*engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, index);
    SetChildren(*engine, CUDNN_ATTR_ENGINE_KNOB_INFO, {});
    SetEnum(*engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
            index == kTensorCoreEngine ? std::vector<int32_t>{CUDNN_NUMERICAL_NOTE_TENSOR_CORE}
                                       : std::vector<int32_t>{});
    SetEnum(*engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, {});
    engine->finalized = true;
    return engine;
}

int64_t
WorkspaceOf(const Descriptor& d)
{
    return d.work ? d.work->workspaceBytes : 0;
}

void
CompleteEngineConfig(Descriptor& cfg, const DescriptorPtr& engine)
{
    cfg.work = engine->work;
    cfg.engineIndex = engine->engineIndex;
    SetChildren(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, {engine});
    if (!Find(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES))
    {
        SetChildren(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, {});
    }
    SetChildren(cfg, CUDNN_ATTR_ENGINECFG_INTERMEDIATE_INFO, {});
    SetInt64(cfg, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, WorkspaceOf(cfg));
    SetEnum(cfg, CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED, CUDNN_TYPE_INT32, {0});
    cfg.finalized = true;
}

// Finalizing an operation graph: its operations become the work an execution costs.
cudnnStatus_t
FinalizeOperationGraph(Descriptor& graph)
{
    std::vector<DescriptorPtr> ops = Children(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS);
    if (ops.empty())
    {
        return CUDNN_STATUS_BAD_PARAM;
    }
    // The tensor-core engine's view; an engine without tensor cores re-reads the ops at finalize.
    Classified c = ClassifyGraph(ops, true);
    if (!c.work)
    {
        return Unsupported("cudnnBackendFinalize(OPERATIONGRAPH)", c.status, c.pattern);
    }
    graph.work = c.work;
    SetInt64(graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, kEngineCount);
    graph.finalized = true;
    return CUDNN_STATUS_SUCCESS;
}

// The work of `graph` as engine `index` runs it.
std::shared_ptr<const GraphWork>
WorkForEngine(const DescriptorPtr& graph, int64_t index)
{
    if (index == kTensorCoreEngine)
    {
        return graph->work;
    }
    return ClassifyGraph(Children(*graph, CUDNN_ATTR_OPERATIONGRAPH_OPS), false).work;
}

cudnnStatus_t
FinalizeEngine(Descriptor& engine)
{
    DescriptorPtr graph = Child(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH);
    if (!graph || !graph->finalized || !graph->work)
    {
        return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
    }
    const int64_t index = Scalar<int64_t>(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX).value_or(0);
    if (index < 0 || index >= kEngineCount)
    {
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    auto finalized = MakeEngine(graph, index);
    finalized->work = WorkForEngine(graph, index);
    if (!finalized->work)
    {
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    finalized->attributes.insert(engine.attributes.begin(), engine.attributes.end());
    engine = *finalized;
    return CUDNN_STATUS_SUCCESS;
}

// Heuristics rank eidolon's engines: the tensor-core one first.
cudnnStatus_t
FinalizeHeuristics(Descriptor& heuristics)
{
    DescriptorPtr graph = Child(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
    if (!graph || !graph->finalized || !graph->work)
    {
        return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
    }
    std::vector<DescriptorPtr> configs;
    for (int64_t index = 0; index < kEngineCount; ++index)
    {
        auto engine = MakeEngine(graph, index);
        engine->work = WorkForEngine(graph, index);
        if (!engine->work)
        {
            continue;
        }
        auto cfg = std::make_shared<Descriptor>();
        cfg->type = CUDNN_BACKEND_ENGINECFG_DESCRIPTOR;
        CompleteEngineConfig(*cfg, engine);
        configs.push_back(cfg);
    }
    SetChildren(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS, configs);
    heuristics.finalized = true;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
FinalizeEngineConfig(Descriptor& cfg)
{
    DescriptorPtr engine = Child(cfg, CUDNN_ATTR_ENGINECFG_ENGINE);
    if (!engine || !engine->finalized || !engine->work)
    {
        return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
    }
    CompleteEngineConfig(cfg, engine);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
FinalizeExecutionPlan(Descriptor& plan)
{
    DescriptorPtr cfg = Child(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
    if (!cfg || !cfg->finalized || !cfg->work)
    {
        return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
    }
    plan.work = cfg->work;
    plan.engineIndex = cfg->engineIndex;
    SetInt64(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, WorkspaceOf(plan));
    SetChildren(plan, CUDNN_ATTR_EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS, {});
    // A JSON representation for cudnn-frontend's plan tags and caches.
    std::string json = "{\"engine\":\"eidolon-" + std::to_string(plan.engineIndex) + "\"}";
    AttributeValue& v = plan.attributes[CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION];
    v.type = CUDNN_TYPE_CHAR;
    v.bytes.assign(json.begin(), json.end());
    v.bytes.push_back('\0');
    v.count = int64_t(v.bytes.size());
    v.descriptors.clear();
    plan.finalized = true;
    return CUDNN_STATUS_SUCCESS;
}

} // namespace

EIDOLON_EXPORT cudnnStatus_t
cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t* out)
{
    if (!out)
    {
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    }
    auto* d = new Descriptor();
    d->type = type;
    *out = d;
    return CUDNN_STATUS_SUCCESS;
}

EIDOLON_EXPORT cudnnStatus_t
cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor)
{
    Descriptor* d = DescriptorOf(descriptor);
    if (!d)
    {
        return CUDNN_STATUS_BAD_PARAM;
    }
    d->magic = 0;
    delete d;
    return CUDNN_STATUS_SUCCESS;
}

// cuDNN 8's in-place initialisation of a descriptor the caller allocated: eidolon's descriptors
// are always created by cudnnBackendCreateDescriptor, so this only checks the handle.
EIDOLON_EXPORT cudnnStatus_t
cudnnBackendInitialize(cudnnBackendDescriptor_t descriptor)
{
    return DescriptorOf(descriptor) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
}

EIDOLON_EXPORT cudnnStatus_t
cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                         cudnnBackendAttributeType_t type, int64_t count, const void* elements)
{
    Descriptor* d = DescriptorOf(descriptor);
    if (!d || count < 0 || (count > 0 && !elements))
    {
        return CUDNN_STATUS_BAD_PARAM;
    }
    AttributeValue v;
    v.type = type;
    v.count = count;
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
    {
        auto* handles = static_cast<const cudnnBackendDescriptor_t*>(elements);
        for (int64_t i = 0; i < count; ++i)
        {
            const Descriptor* child = DescriptorOf(handles[i]);
            if (!child)
            {
                return CUDNN_STATUS_BAD_PARAM;
            }
            v.descriptors.push_back(std::make_shared<Descriptor>(*child));
        }
    }
    else
    {
        const auto* bytes = static_cast<const unsigned char*>(elements);
        v.bytes.assign(bytes, bytes + count * ElementSize(type));
    }
    d->attributes[name] = std::move(v);
    return CUDNN_STATUS_SUCCESS;
}

// Reads an attribute: up to `requested` elements into `elements` (descriptor-valued ones are
// copied into the caller's descriptors) and how many were written into `count`; asked for none,
// `count` is how many there are. An attribute never set reads as zero elements.
EIDOLON_EXPORT cudnnStatus_t
cudnnBackendGetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,
                         cudnnBackendAttributeType_t type, int64_t requested, int64_t* count,
                         void* elements)
{
    const Descriptor* d = DescriptorOf(descriptor);
    if (!d || requested < 0)
    {
        return CUDNN_STATUS_BAD_PARAM;
    }
    const AttributeValue* v = Find(*d, name);
    const int64_t available = v ? v->count : 0;
    if (TraceEnabled())
    {
        Warn("cudnnBackendGetAttribute(type " + std::to_string(int(d->type)) + ", attribute " +
             std::to_string(int(name)) + ", requested " + std::to_string(requested) +
             "): " + std::to_string(available) + (v ? "" : " (never set)"));
    }
    if (count)
    {
        *count = available;
    }
    if (!v || requested == 0 || !elements)
    {
        return CUDNN_STATUS_SUCCESS;
    }
    const int64_t n = std::min(requested, available);
    if (count)
    {
        *count = n; // what was written; the total only when asked with no room (cudnn-frontend
                    // resizes its result list to this)
    }
    if (v->type == CUDNN_TYPE_BACKEND_DESCRIPTOR || type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
    {
        if (type != v->type)
        {
            return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
        }
        auto* handles = static_cast<cudnnBackendDescriptor_t*>(elements);
        for (int64_t i = 0; i < n; ++i)
        {
            Descriptor* target = DescriptorOf(handles[i]);
            if (!target)
            {
                return CUDNN_STATUS_BAD_PARAM;
            }
            *target = *v->descriptors[i];
        }
        return CUDNN_STATUS_SUCCESS;
    }
    if (ElementSize(type) != ElementSize(v->type))
    {
        return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
    }
    std::memcpy(elements, v->bytes.data(), size_t(n) * ElementSize(type));
    return CUDNN_STATUS_SUCCESS;
}

EIDOLON_EXPORT cudnnStatus_t
cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor)
{
    Descriptor* d = DescriptorOf(descriptor);
    if (!d)
    {
        return CUDNN_STATUS_BAD_PARAM;
    }
    switch (d->type)
    {
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
        return FinalizeOperationGraph(*d);
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
        return FinalizeEngine(*d);
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        return FinalizeHeuristics(*d);
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
        return FinalizeEngineConfig(*d);
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        return FinalizeExecutionPlan(*d);
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
        if (Int64s(*d, CUDNN_ATTR_TENSOR_DIMENSIONS).empty() ||
            !Scalar<int32_t>(*d, CUDNN_ATTR_TENSOR_DATA_TYPE))
        {
            return CUDNN_STATUS_BAD_PARAM;
        }
        d->finalized = true;
        return CUDNN_STATUS_SUCCESS;
    default:
        // Operations, their parameter descriptors, variant packs, knob choices: kept as set.
        d->finalized = true;
        return CUDNN_STATUS_SUCCESS;
    }
}

// Runs a plan: its work is priced and placed on the handle's stream.
EIDOLON_EXPORT cudnnStatus_t
cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                    cudnnBackendDescriptor_t variantPack)
{
    const Descriptor* p = DescriptorOf(plan);
    const Descriptor* pack = DescriptorOf(variantPack);
    if (!handle || !p || !pack)
    {
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !p->finalized || !p->work)
    {
        return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
    }
    return Submit(handle, *p->work) ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED;
}
