// An MPI + NCCL program as CUDA-aware MPI jobs are written (nccl-tests with MPI=1 does the same):
// each process selects its GPU from its launcher's local rank *before* MPI_Init (Open MPI's
// OMPI_COMM_WORLD_LOCAL_RANK under mpirun, Slurm's SLURM_LOCALID under srun), so Open MPI and the
// network libraries it loads (PSM's timebase calibration) start on a thread whose clocks are
// virtual; rank 0's ncclUniqueId reaches the others by MPI_Bcast; an NCCL all-reduce of the
// host-written values rank + 1 gives every rank 1 + 2 + ... + size, which an MPI_Allreduce then
// confirms across the job. Prints "rank R of N: nccl sum S, mpi ok" and exits 0 when right.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call, ok)                                                                            \
    do                                                                                             \
    {                                                                                              \
        auto r_ = (call);                                                                          \
        if (r_ != (ok))                                                                            \
        {                                                                                          \
            std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, int(r_)); \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                          \
        }                                                                                          \
    } while (0)
#define CUDA(call) CHECK(call, cudaSuccess)
#define NCCL(call) CHECK(call, ncclSuccess)

int
main(int argc, char** argv)
{
    // srun starts the ranks itself (--mpi=pmix): Open MPI's variables appear only in MPI_Init, and
    // without SLURM_LOCALID every rank would select device 0.
    const char* localRank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (!localRank)
    {
        localRank = std::getenv("SLURM_LOCALID");
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    {
        std::fprintf(stderr, "no GPU\n");
        return 2;
    }
    if (cudaSetDevice((localRank ? std::atoi(localRank) : 0) % devices) != cudaSuccess)
    {
        std::fprintf(stderr, "cudaSetDevice failed\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank = 0;
    int size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    ncclUniqueId id;
    if (rank == 0)
    {
        NCCL(ncclGetUniqueId(&id));
    }
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t comm;
    NCCL(ncclCommInitRank(&comm, size, id, rank));
    cudaStream_t stream;
    CUDA(cudaStreamCreate(&stream));
    const size_t count = 256;
    std::vector<float> host(count, float(rank + 1));
    float* buffer = nullptr;
    CUDA(cudaMalloc(&buffer, count * sizeof(float)));
    CUDA(cudaMemcpy(buffer, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    NCCL(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclSum, comm, stream));
    CUDA(cudaStreamSynchronize(stream));
    CUDA(cudaMemcpy(host.data(), buffer, count * sizeof(float), cudaMemcpyDeviceToHost));
    const float expected = float(size) * float(size + 1) / 2;
    int right = 1;
    for (float value : host)
    {
        right = right && value == expected;
    }
    int allRight = 0;
    MPI_Allreduce(&right, &allRight, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    std::printf("rank %d of %d: nccl sum %g, mpi %s\n", rank, size, double(host[0]),
                allRight ? "ok" : "wrong");
    std::fflush(stdout);
    NCCL(ncclCommDestroy(comm));
    CUDA(cudaFree(buffer));
    MPI_Finalize();
    return allRight ? 0 : 1;
}
