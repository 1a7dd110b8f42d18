// The transformer split across the parallel layout: this rank's pipeline chunks, their layers'
// parameters (flat per unit, sharded under FSDP), forward and backward of one micro-batch through
// one chunk with tensor, sequence and context parallelism, gradient reduction overlapped with
// backward, and the optimizer step.
#pragma once

#include "config.h"
#include "kernels.h"
#include "runtime.h"

#include <map>
#include <memory>
#include <vector>

namespace traingpt
{

struct Streams
{
    cudaStream_t compute = nullptr;  // kernels, GEMMs, tensor-parallel collectives
    cudaStream_t data = nullptr;     // FSDP gathers, gradient all-reduce / reduce-scatter
    cudaStream_t actSend = nullptr;  // pipeline: activations to the next stage
    cudaStream_t actRecv = nullptr;  // ... from the previous stage
    cudaStream_t gradSend = nullptr; // pipeline: gradients to the previous stage
    cudaStream_t gradRecv = nullptr; // ... from the next stage
    cudaStream_t cp = nullptr;       // ring attention's key/value exchange
};

// Parameters gathered and gradients reduced together: one transformer layer, the embedding, or
// the head (final norm and output projection).
struct Unit
{
    std::string name;
    int64_t numel = 0;      // this tensor-parallel rank's full count
    int64_t replicated = 0; // leading elements replicated over tp (norm weights and biases)
    // Optimizer elements held here: numel, or numel padded / data ranks when sharded (FSDP or
    // the distributed optimizer).
    int64_t shard = 0;
    bool sharded = false;          // FSDP: parameters, gradients and optimizer state sharded
    bool optimizerSharded = false; // distributed optimizer: master weights and moments sharded
    // bf16 parameters and fp32 gradients: the shard under FSDP; all of them, padded to whole
    // shards, under the distributed optimizer (its shard is `shard` elements from ShardStart);
    // otherwise all.
    bf16* param = nullptr;
    float *master = nullptr, *m = nullptr, *v = nullptr, *grad = nullptr;
    int64_t shardStart = 0;   // first element of this rank's shard (0 when nothing is sharded)
    bf16* gathered = nullptr; // FSDP: the all-gathered parameters while in use
    cudaEvent_t gatherDone = nullptr;
    float* fullGrad = nullptr; // FSDP: this micro-batch's unsharded gradients
    // Distributed optimizer: the updated shards are still to be gathered (due), or the gather
    // is issued and gatherDone marks its end (in flight).
    bool updateGatherDue = false, updateGatherInFlight = false;
};

struct LayerActs;

class Model
{
public:
    Model(const ModelShape& shape, const Options& options, const Layout& layout, Comms& comms,
          DeviceMemory& memory, Blas& blas, Streams& streams);
    ~Model();
    void Forward(int step, int microBatch, int virtualChunk);
    void Backward(int microBatch, int virtualChunk);
    // Waits for gradient reduction, clips by the global norm, AdamW; returns nothing to the host.
    void OptimizerStep(int step, float lr);
    // Distributed optimizer: gathers the parameters the last step updated (the next forward would
    // otherwise), so that every rank ends with the same model.
    void FinishParameterGathers();
    // Sum of the step's per-token losses over the world (all ranks call it), on the host.
    double StepLossSum();
    int64_t ParameterCount() const { return m_totalParams; }
    int64_t NonEmbeddingParameterCount() const { return m_nonEmbeddingParams; }

private:
    struct Chunk
    {
        int global = 0; // chunk index over the pipeline: virtual * pp + ppRank
        bool first = false, last = false;
        std::vector<int> units; // in forward order
    };
    struct MicroBatchState;
    // A run of this rank's tokens: from token tokenOffset, `len` tokens per sequence of the
    // micro-batch, at positions pos... of the whole sequence.
    struct SeqPart
    {
        int64_t tokenOffset = 0;
        int len = 0, pos = 0;
    };
    // Ring attention: one query half against one key/value half.
    struct CpBlock
    {
        int qHalf = 0, kvHalf = 0;
        bool causal = false;
    };
    std::vector<SeqPart> SeqParts() const;
    std::vector<CpBlock> CpBlocks(int step) const;

    void BuildUnits();
    Unit& NewUnit(const std::string& name, int64_t numel, int64_t replicated, float initStd,
                  float outStd, int64_t outOffset, int64_t outNumel);
    bf16* Params(int unit);
    void Gather(int unit);
    void Release(int unit);
    void GatherUpdatedParams(const Chunk& c);
    float* Grads(int unit);
    void ReduceGrads(int unit, bool lastMicroBatch);

    bf16* TpGather(const bf16* shard, int cols, cudaStream_t s);
    bf16* TpReduce(bf16* partial, int cols);
    // fp8: the GEMMs in fp8 (the transformer layers' under --precision fp8).
    void LinearFwd(const bf16* x, const bf16* w, bf16* y, int m, int n, int k, bool fp8);
    void LinearBwd(const bf16* dy, const bf16* x, const bf16* w, bf16* dx, float* dw, int m, int n,
                   int k, bool fp8);
    void LinearBwdFp8(const bf16* dy, const bf16* x, const bf16* w, bf16* dx, float* dw, int m,
                      int n, int k);
    void* Fp8Copy(const bf16* in, int rows, int cols, Fp8Format format, bool transpose,
                  const char* what);

    bf16* EmbeddingForward(int unit, const int* tokens);
    void EmbeddingBackward(int unit, const int* tokens, bf16* dx);
    bf16* HeadForwardBackward(int unit, bf16* x, const int* targets);
    bf16* LayerForwardImpl(int unit, LayerActs& a); // returns the layer's output
    ActKind ActKindOf() const;
    bf16* LayerBackward(int unit, LayerActs& a, bf16* dy);
    void AttentionForward(LayerActs& a);
    void AttentionBackward(LayerActs& a, const bf16* dout, float* dq, float* dk, float* dv);
    void FreeLayerActs(LayerActs& a, bool keepInput);

    template<typename T> T* New(size_t count, const char* what)
    {
        return m_mem.New<T>(count, m_s.compute, what);
    }
    void Drop(void* p) { m_mem.Free(p, m_s.compute); }
    void WaitFor(cudaStream_t waiter, cudaStream_t signaler);

    ModelShape m_shape;
    Options m_opt;
    Layout m_l;
    Comms& m_comms;
    DeviceMemory& m_mem;
    Blas& m_blas;
    Streams& m_s;
    std::map<cudaStream_t, cudaEvent_t> m_streamEvents;

    // Per-rank sizes: tokens of a micro-batch in attention (tf) and in the residual stream (tr).
    int m_tf = 0, m_tr = 0, m_hq = 0, m_hkv = 0, m_hd = 0, m_ffn = 0, m_vocab = 0, m_vocabLo = 0;
    int m_qkvCols = 0, m_fc1Cols = 0;
    bool m_fp8 = false; // the layers' GEMMs in fp8
    // Offsets of a layer's tensors inside its unit.
    int64_t m_offNorm1 = 0, m_offNorm1b = 0, m_offNorm2 = 0, m_offNorm2b = 0, m_offQkv = 0,
            m_offWo = 0, m_offW1 = 0, m_offW2 = 0;

    std::vector<Unit> m_units;
    std::vector<Chunk> m_chunks;
    std::map<std::pair<int, int>, std::unique_ptr<MicroBatchState>> m_live;
    float* m_lossSum = nullptr;
    float* m_sumsq = nullptr;
    int64_t m_totalParams = 0, m_nonEmbeddingParams = 0;
    int m_microBatchesDone = 0;
    // Buffers handed to pipeline sends. A send completes only when the peer receives, so reusing
    // the buffer would make this rank's compute wait for the peer's progress, which can close a
    // cycle between the stages: they go back to the allocator after the step.
    std::vector<void*> m_sent;
    std::map<int, int> m_forwardsDone, m_backwardsDone; // per virtual chunk, this step
};

} // namespace traingpt
