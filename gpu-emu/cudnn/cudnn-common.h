// Shared by the libcudnn.so.9 sources: the handle, the backend descriptors and the work an
// execution plan prices. Nothing is computed; executions are priced and placed on the handle's
// stream like every other kernel (gpu-emu/README.md "cuDNN").
#pragma once

#include "../core/diagnostics.h"
#include "../core/emulator.h"
#include "../library-replies.h"

#include <cudnn.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#define EIDOLON_EXPORT extern "C" __attribute__((visibility("default")))

struct cudnnContext
{
    cudaStream_t stream = nullptr;
};

namespace eidolon::gpu::dnn
{

// One priced kernel of an execution: the model that prices it and that model's inputs.
struct WorkPart
{
    enum class Model
    {
        Attention,   // AttentionNs: flash-style fused attention
        Gemm,        // the GEMM model through the cost chain (a matmul)
        Convolution, // the GEMM model's plan of the implicit GEMM, with the tensors' real traffic
        Memory,      // memory bound: `bytes` moved over HBM (normalisation, pointwise)
    };
    Model model = Model::Memory;
    AttentionShape attention;
    GemmShape gemm;
    double bytes = 0; // Memory: bytes moved; Convolution: bytes of x, w and y
    std::string label;
};

// What executing a graph (or a legacy call) puts on the stream, kernel by kernel, and the device
// workspace the plan asks for.
struct GraphWork
{
    std::vector<WorkPart> parts;
    int64_t workspaceBytes = 0;
};

// Engines eidolon offers for every supported graph (CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT):
// engine 0 uses tensor cores (fp32 data runs as TF32, and carries CUDNN_NUMERICAL_NOTE_TENSOR_CORE
// so that PyTorch drops it when TF32 is disallowed), engine 1 runs fp32 at the FMA rate.
constexpr int64_t kEngineCount = 2;
constexpr int64_t kTensorCoreEngine = 0;

struct Descriptor;
using DescriptorPtr = std::shared_ptr<const Descriptor>;

// An attribute as the program set it: `count` elements of `type`. Descriptor-valued attributes
// hold snapshots of the descriptors (what they were when set), so the program may destroy or
// reuse its own afterwards, as cuDNN allows.
struct AttributeValue
{
    cudnnBackendAttributeType_t type = CUDNN_TYPE_INT64;
    int64_t count = 0;
    std::vector<unsigned char> bytes;
    std::vector<DescriptorPtr> descriptors;
};

constexpr uint64_t kDescriptorMagic = 0xe1d0'c0dd'0ba5'e001ull;

struct Descriptor
{
    uint64_t magic = kDescriptorMagic;
    cudnnBackendDescriptorType_t type = CUDNN_BACKEND_TENSOR_DESCRIPTOR;
    bool finalized = false;
    std::map<cudnnBackendAttributeName_t, AttributeValue> attributes;
    // Operation graph and what is derived from it (engine, engine config, plan): the work.
    std::shared_ptr<const GraphWork> work;
    int64_t engineIndex = kTensorCoreEngine;
};

// The descriptor behind a handle, or null when it is not one of ours.
Descriptor* DescriptorOf(cudnnBackendDescriptor_t handle);

// Bytes of one element of an attribute type (CUDNN_TYPE_*).
size_t ElementSize(cudnnBackendAttributeType_t type);

// Typed reads of a descriptor's attributes.
const AttributeValue* Find(const Descriptor& d, cudnnBackendAttributeName_t name);
std::vector<int64_t> Int64s(const Descriptor& d, cudnnBackendAttributeName_t name);
template<typename T>
std::optional<T>
Scalar(const Descriptor& d, cudnnBackendAttributeName_t name)
{
    const AttributeValue* v = Find(d, name);
    if (!v || v->count < 1 || v->bytes.size() < sizeof(T))
    {
        return std::nullopt;
    }
    T value;
    std::memcpy(&value, v->bytes.data(), sizeof(T));
    return value;
}
DescriptorPtr Child(const Descriptor& d, cudnnBackendAttributeName_t name);
std::vector<DescriptorPtr> Children(const Descriptor& d, cudnnBackendAttributeName_t name);

// Stores a value as if the program had set it (results of finalization).
void SetInt64(Descriptor& d, cudnnBackendAttributeName_t name, int64_t value);
void SetChildren(Descriptor& d, cudnnBackendAttributeName_t name,
                 const std::vector<DescriptorPtr>& children);

// A tensor descriptor's facts the pricing needs.
struct TensorFacts
{
    std::vector<int64_t> dims;
    cudnnDataType_t dataType = CUDNN_DATA_FLOAT;
    bool isVirtual = false;
    int64_t uid = 0;
    int64_t Elements() const;
    double Bytes() const;
};
std::optional<TensorFacts> TensorOf(const DescriptorPtr& tensor);

// The GEMM model's terms for cuDNN data types; fp32 data runs as TF32 on a tensor-core engine.
DType DTypeOf(cudnnDataType_t type);
int BytesOf(cudnnDataType_t type);
DType MathTypeOf(cudnnDataType_t data, bool tensorCores);

// Reads an operation graph's operations; the work that executing it costs, or the reason it is
// not supported (a cuDNN status and a description of the pattern).
struct Classified
{
    std::shared_ptr<GraphWork> work;
    cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
    std::string pattern;
};
Classified ClassifyGraph(const std::vector<DescriptorPtr>& ops, bool tensorCores);

// The price of a convolution: the GEMM model's plan for its implicit GEMM (tile, waves, split-K),
// with the operand traffic of the tensors themselves (`tensorBytes`: x, w and y once each) in place
// of the GEMM's, since an implicit GEMM never writes out the im2col matrix the GEMM's A would be.
Ns ConvolutionNs(const GemmShape& implicitGemm, double tensorBytes, const GpuSpec& spec,
                 Ns minKernelNs);

// Prices `work` and places its kernels on the handle's stream (charging one launch's host cost per
// kernel). False when the handle's stream is invalid.
bool Submit(cudnnHandle_t handle, const GraphWork& work);

// Implicit-GEMM shapes of a convolution; `x`, `w`, `y` in NCHW order of dims (cuDNN's order,
// whatever the strides), `groups` from the channel counts.
enum class ConvDirection
{
    Forward,
    BackwardData,
    BackwardFilter,
};
std::optional<GemmShape> ConvolutionGemm(ConvDirection direction, const TensorFacts& x,
                                         const TensorFacts& w, const TensorFacts& y,
                                         bool tensorCores);

std::string GemmLabel(const std::string& name, const GemmShape& shape);
// A convolution's kernel: its implicit GEMM and the bytes of its three tensors.
WorkPart ConvolutionPart(const std::string& name, const GemmShape& shape, const TensorFacts& x,
                         const TensorFacts& w, const TensorFacts& y);

// EIDOLON_CUDNN_TRACE=1: every operation graph and attribute read is written to stderr.
bool TraceEnabled();

const char* StatusName(cudnnStatus_t status);

// The answers of calls that write a result or create an object: a null pointer is
// CUDNN_STATUS_BAD_PARAM_NULL_POINTER.
using Reply = Replies<cudnnStatus_t, CUDNN_STATUS_SUCCESS, CUDNN_STATUS_BAD_PARAM_NULL_POINTER>;

// Warns once per API and reason, then returns `status`.
cudnnStatus_t Unsupported(const char* api, cudnnStatus_t status, const std::string& why = "");

} // namespace eidolon::gpu::dnn
