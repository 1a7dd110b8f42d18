// collective-bench: nccl-tests' performance programs (all_reduce_perf, all_gather_perf, ...) in one
// CUDA/NCCL source that needs no MPI. It runs unmodified on real GPUs with NVIDIA's NCCL and, under
// eidolon, on simulated ones. Command line, output table, size conventions and bus-bandwidth
// factors follow NVIDIA/nccl-tests; what differs (rank discovery, ncclUniqueId exchange, timing) is
// described in README.md beside this file.
//
// Built twice from this one source: the whole program, and (with COLLECTIVE_BENCH_BUILTIN defined)
// a one-line object that fixes the collective, linked into the per-collective binaries
// (all_reduce_perf, ...).

#ifdef COLLECTIVE_BENCH_BUILTIN
// ------------------------------------------------------------------ per-binary default collective
#define CB_STR2(x) #x
#define CB_STR(x) CB_STR2(x)
extern "C"
{
    extern const char* const collective_bench_builtin;
}
const char* const collective_bench_builtin = CB_STR(COLLECTIVE_BENCH_BUILTIN);
#else

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <nccl.h>

// fp8 (nccl-tests' f8e4m3 and f8e5m2): in nccl.h from 2.24, and CUDA's types from 11.8.
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0) && CUDART_VERSION >= 11080
#define EIDOLON_BENCH_HAVE_FP8 1
#else
#define EIDOLON_BENCH_HAVE_FP8 0
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <link.h>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <getopt.h>
#include <libgen.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define COLLECTIVE_BENCH_VERSION "1.0"

// Set by the per-collective binaries (see the top of this file); absent in the generic one.
extern "C"
{
    extern const char* const collective_bench_builtin __attribute__((weak));
}

namespace
{

// ------------------------------------------------------------------ messages and failure

int g_proc = 0;   // process index (RANK and friends)
int g_nprocs = 1; // process count (WORLD_SIZE and friends)
// The ncclUniqueId file this process wrote and has not removed yet (removed on a failure too).
char g_idFile[4096] = {};

[[noreturn]] void
Die(const char* fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (g_nprocs > 1)
        std::fprintf(stderr, "collective-bench: process %d: %s\n", g_proc, text);
    else
        std::fprintf(stderr, "collective-bench: %s\n", text);
    std::fflush(stdout);
    std::fflush(stderr);
    if (g_idFile[0])
        std::remove(g_idFile);
    std::_Exit(EXIT_FAILURE);
}

void
Note(const char* fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (g_nprocs > 1)
        std::fprintf(stderr, "collective-bench: process %d: %s\n", g_proc, text);
    else
        std::fprintf(stderr, "collective-bench: %s\n", text);
}

#define CUDACHECK(call)                                                                            \
    do                                                                                             \
    {                                                                                              \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            Die("%s:%d: CUDA failure in %s: %s (%s)", __FILE__, __LINE__, #call,                   \
                cudaGetErrorName(e_), cudaGetErrorString(e_));                                     \
    } while (0)

const char*
LastNcclError()
{
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
    const char* text = ncclGetLastError(nullptr);
    return text ? text : "";
#else
    return "";
#endif
}

#define NCCLCHECK(call)                                                                            \
    do                                                                                             \
    {                                                                                              \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess && r_ != ncclInProgress)                                             \
            Die("%s:%d: NCCL failure in %s: %s%s%s", __FILE__, __LINE__, #call,                    \
                ncclGetErrorString(r_), *LastNcclError() ? ": " : "", LastNcclError());            \
    } while (0)

// ------------------------------------------------------------------ collectives, types, ops

enum class Coll
{
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AllToAll,
    SendRecv,
};

struct CollDesc
{
    Coll coll;
    const char* name;     // canonical name (-C value)
    const char* perfName; // the nccl-tests program it stands for
    bool hasOp;           // reduction: the redop column names the op
    bool hasRoot;         // rooted: the root column is meaningful
};

const CollDesc kColls[] = {
    {Coll::AllReduce, "all_reduce", "all_reduce_perf", true, false},
    {Coll::AllGather, "all_gather", "all_gather_perf", false, false},
    {Coll::ReduceScatter, "reduce_scatter", "reduce_scatter_perf", true, false},
    {Coll::Broadcast, "broadcast", "broadcast_perf", false, true},
    {Coll::Reduce, "reduce", "reduce_perf", true, true},
    {Coll::AllToAll, "alltoall", "alltoall_perf", false, false},
    {Coll::SendRecv, "sendrecv", "sendrecv_perf", false, false},
};

std::string
Normalize(std::string s)
{
    std::string out;
    for (char c : s)
    {
        if (c == '-' || c == '_' || c == ' ')
            continue;
        out += char(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

const CollDesc*
FindColl(const std::string& text)
{
    std::string key = Normalize(text);
    if (key.size() > 4 && key.compare(key.size() - 4, 4, "perf") == 0)
        key.resize(key.size() - 4); // all_reduce_perf
    if (key == "allgatherv" || key == "ag")
        key = "allgather";
    if (key == "ar")
        key = "allreduce";
    if (key == "rs")
        key = "reducescatter";
    if (key == "a2a")
        key = "alltoall";
    if (key == "bcast")
        key = "broadcast";
    for (const CollDesc& d : kColls)
        if (Normalize(d.name) == key)
            return &d;
    return nullptr;
}

struct TypeDesc
{
    const char* name;
    ncclDataType_t type;
    int size;
    bool isFloat;
};

const TypeDesc kTypes[] = {
    {"int8", ncclInt8, 1, false},        {"uint8", ncclUint8, 1, false},
    {"int32", ncclInt32, 4, false},      {"uint32", ncclUint32, 4, false},
    {"int64", ncclInt64, 8, false},      {"uint64", ncclUint64, 8, false},
    {"half", ncclHalf, 2, true},         {"float", ncclFloat, 4, true},
    {"double", ncclDouble, 8, true},
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    {"bfloat16", ncclBfloat16, 2, true},
#endif
#if EIDOLON_BENCH_HAVE_FP8
    {"f8e4m3", ncclFloat8e4m3, 1, true}, {"f8e5m2", ncclFloat8e5m2, 1, true},
#endif
};

const TypeDesc*
FindType(const std::string& text)
{
    std::string key = Normalize(text);
    if (key == "char")
        key = "int8";
    else if (key == "int")
        key = "int32";
    else if (key == "fp16" || key == "float16")
        key = "half";
    else if (key == "fp32" || key == "float32")
        key = "float";
    else if (key == "fp64" || key == "float64")
        key = "double";
    else if (key == "bf16")
        key = "bfloat16";
    else if (key == "fp8e4m3" || key == "fp8_e4m3" || key == "e4m3" || key == "float8e4m3")
        key = "f8e4m3";
    else if (key == "fp8e5m2" || key == "fp8_e5m2" || key == "e5m2" || key == "float8e5m2")
        key = "f8e5m2";
    for (const TypeDesc& t : kTypes)
        if (key == t.name)
            return &t;
    return nullptr;
}

struct OpDesc
{
    const char* name;
    ncclRedOp_t op;
};

const OpDesc kOps[] = {
    {"sum", ncclSum}, {"prod", ncclProd}, {"max", ncclMax}, {"min", ncclMin},
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    {"avg", ncclAvg},
#endif
};

const OpDesc*
FindOp(const std::string& text)
{
    for (const OpDesc& o : kOps)
        if (Normalize(text) == o.name)
            return &o;
    return nullptr;
}

// ------------------------------------------------------------------ options

enum class Timer
{
    Event,
    Wall,
};

struct Options
{
    const CollDesc* coll = nullptr;
    int nThreads = 1;
    int nGpus = 1;
    size_t minBytes = 32 * 1024 * 1024;
    size_t maxBytes = 32 * 1024 * 1024;
    size_t stepBytes = 1 * 1024 * 1024;
    size_t stepFactor = 1;
    int iters = 20;
    int warmupIters = 5;
    int aggIters = 1;
    int check = 1;
    std::vector<const OpDesc*> ops;     // empty: sum
    std::vector<const TypeDesc*> types; // empty: float
    int root = 0;                       // -1: every root
    int blocking = 0;
    int average = 1;
    int parallelInit = 0;
    int streamNull = 0;
    int timeoutSec = 0;
    int reportCpuTime = 0;
    Timer timer = Timer::Event;
};

void
Usage(const char* prog, FILE* out)
{
    std::fprintf(
        out,
        "USAGE: %s [collective] [options]\n"
        "  collective (first positional argument or -C/--collective): all_reduce, all_gather,\n"
        "      reduce_scatter, broadcast, reduce, alltoall, sendrecv (the *_perf binaries fix it)\n"
        "  -t,--nthreads <n>        threads per process (default 1)\n"
        "  -g,--ngpus <n>           GPUs per thread (default 1)\n"
        "  -b,--minbytes <size>     smallest size, e.g. 8, 32K, 1M, 8G (default 32M)\n"
        "  -e,--maxbytes <size>     largest size (default 32M)\n"
        "  -i,--stepbytes <size>    increment when -f is 1 (default 1M)\n"
        "  -f,--stepfactor <n>      multiply the size by n each step (default 1: use -i)\n"
        "  -n,--iters <n>           timed iterations (default 20)\n"
        "  -w,--warmup_iters <n>    warm-up iterations (default 5)\n"
        "  -m,--agg_iters <n>       operations aggregated in one group per iteration (default 1)\n"
        "  -c,--check <0/1>         check results (default 1; N/A under eidolon: no device data)\n"
        "  -o,--op <sum/prod/min/max/avg/all>   reduction (default sum)\n"
        "  -d,--datatype <int8/uint8/int32/uint32/int64/uint64/half/float/double/bfloat16/f8e4m3/f8e5m2/all>\n"
        "  -r,--root <rank>         root of broadcast/reduce, -1 for every root (default 0)\n"
        "  -z,--blocking <0/1>      wait for each operation (default 0)\n"
        "  -a,--average <0/1/2/3>   time reported: rank 0, mean, min, max over ranks (default 1)\n"
        "  -p,--parallel_init <0/1> each thread initializes its own communicators\n"
        "  -y,--stream_null <0/1>   use the default stream\n"
        "  -T,--timeout <s>         abort an operation that takes longer (wall clock; 0 = never)\n"
        "  -C,--collective <name>   the collective; a number instead is nccl-tests'\n"
        "                           --report_cputime <0/1>\n"
        "     --report_cputime <0/1> report host time to issue the operations\n"
        "     --timer <event|wall>  cudaEvent timing on the streams (default) or wall clock\n"
        "  -G,--cudagraph, -F,--output_file: accepted, ignored (with a note)\n"
        "  -h,--help\n"
        "Ranks come from RANK/WORLD_SIZE/LOCAL_RANK (torchrun), OMPI_COMM_WORLD_*, PMI_*, or\n"
        "SLURM_*; the ncclUniqueId goes through a file (EIDOLON_BENCH_ID_FILE, default\n"
        "/tmp/collective-bench-<MASTER_PORT or job hash>.id). See README.md.\n",
        prog);
}

bool
ParseLong(const char* text, long long* value)
{
    if (!text || !*text)
        return false;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(text, &end, 0);
    if (errno != 0 || *end != '\0')
        return false;
    *value = v;
    return true;
}

int
IntArg(const char* flag, const char* text, long long lo, long long hi)
{
    long long v = 0;
    if (!ParseLong(text, &v))
        Die("invalid value '%s' for %s: expected an integer", text, flag);
    if (v < lo || v > hi)
        Die("invalid value '%s' for %s: must be between %lld and %lld", text, flag, lo, hi);
    return int(v);
}

// nccl-tests' size syntax: a number, optionally followed by K, M or G (powers of 1024); we also
// take T and a trailing "B"/"iB" (32MB, 32MiB).
size_t
SizeArg(const char* flag, const char* text)
{
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(text, &end);
    if (end == text || errno != 0 || !(v >= 0))
        Die("invalid size '%s' for %s: expected a number with an optional K, M, G or T suffix",
            text, flag);
    std::string suffix(end);
    double unit = 1;
    if (!suffix.empty())
    {
        switch (std::toupper(static_cast<unsigned char>(suffix[0])))
        {
        case 'K':
            unit = 1024.0;
            break;
        case 'M':
            unit = 1024.0 * 1024;
            break;
        case 'G':
            unit = 1024.0 * 1024 * 1024;
            break;
        case 'T':
            unit = 1024.0 * 1024 * 1024 * 1024;
            break;
        case 'B':
            unit = 1;
            break;
        default:
            Die("invalid size '%s' for %s: unknown suffix '%s' (use K, M, G or T)", text, flag,
                suffix.c_str());
        }
        std::string rest = suffix.substr(unit == 1 ? 1 : 1);
        if (!(rest.empty() || rest == "B" || rest == "b" || rest == "iB" || rest == "ib"))
            Die("invalid size '%s' for %s: unknown suffix '%s' (use K, M, G or T)", text, flag,
                suffix.c_str());
    }
    double bytes = v * unit;
    if (bytes > 9.0e18)
        Die("invalid size '%s' for %s: too large", text, flag);
    return size_t(bytes);
}

Options
ParseArgs(int argc, char** argv)
{
    Options o;
    const char* builtin = &collective_bench_builtin ? collective_bench_builtin : nullptr;
    if (builtin)
        o.coll = FindColl(builtin);

    enum
    {
        kOptTimer = 1000,
        kOptReportCpu,
    };
    static const option longopts[] = {
        {"nthreads", required_argument, nullptr, 't'},
        {"ngpus", required_argument, nullptr, 'g'},
        {"minbytes", required_argument, nullptr, 'b'},
        {"maxbytes", required_argument, nullptr, 'e'},
        {"stepbytes", required_argument, nullptr, 'i'},
        {"stepfactor", required_argument, nullptr, 'f'},
        {"iters", required_argument, nullptr, 'n'},
        {"agg_iters", required_argument, nullptr, 'm'},
        {"warmup_iters", required_argument, nullptr, 'w'},
        {"parallel_init", required_argument, nullptr, 'p'},
        {"check", required_argument, nullptr, 'c'},
        {"op", required_argument, nullptr, 'o'},
        {"datatype", required_argument, nullptr, 'd'},
        {"root", required_argument, nullptr, 'r'},
        {"blocking", required_argument, nullptr, 'z'},
        {"stream_null", required_argument, nullptr, 'y'},
        {"timeout", required_argument, nullptr, 'T'},
        {"cudagraph", required_argument, nullptr, 'G'},
        {"collective", required_argument, nullptr, 'C'},
        {"report_cputime", required_argument, nullptr, kOptReportCpu},
        {"average", required_argument, nullptr, 'a'},
        {"output_file", required_argument, nullptr, 'F'},
        {"timer", required_argument, nullptr, kOptTimer},
        {"help", no_argument, nullptr, 'h'},
        {nullptr, 0, nullptr, 0},
    };
    opterr = 0;
    const char* prog = basename(argv[0]);
    bool allOps = false, allTypes = false;
    for (;;)
    {
        int longindex = 0;
        int c = getopt_long(argc, argv, ":t:g:b:e:i:f:n:m:w:p:c:o:d:r:z:y:T:G:C:a:F:h", longopts,
                            &longindex);
        if (c == -1)
            break;
        switch (c)
        {
        case 't':
            o.nThreads = IntArg("-t/--nthreads", optarg, 1, 1024);
            break;
        case 'g':
            o.nGpus = IntArg("-g/--ngpus", optarg, 1, 1024);
            break;
        case 'b':
            o.minBytes = SizeArg("-b/--minbytes", optarg);
            break;
        case 'e':
            o.maxBytes = SizeArg("-e/--maxbytes", optarg);
            break;
        case 'i':
            o.stepBytes = SizeArg("-i/--stepbytes", optarg);
            break;
        case 'f':
            o.stepFactor = size_t(IntArg("-f/--stepfactor", optarg, 1, INT_MAX));
            break;
        case 'n':
            o.iters = IntArg("-n/--iters", optarg, 1, INT_MAX);
            break;
        case 'm':
            o.aggIters = IntArg("-m/--agg_iters", optarg, 1, INT_MAX);
            break;
        case 'w':
            o.warmupIters = IntArg("-w/--warmup_iters", optarg, 0, INT_MAX);
            break;
        case 'p':
            o.parallelInit = IntArg("-p/--parallel_init", optarg, 0, 1);
            break;
        case 'c':
            o.check = IntArg("-c/--check", optarg, 0, INT_MAX) ? 1 : 0;
            break;
        case 'o':
            if (Normalize(optarg) == "all")
                allOps = true;
            else if (const OpDesc* op = FindOp(optarg))
                o.ops = {op};
            else
                Die("invalid value '%s' for -o/--op: expected sum, prod, min, max, avg or all",
                    optarg);
            break;
        case 'd':
            if (Normalize(optarg) == "all")
                allTypes = true;
            else if (const TypeDesc* t = FindType(optarg))
                o.types = {t};
            else
                Die("invalid value '%s' for -d/--datatype: expected int8, uint8, int32, uint32, "
                    "int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2 or all",
                    optarg);
            break;
        case 'r':
            o.root = IntArg("-r/--root", optarg, -1, INT_MAX);
            break;
        case 'z':
            o.blocking = IntArg("-z/--blocking", optarg, 0, 2) ? 1 : 0;
            break;
        case 'y':
            o.streamNull = IntArg("-y/--stream_null", optarg, 0, 1);
            break;
        case 'T':
            o.timeoutSec = IntArg("-T/--timeout", optarg, 0, INT_MAX);
            break;
        case 'G':
            if (IntArg("-G/--cudagraph", optarg, 0, INT_MAX) != 0)
                Note("-G/--cudagraph: CUDA graph launches are not implemented; running without");
            break;
        case 'C':
        {
            long long v = 0;
            if (ParseLong(optarg, &v)) // nccl-tests' -C is --report_cputime <0/1>
                o.reportCpuTime = v ? 1 : 0;
            else if (const CollDesc* d = FindColl(optarg))
                o.coll = d;
            else
                Die("invalid value '%s' for -C/--collective: expected all_reduce, all_gather, "
                    "reduce_scatter, broadcast, reduce, alltoall or sendrecv",
                    optarg);
            break;
        }
        case kOptReportCpu:
            o.reportCpuTime = IntArg("--report_cputime", optarg, 0, 1);
            break;
        case 'a':
            o.average = IntArg("-a/--average", optarg, 0, 3);
            break;
        case 'F':
            Note("-F/--output_file: CSV output is not implemented; writing the table to stdout");
            break;
        case kOptTimer:
            if (Normalize(optarg) == "event")
                o.timer = Timer::Event;
            else if (Normalize(optarg) == "wall")
                o.timer = Timer::Wall;
            else
                Die("invalid value '%s' for --timer: expected event or wall", optarg);
            break;
        case 'h':
            Usage(prog, stdout);
            std::exit(EXIT_SUCCESS);
        case ':':
            Die("option %s needs a value (see --help)", argv[optind - 1]);
        case '?':
        default:
            if (optopt)
                Die("unknown option '-%c' (see --help)", optopt);
            Die("unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    for (int i = optind; i < argc; i++)
    {
        const CollDesc* d = FindColl(argv[i]);
        if (!d)
            Die("unknown collective '%s': expected all_reduce, all_gather, reduce_scatter, "
                "broadcast, reduce, alltoall or sendrecv",
                argv[i]);
        if (i > optind)
            Die("more than one collective given ('%s' and '%s')", argv[optind], argv[i]);
        o.coll = d;
    }
    if (!o.coll)
        Die("no collective given: name one as the first argument or with -C (all_reduce, "
            "all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv); see --help");
    if (o.minBytes > o.maxBytes)
        Die("invalid sizes for 'minbytes' and 'maxbytes': %zu > %zu", o.minBytes, o.maxBytes);
    if (o.stepFactor <= 1 && o.stepBytes == 0 && o.minBytes != o.maxBytes)
        Die("-i/--stepbytes 0 with -f 1 would never reach maxbytes");
    if (allOps || o.ops.empty())
    {
        if (allOps)
            for (const OpDesc& op : kOps)
                o.ops.push_back(&op);
        else
            o.ops = {&kOps[0]};
    }
    if (allTypes || o.types.empty())
    {
        if (allTypes)
            for (const TypeDesc& t : kTypes)
            {
#if EIDOLON_BENCH_HAVE_FP8
                // As nccl-tests: fp8 only with a 2.24+ library on sm90+ GPUs.
                if (t.type == ncclFloat8e4m3 || t.type == ncclFloat8e5m2)
                {
                    int version = 0, major = 0;
                    if (ncclGetVersion(&version) != ncclSuccess || version < NCCL_VERSION(2, 24, 0) ||
                        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) !=
                            cudaSuccess ||
                        major < 9)
                        continue;
                }
#endif
                o.types.push_back(&t);
            }
        else
            o.types = {FindType("float")};
    }
    return o;
}

// ------------------------------------------------------------------ environment: ranks

const char*
Env(const char* name)
{
    const char* v = std::getenv(name);
    return (v && *v) ? v : nullptr;
}

struct Identity
{
    int proc = 0;
    int nprocs = 1;
    int localRank = 0;
    bool localRankKnown = false;
    const char* source = "none (single process)";
};

Identity
IdentityFromEnvironment()
{
    struct Source
    {
        const char* rank;
        const char* size;
        const char* local;
        const char* what;
    };
    static const Source sources[] = {
        {"RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK/WORLD_SIZE"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "Open MPI"},
        {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI"},
        {"PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK", "PMIx"},
        {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "Slurm"},
    };
    Identity id;
    for (const Source& s : sources)
    {
        const char* r = Env(s.rank);
        const char* n = Env(s.size);
        if (!r || !n)
            continue;
        id.proc = IntArg(s.rank, r, 0, INT_MAX);
        id.nprocs = IntArg(s.size, n, 1, INT_MAX);
        if (id.proc >= id.nprocs)
            Die("%s=%d is not below %s=%d", s.rank, id.proc, s.size, id.nprocs);
        const char* l = Env(s.local);
        if (!l && std::strcmp(s.rank, "PMI_RANK") == 0)
            l = Env("PMI_LOCAL_RANK");
        if (l)
        {
            id.localRank = IntArg(s.local, l, 0, INT_MAX);
            id.localRankKnown = true;
        }
        id.source = s.what;
        return id;
    }
    // One process per node driving all its GPUs (eidolon run --launch node, or a per-node launcher
    // that sets torchrun's node variables without RANK): process = node, one per node.
    const char* node = Env("NODE_RANK") ? Env("NODE_RANK") : Env("GROUP_RANK");
    const char* world = Env("WORLD_SIZE");
    const char* local = Env("LOCAL_WORLD_SIZE");
    if (node && world && local)
    {
        int w = IntArg("WORLD_SIZE", world, 1, INT_MAX);
        int l = IntArg("LOCAL_WORLD_SIZE", local, 1, INT_MAX);
        if (w % l != 0)
            Die("WORLD_SIZE=%d is not a multiple of LOCAL_WORLD_SIZE=%d", w, l);
        id.nprocs = w / l;
        id.proc = IntArg("NODE_RANK", node, 0, id.nprocs - 1);
        id.localRank = 0;
        id.localRankKnown = true;
        id.source = "NODE_RANK (one process per node)";
    }
    return id;
}

// ------------------------------------------------------------------ under eidolon?

int
FindGpuEmu(struct dl_phdr_info* info, size_t, void* found)
{
    if (info->dlpi_name && std::strstr(info->dlpi_name, "libeidolon-gpu-core"))
        *static_cast<bool*>(found) = true;
    return 0;
}

// True when device memory has no data behind it (eidolon's gpu-emu): results cannot be checked.
// EIDOLON_BENCH_CHECK=1 forces the check anyway (under gpu-emu it then reads back zeros, the
// wrong-element counter included, so it proves nothing there); EIDOLON_BENCH_CHECK=0 skips it.
bool
DataIsSimulated()
{
    if (const char* force = Env("EIDOLON_BENCH_CHECK"))
        return std::strcmp(force, "1") != 0; // 1: check anyway; 0: never check
    if (Env("EIDOLON_SIM_ENDPOINT") || Env("EIDOLON_GPU") || Env("EIDOLON_SIMULATED") ||
        Env("EIDOLON_LAUNCH"))
        return true;
    bool found = false;
    dl_iterate_phdr(FindGpuEmu, &found);
    return found;
}

// ------------------------------------------------------------------ file rendezvous (no MPI)
//
// nccl-tests broadcasts the ncclUniqueId with MPI_Bcast and gathers device lines and timings with
// MPI. Here process 0 writes the id to a file (written to a temporary name and renamed, so a reader
// never sees half of it) and the others poll for it; device lines and per-size results come back
// to process 0 the same way, in files named after a random nonce of this run. All files are in the
// id file's directory, which must therefore be shared when processes run on several machines.

std::string
Hex(const void* data, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    std::string s;
    const unsigned char* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; i++)
    {
        s += digits[p[i] >> 4];
        s += digits[p[i] & 15];
    }
    return s;
}

bool
Unhex(const std::string& s, void* data, size_t n)
{
    if (s.size() != 2 * n)
        return false;
    unsigned char* p = static_cast<unsigned char*>(data);
    for (size_t i = 0; i < n; i++)
    {
        auto nib = [](char c) -> int
        {
            if (c >= '0' && c <= '9')
                return c - '0';
            if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
            return -1;
        };
        int hi = nib(s[2 * i]), lo = nib(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        p[i] = static_cast<unsigned char>(hi * 16 + lo);
    }
    return true;
}

uint64_t
Fnv1a(const std::string& s)
{
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s)
    {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

// What identifies this job to every one of its processes (and differs between jobs).
std::string
JobKey(int nprocs)
{
    if (const char* port = Env("MASTER_PORT"))
    {
        std::string addr = Env("MASTER_ADDR") ? Env("MASTER_ADDR") : "";
        std::string key = port;
        for (char c : key)
            if (!std::isalnum(static_cast<unsigned char>(c)))
                Die("MASTER_PORT='%s' is not a port number", port);
        (void)addr;
        return key;
    }
    std::string job;
    if (const char* s = Env("SLURM_JOB_ID"))
        job = std::string("slurm:") + s + "." + (Env("SLURM_STEP_ID") ? Env("SLURM_STEP_ID") : "");
    else if (const char* s = Env("OMPI_MCA_ess_base_jobid"))
        job = std::string("ompi:") + s;
    else if (const char* s = Env("PMIX_NAMESPACE"))
        job = std::string("pmix:") + s;
    else if (const char* s = Env("PMI_KVSNAME"))
        job = std::string("pmi:") + s;
    else if (const char* s = Env("TORCHELASTIC_RUN_ID"))
        job = std::string("torchelastic:") + s;
    else // ranks started by one parent on one machine
        job = "ppid:" + std::to_string(getppid());
    job += ":" + std::to_string(nprocs);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(Fnv1a(job)));
    return buf;
}

double
EnvSeconds(const char* name, double fallback)
{
    const char* v = Env(name);
    if (!v)
        return fallback;
    char* end = nullptr;
    double s = std::strtod(v, &end);
    if (end == v || *end != '\0' || s < 0)
        Die("%s='%s' is not a number of seconds", name, v);
    return s;
}

// Real (not virtual) elapsed time: gpu-emu makes clock_gettime virtual on threads that drive GPUs,
// and a timeout must count real seconds, so this asks the kernel directly.
double
RealSeconds()
{
    timespec ts{};
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

void
SleepMs(int ms)
{
    timespec ts{ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, nullptr);
}

bool
ReadFile(const std::string& path, std::string* text)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return false;
    std::ostringstream ss;
    ss << in.rdbuf();
    *text = ss.str();
    return true;
}

void
WriteFileAtomically(const std::string& path, const std::string& text)
{
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f)
        Die("cannot write %s: %s", tmp.c_str(), std::strerror(errno));
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = (std::fflush(f) == 0) && ok;
    ok = (fsync(fileno(f)) == 0 || errno == EINVAL) && ok;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok)
        Die("cannot write %s: %s", tmp.c_str(), std::strerror(errno));
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        Die("cannot rename %s to %s: %s", tmp.c_str(), path.c_str(), std::strerror(errno));
}

class Rendezvous
{
public:
    Rendezvous(int proc, int nprocs)
        : proc_(proc)
        , nprocs_(nprocs)
    {
        job_ = JobKey(nprocs);
        if (const char* file = Env("EIDOLON_BENCH_ID_FILE"))
            idPath_ = file;
        else
            idPath_ = "/tmp/collective-bench-" + job_ + ".id";
        timeout_ = EnvSeconds("EIDOLON_BENCH_RENDEZVOUS_TIMEOUT", 600);
    }

    // Process 0 publishes `id`; every other process returns it.
    ncclUniqueId ShareId(const ncclUniqueId* id)
    {
        if (proc_ == 0)
        {
            std::random_device rd;
            uint64_t nonce = (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(getpid()) ^
                             uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
            char buf[32];
            std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(nonce));
            nonce_ = buf;
            std::string text = "collective-bench-id 1\nprocesses " + std::to_string(nprocs_) +
                               "\njob " + job_ + "\nnonce " + nonce_ + "\nid " +
                               Hex(id, sizeof(*id)) + "\n";
            WriteFileAtomically(idPath_, text);
            owner_ = true;
            std::snprintf(g_idFile, sizeof(g_idFile), "%s", idPath_.c_str());
            return *id;
        }
        const double start = RealSeconds();
        int waitMs = 1;
        std::string last;
        for (;;)
        {
            std::string text;
            if (ReadFile(idPath_, &text))
            {
                ncclUniqueId got{};
                std::string why;
                if (ParseId(text, &got, &why))
                    return got;
                last = why;
            }
            if (RealSeconds() - start > timeout_)
                Die("no ncclUniqueId from process 0 in %s after %.0f s%s%s (set "
                    "EIDOLON_BENCH_ID_FILE to a path all processes share; "
                    "EIDOLON_BENCH_RENDEZVOUS_TIMEOUT to wait longer)",
                    idPath_.c_str(), timeout_, last.empty() ? "" : ": ", last.c_str());
            SleepMs(waitMs);
            waitMs = std::min(waitMs * 2, 50);
        }
    }

    // Every process sends `text` to process 0 under `tag`; process 0 gets all texts, in order.
    std::vector<std::string> Gather(const std::string& tag, const std::string& text)
    {
        std::vector<std::string> all;
        if (nprocs_ == 1)
            return {text};
        if (proc_ != 0)
        {
            WriteFileAtomically(PathOf(tag, proc_), text);
            return all;
        }
        all.resize(nprocs_);
        all[0] = text;
        const double start = RealSeconds();
        int waitMs = 1;
        for (int p = 1; p < nprocs_; p++)
        {
            std::string path = PathOf(tag, p);
            for (;;)
            {
                if (ReadFile(path, &all[p]))
                {
                    std::remove(path.c_str());
                    break;
                }
                if (RealSeconds() - start > timeout_)
                    Die("process %d did not report '%s' within %.0f s (expected %s); did it fail, "
                        "or read a stale id file?",
                        p, tag.c_str(), timeout_, path.c_str());
                SleepMs(waitMs);
                waitMs = std::min(waitMs * 2, 50);
            }
            waitMs = 1;
        }
        return all;
    }

    // Process 0: every process has the id (all checked in): the file can go.
    void RemoveIdFile()
    {
        if (owner_)
        {
            g_idFile[0] = '\0';
            std::remove(idPath_.c_str());
            owner_ = false;
        }
    }

    ~Rendezvous() { RemoveIdFile(); }

private:
    bool ParseId(const std::string& text, ncclUniqueId* id, std::string* why)
    {
        std::istringstream in(text);
        std::string key, value, magic;
        int version = 0;
        if (!(in >> magic >> version) || magic != "collective-bench-id" || version != 1)
        {
            *why = "not a collective-bench id file";
            return false;
        }
        bool haveId = false;
        while (in >> key >> value)
        {
            if (key == "processes" && value != std::to_string(nprocs_))
            {
                *why = "it is for " + value + " processes, not " + std::to_string(nprocs_) +
                       " (stale file from another job?)";
                return false;
            }
            if (key == "job" && value != job_)
            {
                *why = "it is for job " + value + ", not " + job_ + " (stale file?)";
                return false;
            }
            if (key == "nonce")
                nonce_ = value;
            if (key == "id")
                haveId = Unhex(value, id, sizeof(*id));
        }
        if (!haveId || nonce_.empty())
        {
            *why = "incomplete id file";
            return false;
        }
        return true;
    }

    std::string PathOf(const std::string& tag, int proc) const
    {
        return idPath_ + "." + nonce_ + "." + tag + "." + std::to_string(proc);
    }

    int proc_;
    int nprocs_;
    std::string job_;
    std::string idPath_;
    std::string nonce_;
    double timeout_ = 600;
    bool owner_ = false;
};

// ------------------------------------------------------------------ watchdog (real time)
//
// A phase with a deadline (communicator init, an operation with -T): if it does not end in time,
// the process says where it was stuck and exits instead of hanging. The watchdog thread never
// calls CUDA, so under gpu-emu it sees real time.

class Watchdog
{
public:
    Watchdog()
    {
        thread_ = std::thread([this] { Run(); });
    }
    ~Watchdog()
    {
        stop_ = true;
        thread_.join();
    }
    void Arm(const std::string& what, double seconds)
    {
        if (seconds <= 0)
            return;
        std::lock_guard<std::mutex> lock(mutex_);
        what_ = what;
        seconds_ = seconds;
        deadline_ = RealSeconds() + seconds;
        armed_ = true;
    }
    void Disarm()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        armed_ = false;
    }

private:
    // Sleeps with nanosleep and reads the time with the raw system call: no libc clock (gpu-emu
    // interposes clock_gettime, and std::condition_variable::wait_for would go through it).
    void Run()
    {
        while (!stop_)
        {
            SleepMs(100);
            std::lock_guard<std::mutex> lock(mutex_);
            if (armed_ && RealSeconds() > deadline_)
                Die("timed out after %.0f s in %s", seconds_, what_.c_str());
        }
    }
    std::mutex mutex_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    bool armed_ = false;
    double deadline_ = 0;
    double seconds_ = 0;
    std::string what_;
};

// ------------------------------------------------------------------ data: init and check kernels
//
// Inputs are small integers, exact in every type, so that a result can be checked exactly:
//  reductions: rank r holds 2 at the indices i with (i + r) % nranks == 0 and 1 elsewhere, so every
//    element's sum is nranks+1, product 2, max 2, min 1 (2 with one rank), avg (nranks+1)/nranks;
//    exact up to 255 ranks in bfloat16 and 2047 in half.
//  data movement: rank r holds (131 r + i) % 241 at index i (i counted within its send buffer).

enum Pattern : int
{
    kPatternReduce = 0,
    kPatternMove = 1,
};

template<typename T> struct Num
{
    __device__ static T Make(long long v) { return static_cast<T>(v); }
    __device__ static double Get(T v) { return static_cast<double>(v); }
};
template<> struct Num<half>
{
    __device__ static half Make(long long v) { return __float2half(static_cast<float>(v)); }
    __device__ static double Get(half v) { return static_cast<double>(__half2float(v)); }
};
#if EIDOLON_BENCH_HAVE_FP8
template<> struct Num<__nv_fp8_e4m3>
{
    __device__ static __nv_fp8_e4m3 Make(long long v)
    {
        return __nv_fp8_e4m3(static_cast<float>(v));
    }
    __device__ static double Get(__nv_fp8_e4m3 v) { return static_cast<double>(float(v)); }
};
template<> struct Num<__nv_fp8_e5m2>
{
    __device__ static __nv_fp8_e5m2 Make(long long v)
    {
        return __nv_fp8_e5m2(static_cast<float>(v));
    }
    __device__ static double Get(__nv_fp8_e5m2 v) { return static_cast<double>(float(v)); }
};
#endif
template<> struct Num<__nv_bfloat16>
{
    __device__ static __nv_bfloat16 Make(long long v)
    {
        return __float2bfloat16(static_cast<float>(v));
    }
    __device__ static double Get(__nv_bfloat16 v)
    {
        return static_cast<double>(__bfloat162float(v));
    }
};

__device__ long long
InputValue(int pattern, int rank, int nranks, unsigned long long index)
{
    if (pattern == kPatternReduce)
        return ((index + unsigned(rank)) % unsigned(nranks)) == 0 ? 2 : 1;
    return static_cast<long long>((131ull * unsigned(rank) + index) % 241ull);
}

template<typename T>
__global__ void
FillKernel(T* data, size_t count, int pattern, int rank, int nranks)
{
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
         i += size_t(gridDim.x) * blockDim.x)
        data[i] = Num<T>::Make(InputValue(pattern, rank, nranks, i));
}

// Where element k of a result comes from.
struct Expect
{
    int pattern = kPatternMove;
    // kPatternReduce: every element is `reduced` (computed on the host from the op).
    double reduced = 0;
    double tolerance = 0; // relative, for floating-point averages
    // kPatternMove: source rank = block ? k / block : srcRank; index = offset + (block ? k % block
    // : k)
    unsigned long long block = 0;
    unsigned long long offset = 0;
    int srcRank = 0;
    int nranks = 1;
};

template<typename T>
__global__ void
CheckKernel(const T* data, size_t count, Expect e, unsigned long long* wrong)
{
    unsigned long long mine = 0;
    for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < count;
         k += size_t(gridDim.x) * blockDim.x)
    {
        double got = Num<T>::Get(data[k]);
        double want;
        if (e.pattern == kPatternReduce)
        {
            want = e.reduced;
            if (e.tolerance > 0 ? fabs(got - want) > e.tolerance * fmax(1.0, fabs(want))
                                : got != want)
                mine++;
        }
        else
        {
            int src = e.block ? int(k / e.block) : e.srcRank;
            unsigned long long idx = e.offset + (e.block ? k % e.block : k);
            want = Num<T>::Get(Num<T>::Make(InputValue(kPatternMove, src, e.nranks, idx)));
            if (got != want)
                mine++;
        }
    }
    if (mine)
        atomicAdd(wrong, mine);
}

void
LaunchGrid(size_t count, int* blocks, int* threads)
{
    *threads = 512;
    size_t b = (count + 511) / 512;
    *blocks = int(std::max<size_t>(1, std::min<size_t>(b, 4096)));
}

// Calls visit(T*) with a null pointer of the element type of `type`; false for a type without
// kernels here.
template <typename Visit>
bool
WithElementType(ncclDataType_t type, Visit&& visit)
{
    switch (type)
    {
    case ncclInt8:
        return visit(static_cast<int8_t*>(nullptr)), true;
    case ncclUint8:
        return visit(static_cast<uint8_t*>(nullptr)), true;
    case ncclInt32:
        return visit(static_cast<int32_t*>(nullptr)), true;
    case ncclUint32:
        return visit(static_cast<uint32_t*>(nullptr)), true;
    case ncclInt64:
        return visit(static_cast<int64_t*>(nullptr)), true;
    case ncclUint64:
        return visit(static_cast<uint64_t*>(nullptr)), true;
    case ncclHalf:
        return visit(static_cast<half*>(nullptr)), true;
    case ncclFloat:
        return visit(static_cast<float*>(nullptr)), true;
    case ncclDouble:
        return visit(static_cast<double*>(nullptr)), true;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case ncclBfloat16:
        return visit(static_cast<__nv_bfloat16*>(nullptr)), true;
#endif
#if EIDOLON_BENCH_HAVE_FP8
    case ncclFloat8e4m3:
        return visit(static_cast<__nv_fp8_e4m3*>(nullptr)), true;
    case ncclFloat8e5m2:
        return visit(static_cast<__nv_fp8_e5m2*>(nullptr)), true;
#endif
    default:
        return false;
    }
}

void
Fill(const TypeDesc& t, void* data, size_t count, int pattern, int rank, int nranks,
     cudaStream_t stream)
{
    if (count == 0)
        return;
    int blocks, threads;
    LaunchGrid(count, &blocks, &threads);
    bool known = WithElementType(t.type,
                                 [&](auto* element)
                                 {
                                     using T = std::remove_pointer_t<decltype(element)>;
                                     FillKernel<<<blocks, threads, 0, stream>>>(
                                         static_cast<T*>(data), count, pattern, rank, nranks);
                                 });
    if (!known)
        Die("internal: no fill kernel for %s", t.name);
    CUDACHECK(cudaGetLastError());
}

void
Check(const TypeDesc& t, const void* data, size_t count, const Expect& e, unsigned long long* wrong,
      cudaStream_t stream)
{
    if (count == 0)
        return;
    int blocks, threads;
    LaunchGrid(count, &blocks, &threads);
    bool known = WithElementType(t.type,
                                 [&](auto* element)
                                 {
                                     using T = std::remove_pointer_t<decltype(element)>;
                                     CheckKernel<<<blocks, threads, 0, stream>>>(
                                         static_cast<const T*>(data), count, e, wrong);
                                 });
    if (!known)
        Die("internal: no check kernel for %s", t.name);
    CUDACHECK(cudaGetLastError());
}

// The value every element of a reduction holds, as the type's own arithmetic gives it (integers
// wrap; integer avg is the wrapped sum divided by nranks, as NCCL computes it).
double
ReducedValue(const TypeDesc& t, ncclRedOp_t op, int nranks, double* tolerance)
{
    *tolerance = 0;
    auto wrap = [&](long long v) -> long long
    {
        switch (t.type)
        {
        case ncclInt8:
            return static_cast<int8_t>(v);
        case ncclUint8:
            return static_cast<uint8_t>(v);
        case ncclInt32:
            return static_cast<int32_t>(v);
        case ncclUint32:
            return static_cast<uint32_t>(v);
        default:
            return v;
        }
    };
    long long sum = wrap(nranks + 1);
#if EIDOLON_BENCH_HAVE_FP8
    // fp8 holds integers exactly only up to 16 (e4m3) or 8 (e5m2), and NCCL rounds every partial
    // sum to fp8: a sum or average is checked to within the types' half-ulp steps over a ring.
    if (t.type == ncclFloat8e4m3 || t.type == ncclFloat8e5m2)
        *tolerance = (op == ncclSum || op == ncclAvg) ? 0.5 : 0;
#endif
    switch (op)
    {
    case ncclSum:
        return double(sum);
    case ncclProd:
        return 2;
    case ncclMax:
        return 2;
    case ncclMin:
        return nranks == 1 ? 2 : 1;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case ncclAvg:
        if (!t.isFloat)
            return double(sum / nranks);
        if (*tolerance == 0)
            *tolerance = (t.type == ncclHalf || t.type == ncclBfloat16) ? 1e-2 : 1e-5;
        return double(nranks + 1) / nranks;
#endif
    default:
        return double(sum);
    }
}

// ------------------------------------------------------------------ byte counts and bandwidth

struct Counts
{
    size_t send = 0, recv = 0, param = 0, sendInplaceOffset = 0, recvInplaceOffset = 0;
};

// nccl-tests' getCollByteCount: `count` elements of the "size" column, split per collective.
Counts
CollCounts(Coll coll, size_t count, int nranks)
{
    Counts c;
    size_t n = size_t(nranks);
    switch (coll)
    {
    case Coll::AllReduce:
    case Coll::Broadcast:
    case Coll::Reduce:
    case Coll::SendRecv:
        c.send = c.recv = c.param = count;
        break;
    case Coll::AllGather:
        c.send = count / n;
        c.recv = (count / n) * n;
        c.param = c.send;
        c.sendInplaceOffset = count / n;
        break;
    case Coll::ReduceScatter:
        c.send = (count / n) * n;
        c.recv = count / n;
        c.param = c.recv;
        c.recvInplaceOffset = count / n;
        break;
    case Coll::AllToAll:
        c.send = c.recv = (count / n) * n;
        c.param = count / n;
        break;
    }
    return c;
}

// nccl-tests' getBw: algbw from the bytes the size column names, busbw by the collective's factor.
void
CollBandwidth(Coll coll, size_t paramCount, int typeSize, double sec, int nranks, double* algBw,
              double* busBw)
{
    double n = nranks;
    double bytes = double(paramCount) * typeSize;
    double factor = 1;
    switch (coll)
    {
    case Coll::AllReduce:
        factor = 2 * (n - 1) / n;
        break;
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AllToAll:
        bytes *= n;
        factor = (n - 1) / n;
        break;
    case Coll::Broadcast:
    case Coll::Reduce:
    case Coll::SendRecv:
        factor = 1;
        break;
    }
    *algBw = sec > 0 ? bytes / 1.0e9 / sec : 0;
    *busBw = *algBw * factor;
}

// ------------------------------------------------------------------ threads of one process

class ThreadSync
{
public:
    explicit ThreadSync(int n)
        : n_(n)
        , values_(n, 0.0)
    {
    }
    void Barrier()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        int gen = generation_;
        if (++arrived_ == n_)
        {
            arrived_ = 0;
            generation_++;
            cv_.notify_all();
            return;
        }
        cv_.wait(lock, [&] { return generation_ != gen; });
    }
    // Every thread contributes `v`; `combine` runs once, on the last thread to arrive, over all
    // values in thread order; everyone returns its result.
    double Combine(int thread, double v, const std::function<double(const std::vector<double>&)>& f)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        values_[thread] = v;
        int gen = generation_;
        if (++arrived_ == n_)
        {
            result_ = f(values_);
            arrived_ = 0;
            generation_++;
            cv_.notify_all();
            return result_;
        }
        cv_.wait(lock, [&] { return generation_ != gen; });
        return result_;
    }

private:
    int n_;
    int arrived_ = 0;
    int generation_ = 0;
    std::vector<double> values_;
    double result_ = 0;
    std::mutex mutex_;
    std::condition_variable cv_;
};

// ------------------------------------------------------------------ the benchmark

// nccl-tests' fixed-width numbers: 2 decimals if they fit in `width`, then 1, then none, then an
// exponent (`exponentDigits` after the point).
std::string
FitWidth(double v, int width, int exponentDigits)
{
    char s[64];
    for (int decimals = 2; decimals >= 0; --decimals)
    {
        if (std::snprintf(s, sizeof(s), "%*.*f", width, decimals, v) <= width)
            return s;
    }
    std::snprintf(s, sizeof(s), "%*.*e", width, exponentDigits, v);
    return s;
}

std::string
TimeString(double v)
{
    return FitWidth(v, 7, 1);
}

std::string
BwString(double v)
{
    return FitWidth(v, 6, 0);
}

// One measurement combined over ranks.
struct StepResult
{
    double sec = 0;
    long long wrong = 0;
    bool checked = false;
};

// What the threads of one process contribute to a measurement: sum, min, max and thread 0's value
// of the time, the sum of wrong elements.
struct Acc
{
    double sum = 0, mn = 1e300, mx = -1e300, first = 0;
    long long wrong = 0;
    int count = 0;
    bool unchecked = false;
};

struct ThreadCtx
{
    int thread = 0;
    std::vector<int> gpus;
    std::vector<int> ranks;
    std::vector<ncclComm_t> comms;
    std::vector<cudaStream_t> streams;
    std::vector<void*> send;
    std::vector<void*> recv;
    std::vector<unsigned long long*> wrong; // device counters
    std::vector<cudaEvent_t> start, stop;
    double bwSum = 0;
    int bwCount = 0;
    int errors = 0;
};

struct Shared
{
    Options opt;
    Identity who;
    int nranks = 1;
    size_t maxBytes = 0; // after the memory limit
    bool simulated = false;
    Rendezvous* rdv = nullptr;
    Watchdog* watchdog = nullptr;
    ThreadSync* sync = nullptr;
    std::vector<ThreadCtx> threads;
    uint64_t seq = 0; // measurements so far (the same sequence in every process)
    // Per-measurement exchange between the threads (guarded by `mutex`).
    std::mutex mutex;
    Acc acc;
    StepResult last;
};

// Per-step setup: the counts of `size` bytes of `t` for this collective.
struct Step
{
    const TypeDesc* type;
    const OpDesc* op; // nullptr for data movement
    int root;
    size_t size;
    Counts c;
    size_t sendBytes, recvBytes, paramBytes;
};

Step
MakeStep(const Shared& sh, const TypeDesc* t, const OpDesc* op, int root, size_t size)
{
    Step s{t, op, root, size, {}, 0, 0, 0};
    s.c = CollCounts(sh.opt.coll->coll, size / t->size, sh.nranks);
    s.sendBytes = s.c.send * t->size;
    s.recvBytes = s.c.recv * t->size;
    s.paramBytes = s.c.param * t->size;
    return s;
}

void
RunColl(const Shared& sh, const Step& s, void* sendbuff, void* recvbuff, ncclComm_t comm,
        cudaStream_t stream, int rank)
{
    size_t count = s.c.param;
    ncclDataType_t type = s.type->type;
    ncclRedOp_t op = s.op ? s.op->op : ncclSum;
    int n = sh.nranks;
    switch (sh.opt.coll->coll)
    {
    case Coll::AllReduce:
        NCCLCHECK(ncclAllReduce(sendbuff, recvbuff, count, type, op, comm, stream));
        break;
    case Coll::AllGather:
        NCCLCHECK(ncclAllGather(sendbuff, recvbuff, count, type, comm, stream));
        break;
    case Coll::ReduceScatter:
        NCCLCHECK(ncclReduceScatter(sendbuff, recvbuff, count, type, op, comm, stream));
        break;
    case Coll::Broadcast:
        NCCLCHECK(ncclBroadcast(sendbuff, recvbuff, count, type, s.root, comm, stream));
        break;
    case Coll::Reduce:
        NCCLCHECK(ncclReduce(sendbuff, recvbuff, count, type, op, s.root, comm, stream));
        break;
    case Coll::AllToAll:
    {
        if (count == 0)
            return;
        size_t off = count * s.type->size;
        NCCLCHECK(ncclGroupStart());
        for (int r = 0; r < n; r++)
        {
            NCCLCHECK(
                ncclSend(static_cast<char*>(sendbuff) + r * off, count, type, r, comm, stream));
            NCCLCHECK(
                ncclRecv(static_cast<char*>(recvbuff) + r * off, count, type, r, comm, stream));
        }
        NCCLCHECK(ncclGroupEnd());
        break;
    }
    case Coll::SendRecv:
    {
        NCCLCHECK(ncclGroupStart());
        NCCLCHECK(ncclSend(sendbuff, count, type, (rank + 1) % n, comm, stream));
        NCCLCHECK(ncclRecv(recvbuff, count, type, (rank - 1 + n) % n, comm, stream));
        NCCLCHECK(ncclGroupEnd());
        break;
    }
    }
}

// Waits for every stream of the thread, watching NCCL's asynchronous errors (as nccl-tests does).
// nccl-tests polls its streams round-robin; here each stream is polled until done before the next,
// which ends at the same moment and lets gpu-emu take repeated queries of one stream as a wait.
void
CompleteColl(Shared& sh, ThreadCtx& tc)
{
    const double start = RealSeconds();
    for (size_t i = 0; i < tc.streams.size(); i++)
    {
        if (!tc.streams[i])
            CUDACHECK(cudaSetDevice(tc.gpus[i])); // the default stream of this GPU
        for (;;)
        {
            cudaError_t e = cudaStreamQuery(tc.streams[i]);
            if (e == cudaSuccess)
                break;
            if (e != cudaErrorNotReady)
                CUDACHECK(e);
            ncclResult_t async = ncclSuccess;
            NCCLCHECK(ncclCommGetAsyncError(tc.comms[i], &async));
            if (async != ncclSuccess && async != ncclInProgress)
            {
                for (ncclComm_t c : tc.comms)
                    ncclCommAbort(c);
                Die("NCCL asynchronous error on rank %d: %s%s%s", tc.ranks[i],
                    ncclGetErrorString(async), *LastNcclError() ? ": " : "", LastNcclError());
            }
            if (sh.opt.timeoutSec > 0 && RealSeconds() - start > sh.opt.timeoutSec)
            {
                for (ncclComm_t c : tc.comms)
                    ncclCommAbort(c);
                Die("operation timed out after %d s (-T)", sh.opt.timeoutSec);
            }
            sched_yield();
        }
    }
}

void
StartColl(Shared& sh, ThreadCtx& tc, const Step& s, bool inPlace, int iter)
{
    // Move the buffers along with the iteration (as nccl-tests does), within maxBytes.
    size_t total = std::max(s.sendBytes, s.recvBytes);
    size_t steps = total ? sh.maxBytes / total : 1;
    if (steps == 0)
        steps = 1;
    size_t shift = total * (size_t(iter) % steps);
    size_t ngpus = tc.gpus.size();
    if (ngpus > 1)
        NCCLCHECK(ncclGroupStart());
    for (size_t i = 0; i < ngpus; i++)
    {
        int rank = tc.ranks[i];
        char* recvBuff = static_cast<char*>(tc.recv[i]) + shift;
        char* sendBuff = static_cast<char*>(tc.send[i]) + shift;
        void* sb = inPlace ? recvBuff + s.c.sendInplaceOffset * s.type->size * rank : sendBuff;
        void* rb = inPlace ? recvBuff + s.c.recvInplaceOffset * s.type->size * rank : recvBuff;
        RunColl(sh, s, sb, rb, tc.comms[i], tc.streams[i], rank);
    }
    if (ngpus > 1)
        NCCLCHECK(ncclGroupEnd());
    if (sh.opt.blocking)
    {
        CompleteColl(sh, tc);
        sh.sync->Barrier();
    }
}

// Input data in place (shift 0) and cleared outputs.
void
InitData(Shared& sh, ThreadCtx& tc, const Step& s, bool inPlace)
{
    Coll coll = sh.opt.coll->coll;
    int pattern = s.op ? kPatternReduce : kPatternMove;
    for (size_t i = 0; i < tc.gpus.size(); i++)
    {
        CUDACHECK(cudaSetDevice(tc.gpus[i]));
        int rank = tc.ranks[i];
        char* recvBuff = static_cast<char*>(tc.recv[i]);
        CUDACHECK(cudaMemsetAsync(recvBuff, 0, s.recvBytes, tc.streams[i]));
        char* data = inPlace ? recvBuff + s.c.sendInplaceOffset * s.type->size * rank
                             : static_cast<char*>(tc.send[i]);
        if (coll != Coll::Broadcast || rank == s.root) // only the root's input matters
            Fill(*s.type, data, s.c.send, pattern, rank, sh.nranks, tc.streams[i]);
    }
    for (size_t i = 0; i < tc.gpus.size(); i++)
        CUDACHECK(cudaStreamSynchronize(tc.streams[i]));
}

// Counts wrong elements of this thread's GPUs after one run; -1 when the collective has no
// checkable result here (in-place alltoall, as in nccl-tests).
long long
CheckData(Shared& sh, ThreadCtx& tc, const Step& s, bool inPlace)
{
    Coll coll = sh.opt.coll->coll;
    if (coll == Coll::AllToAll && inPlace)
        return -1;
    long long total = 0;
    for (size_t i = 0; i < tc.gpus.size(); i++)
    {
        CUDACHECK(cudaSetDevice(tc.gpus[i]));
        int rank = tc.ranks[i];
        if (coll == Coll::Reduce && rank != s.root)
            continue;
        Expect e;
        e.nranks = sh.nranks;
        size_t count = s.c.recv;
        if (s.op)
        {
            e.pattern = kPatternReduce;
            e.reduced = ReducedValue(*s.type, s.op->op, sh.nranks, &e.tolerance);
        }
        else
        {
            e.pattern = kPatternMove;
            switch (coll)
            {
            case Coll::Broadcast:
                e.srcRank = s.root;
                break;
            case Coll::AllGather:
                e.block = s.c.send;
                break;
            case Coll::AllToAll:
                e.block = s.c.param;
                e.offset = (unsigned long long)rank * s.c.param;
                break;
            case Coll::SendRecv:
                e.srcRank = (rank - 1 + sh.nranks) % sh.nranks;
                break;
            default:
                break;
            }
        }
        char* data = static_cast<char*>(tc.recv[i]) +
                     (inPlace ? s.c.recvInplaceOffset * s.type->size * rank : 0);
        CUDACHECK(cudaMemsetAsync(tc.wrong[i], 0, sizeof(unsigned long long), tc.streams[i]));
        Check(*s.type, data, count, e, tc.wrong[i], tc.streams[i]);
        unsigned long long w = 0;
        CUDACHECK(
            cudaMemcpyAsync(&w, tc.wrong[i], sizeof(w), cudaMemcpyDeviceToHost, tc.streams[i]));
        CUDACHECK(cudaStreamSynchronize(tc.streams[i]));
        total += (long long)w;
    }
    return total;
}

// Under eidolon, virtual time runs only as far as every rank's clock: a process waiting on the
// others outside CUDA (the file rendezvous below, nccl-tests' MPI) holds it back, and a rank that
// the others wait for may still be waiting for its last collective to end (a Broadcast root or
// a Reduce's first rank is done before the rest). An allreduce of one element, waited for, lines
// every rank's clock up first (outside the timed loop; the MPI barrier a real run would take).
void
AlignClocks(Shared& sh, ThreadCtx& tc)
{
    if (!sh.simulated || sh.who.nprocs <= 1)
        return;
    if (tc.comms.size() > 1)
        NCCLCHECK(ncclGroupStart());
    for (size_t i = 0; i < tc.comms.size(); i++)
        NCCLCHECK(ncclAllReduce(tc.send[i], tc.recv[i], 1, ncclInt8, ncclSum, tc.comms[i],
                                tc.streams[i]));
    if (tc.comms.size() > 1)
        NCCLCHECK(ncclGroupEnd());
    CompleteColl(sh, tc);
}

// Combines per-thread values over the process's threads and, through process 0, over processes
// (nccl-tests' Allreduce of the time under -a, and the sum of wrong elements). Only process 0's
// result is complete; the others get their own thread 0's time.
StepResult
CombineAcrossRanks(Shared& sh, ThreadCtx& tc, double sec, long long wrong, bool checked)
{
    {
        std::lock_guard<std::mutex> lock(sh.mutex);
        Acc& acc = sh.acc;
        if (acc.count == 0)
            acc = Acc{};
        acc.sum += sec;
        acc.mn = std::min(acc.mn, sec);
        acc.mx = std::max(acc.mx, sec);
        if (tc.thread == 0)
            acc.first = sec;
        if (checked && wrong >= 0)
            acc.wrong += wrong;
        else
            acc.unchecked = true;
        acc.count++;
    }
    // The last thread to arrive exchanges with the other processes.
    sh.sync->Combine(
        tc.thread, 0.0,
        [&](const std::vector<double>&)
        {
            Acc a;
            {
                std::lock_guard<std::mutex> lock(sh.mutex);
                a = sh.acc;
                sh.acc.count = 0;
            }
            uint64_t seq = sh.seq++;
            char line[256];
            std::snprintf(line, sizeof(line), "%.17g %.17g %.17g %.17g %lld %d %d", a.sum, a.mn,
                          a.mx, a.first, a.wrong, a.unchecked ? 1 : 0, a.count);
            std::vector<std::string> all = sh.rdv->Gather("res" + std::to_string(seq), line);
            StepResult r;
            r.sec = a.first;
            if (sh.who.proc == 0)
            {
                double sum = 0, mn = 1e300, mx = -1e300, first = 0;
                long long w = 0;
                bool unchecked = false;
                int count = 0;
                for (size_t p = 0; p < all.size(); p++)
                {
                    Acc x;
                    int un = 0;
                    if (std::sscanf(all[p].c_str(), "%lg %lg %lg %lg %lld %d %d", &x.sum, &x.mn,
                                    &x.mx, &x.first, &x.wrong, &un, &x.count) != 7)
                        Die("garbled result from process %zu: '%s'", p, all[p].c_str());
                    sum += x.sum;
                    mn = std::min(mn, x.mn);
                    mx = std::max(mx, x.mx);
                    if (p == 0)
                        first = x.first;
                    w += x.wrong;
                    unchecked = unchecked || un;
                    count += x.count;
                }
                switch (sh.opt.average)
                {
                case 0:
                    r.sec = first;
                    break;
                case 1:
                    r.sec = count ? sum / count : 0;
                    break;
                case 2:
                    r.sec = mn;
                    break;
                default:
                    r.sec = mx;
                    break;
                }
                r.wrong = w;
                r.checked = !unchecked;
            }
            std::lock_guard<std::mutex> lock(sh.mutex);
            sh.last = r;
            return 0.0;
        });
    std::lock_guard<std::mutex> lock(sh.mutex);
    return sh.last;
}

bool
MainThread(const Shared& sh, const ThreadCtx& tc)
{
    return sh.who.proc == 0 && tc.thread == 0;
}

// One measurement: out-of-place or in-place, at one size. Prints its columns on the main thread.
void
BenchTime(Shared& sh, ThreadCtx& tc, const Step& s, bool inPlace)
{
    const Options& o = sh.opt;
    const bool check = o.check && !sh.simulated;
    if (check)
        InitData(sh, tc, s, inPlace);

    // Sync: one operation, completed, then every rank lines up, as nccl-tests' Barrier (MPI's
    // across processes) does before it starts the timer. The operation alone does not line them
    // up: a Broadcast root or a Reduce's first rank is done before the rest, a SendRecv waits
    // only for its neighbours, and the first size follows the warm-up at the largest one, so a
    // rank still receiving it would be waited for inside the first size's timed loop.
    StartColl(sh, tc, s, inPlace, 0);
    CompleteColl(sh, tc);
    AlignClocks(sh, tc);
    sh.sync->Barrier();

    size_t ngpus = tc.gpus.size();
    auto t0 = std::chrono::steady_clock::now();
    if (o.timer == Timer::Event)
        for (size_t i = 0; i < ngpus; i++)
        {
            CUDACHECK(cudaSetDevice(tc.gpus[i])); // stream 0 (-y 1) is the current device's
            CUDACHECK(cudaEventRecord(tc.start[i], tc.streams[i]));
        }
    for (int iter = 0; iter < o.iters; iter++)
    {
        if (o.aggIters > 1)
            NCCLCHECK(ncclGroupStart());
        for (int a = 0; a < o.aggIters; a++)
            StartColl(sh, tc, s, inPlace, iter * o.aggIters + a);
        if (o.aggIters > 1)
            NCCLCHECK(ncclGroupEnd());
    }
    if (o.timer == Timer::Event)
        for (size_t i = 0; i < ngpus; i++)
        {
            CUDACHECK(cudaSetDevice(tc.gpus[i]));
            CUDACHECK(cudaEventRecord(tc.stop[i], tc.streams[i]));
        }
    double cpuSec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CompleteColl(sh, tc);
    double sec;
    if (o.timer == Timer::Event)
    {
        sec = 0;
        for (size_t i = 0; i < ngpus; i++)
        {
            float ms = 0;
            CUDACHECK(cudaEventSynchronize(tc.stop[i]));
            CUDACHECK(cudaEventElapsedTime(&ms, tc.start[i], tc.stop[i]));
            sec = std::max(sec, double(ms) * 1e-3);
        }
    }
    else
    {
        sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    double n = double(o.iters) * o.aggIters;
    sec /= n;
    cpuSec /= n;
    double reported = o.reportCpuTime ? cpuSec : sec;

    long long wrong = -1;
    if (check)
    {
        InitData(sh, tc, s, inPlace);
        StartColl(sh, tc, s, inPlace, 0);
        CompleteColl(sh, tc);
        wrong = CheckData(sh, tc, s, inPlace);
    }
    AlignClocks(sh, tc);
    sh.sync->Barrier();
    StepResult r = CombineAcrossRanks(sh, tc, reported, wrong, check && wrong >= 0);
    if (!MainThread(sh, tc))
        return;
    double algBw = 0, busBw = 0;
    CollBandwidth(o.coll->coll, s.c.param, s.type->size, r.sec, sh.nranks, &algBw, &busBw);
    std::string timeStr = TimeString(r.sec * 1e6);
    if (r.checked)
        std::printf("  %7s  %6s  %6s  %6g", timeStr.c_str(), BwString(algBw).c_str(),
                    BwString(busBw).c_str(), double(r.wrong));
    else
        std::printf("  %7s  %6s  %6s    N/A", timeStr.c_str(), BwString(algBw).c_str(),
                    BwString(busBw).c_str());
    if (r.checked && r.wrong)
        tc.errors++;
    tc.bwSum += busBw;
    tc.bwCount++;
}

void
TimeTest(Shared& sh, ThreadCtx& tc, const TypeDesc* t, const OpDesc* op, int root)
{
    const Options& o = sh.opt;
    sh.sync->Barrier();
    // Warm-up at the largest, then the smallest size (out-of-place), as nccl-tests does.
    for (size_t size : {sh.maxBytes, o.minBytes})
    {
        Step s = MakeStep(sh, t, op, root, size);
        for (int iter = 0; iter < o.warmupIters; iter++)
            StartColl(sh, tc, s, false, iter);
        CompleteColl(sh, tc);
    }
    for (size_t size = o.minBytes; size <= sh.maxBytes;
         size = (o.stepFactor > 1) ? size * o.stepFactor : size + o.stepBytes)
    {
        Step s = MakeStep(sh, t, op, root, size);
        if (MainThread(sh, tc))
        {
            const char* opName = o.coll->hasOp ? op->name : "none";
            std::printf("%12zu  %12zu  %8s  %6s  %6d", std::max(s.sendBytes, s.recvBytes),
                        s.c.param, t->name, opName, o.coll->hasRoot ? root : -1);
            std::fflush(stdout);
        }
        BenchTime(sh, tc, s, false);
        BenchTime(sh, tc, s, true);
        if (MainThread(sh, tc))
        {
            std::printf("\n");
            std::fflush(stdout);
        }
        if ((o.stepFactor <= 1 && o.stepBytes == 0) || (o.stepFactor > 1 && size == 0))
            break;
        if (size > SIZE_MAX / std::max<size_t>(o.stepFactor, 2))
            break;
    }
}

void
InitComms(Shared& sh, ThreadCtx& tc, const ncclUniqueId& id)
{
    NCCLCHECK(ncclGroupStart());
    for (size_t i = 0; i < tc.gpus.size(); i++)
    {
        CUDACHECK(cudaSetDevice(tc.gpus[i]));
        NCCLCHECK(ncclCommInitRank(&tc.comms[i], sh.nranks, id, tc.ranks[i]));
    }
    NCCLCHECK(ncclGroupEnd());
}

void
ThreadMain(Shared& sh, ThreadCtx& tc, const ncclUniqueId* id)
{
    const Options& o = sh.opt;
    if (o.parallelInit)
    {
        sh.watchdog->Arm("NCCL communicator initialization (ncclCommInitRank)",
                         EnvSeconds("EIDOLON_BENCH_INIT_TIMEOUT", 900));
        InitComms(sh, tc, *id);
        sh.sync->Barrier();
        sh.watchdog->Disarm();
    }
    CUDACHECK(cudaSetDevice(tc.gpus[0]));
    for (const TypeDesc* t : o.types)
    {
        switch (o.coll->coll)
        {
        case Coll::AllReduce:
        case Coll::ReduceScatter:
            for (const OpDesc* op : o.ops)
                TimeTest(sh, tc, t, op, -1);
            break;
        case Coll::Reduce:
            for (const OpDesc* op : o.ops)
                for (int r = (o.root < 0 ? 0 : o.root); r <= (o.root < 0 ? sh.nranks - 1 : o.root);
                     r++)
                    TimeTest(sh, tc, t, op, r);
            break;
        case Coll::Broadcast:
            for (int r = (o.root < 0 ? 0 : o.root); r <= (o.root < 0 ? sh.nranks - 1 : o.root); r++)
                TimeTest(sh, tc, t, nullptr, r);
            break;
        default:
            TimeTest(sh, tc, t, nullptr, -1);
            break;
        }
    }
}

std::string
HostName()
{
    char name[1024] = {};
    if (gethostname(name, sizeof(name) - 1) != 0)
        return "unknown";
    return name;
}

} // namespace

int
main(int argc, char** argv)
{
    setlinebuf(stdout);
    Shared sh;
    sh.opt = ParseArgs(argc, argv);
    const Options& o = sh.opt;

    sh.who = IdentityFromEnvironment();
    g_proc = sh.who.proc;
    g_nprocs = sh.who.nprocs;
    const int perProc = o.nThreads * o.nGpus;
    sh.nranks = sh.who.nprocs * perProc;
    if (o.coll->hasRoot && o.root >= sh.nranks)
        Die("-r/--root %d is not a rank (there are %d)", o.root, sh.nranks);
    sh.simulated = DataIsSimulated();

    int ncclVersion = 0;
    NCCLCHECK(ncclGetVersion(&ncclVersion));
    int deviceCount = 0;
    cudaError_t e = cudaGetDeviceCount(&deviceCount);
    if (e != cudaSuccess)
        Die("no CUDA devices: cudaGetDeviceCount: %s (%s)", cudaGetErrorName(e),
            cudaGetErrorString(e));

    // Local rank: from the launcher; without one, one process per node is assumed (or, with
    // several processes, ranks packed onto the devices in order).
    int localRank = sh.who.localRank;
    if (!sh.who.localRankKnown && sh.who.nprocs > 1)
    {
        int perNode = std::max(1, deviceCount / perProc);
        localRank = sh.who.proc % perNode;
        Note("no local rank in the environment (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, "
             "SLURM_LOCALID, MPI_LOCALRANKID); assuming %d processes per node, local rank %d",
             perNode, localRank);
    }
    int gpu0 = localRank * perProc;
    if (const char* dev = Env("NCCL_TESTS_DEVICE"))
        gpu0 = IntArg("NCCL_TESTS_DEVICE", dev, 0, INT_MAX);
    else if (gpu0 + perProc > deviceCount && deviceCount == perProc)
        gpu0 =
            0; // the launcher made only this process's GPUs visible (CUDA_VISIBLE_DEVICES per rank)
    if (gpu0 + perProc > deviceCount)
        Die("needs devices %d..%d (local rank %d x %d threads x %d GPUs) but %d are visible", gpu0,
            gpu0 + perProc - 1, localRank, o.nThreads, o.nGpus, deviceCount);

    const bool main0 = sh.who.proc == 0;
    const std::string host = HostName();
    if (main0)
    {
        std::printf("# nccl-tests-like collective-bench %s (%s) nccl-headers=%d nccl-library=%d\n",
                    COLLECTIVE_BENCH_VERSION, o.coll->perfName, NCCL_VERSION_CODE, ncclVersion);
        std::printf("# Collective test starting: %s\n", o.coll->perfName);
        std::printf(
            "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d "
            "iters: %d agg iters: %d validation: %d graph: 0\n",
            o.nThreads, o.nGpus, o.minBytes, o.maxBytes,
            o.stepFactor > 1 ? o.stepFactor : o.stepBytes, o.stepFactor > 1 ? "factor" : "bytes",
            o.warmupIters, o.iters, o.aggIters, o.check);
        if (o.blocking)
            std::printf(
                "# Blocking Enabled: wait for completion and barrier after each collective \n");
        if (o.parallelInit)
            std::printf("# Parallel Init Enabled: threads call into NcclInitRank concurrently \n");
        std::printf("#\n");
    }

    // Devices: properties, memory limit.
    std::string lines;
    size_t maxMem = SIZE_MAX;
    std::vector<int> gpus(perProc);
    for (int i = 0; i < perProc; i++)
    {
        gpus[i] = gpu0 + i;
        cudaDeviceProp prop{};
        CUDACHECK(cudaGetDeviceProperties(&prop, gpus[i]));
        char line[1024];
        std::snprintf(line, sizeof(line),
                      "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s\n",
                      sh.who.proc * perProc + i, 0, int(getpid()), host.c_str(), gpus[i],
                      prop.pciBusID, prop.name);
        lines += line;
        maxMem = std::min(maxMem, size_t(prop.totalGlobalMem));
    }

    // The id: process 0 creates it; with several processes it goes through the rendezvous file.
    Rendezvous rdv(sh.who.proc, sh.who.nprocs);
    sh.rdv = &rdv;
    ncclUniqueId id{};
    if (main0)
        NCCLCHECK(ncclGetUniqueId(&id));
    if (sh.who.nprocs > 1)
        id = rdv.ShareId(main0 ? &id : nullptr);
    // Device lines come back to process 0 (each process writes them once it has the id, so when
    // process 0 has them all, everyone has the id and its file can go).
    std::vector<std::string> allLines = rdv.Gather("dev", lines);
    if (main0)
    {
        rdv.RemoveIdFile();
        std::printf("# Using devices\n");
        for (const std::string& l : allLines)
            std::printf("%s", l.c_str());
        if (sh.simulated && o.check)
            std::printf(
                "# Device memory holds no data under eidolon: results are not checked (N/A)\n");
    }

    // nccl-tests: send, receive and (with checking) expected buffers of maxBytes, plus 1 GiB.
    sh.maxBytes = o.maxBytes;
    size_t reserve = size_t(1) << 30;
    size_t memMax = maxMem > reserve ? (maxMem - reserve) / (o.check ? 3 : 2) : 0;
    if (sh.maxBytes > memMax)
    {
        sh.maxBytes = memMax;
        if (main0)
            std::printf("#\n# Reducing maxBytes to %zu due to memory limitation\n", sh.maxBytes);
    }
    if (o.minBytes > sh.maxBytes)
        Die("minbytes %zu does not fit in device memory (at most %zu)", o.minBytes, sh.maxBytes);

    ThreadSync sync(o.nThreads);
    sh.sync = &sync;
    Watchdog watchdog;
    sh.watchdog = &watchdog;

    sh.threads.resize(o.nThreads);
    for (int t = 0; t < o.nThreads; t++)
    {
        ThreadCtx& tc = sh.threads[t];
        tc.thread = t;
        for (int i = 0; i < o.nGpus; i++)
        {
            int local = t * o.nGpus + i;
            tc.gpus.push_back(gpus[local]);
            tc.ranks.push_back(sh.who.proc * perProc + local);
        }
        size_t ng = tc.gpus.size();
        tc.comms.assign(ng, nullptr);
        tc.streams.assign(ng, nullptr);
        tc.send.assign(ng, nullptr);
        tc.recv.assign(ng, nullptr);
        tc.wrong.assign(ng, nullptr);
        tc.start.assign(ng, nullptr);
        tc.stop.assign(ng, nullptr);
        for (size_t i = 0; i < ng; i++)
        {
            CUDACHECK(cudaSetDevice(tc.gpus[i]));
            CUDACHECK(cudaMalloc(&tc.send[i], std::max<size_t>(sh.maxBytes, 1)));
            CUDACHECK(cudaMalloc(&tc.recv[i], std::max<size_t>(sh.maxBytes, 1)));
            CUDACHECK(
                cudaMalloc(reinterpret_cast<void**>(&tc.wrong[i]), sizeof(unsigned long long)));
            if (o.streamNull)
                tc.streams[i] = nullptr;
            else
                CUDACHECK(cudaStreamCreateWithFlags(&tc.streams[i], cudaStreamNonBlocking));
            CUDACHECK(cudaEventCreate(&tc.start[i]));
            CUDACHECK(cudaEventCreate(&tc.stop[i]));
        }
    }

    // Communicators (unless each thread makes its own, -p 1).
    if (!o.parallelInit)
    {
        watchdog.Arm("NCCL communicator initialization",
                     EnvSeconds("EIDOLON_BENCH_INIT_TIMEOUT", 900));
        if (sh.who.nprocs == 1)
        {
            std::vector<ncclComm_t> comms(perProc);
            NCCLCHECK(ncclCommInitAll(comms.data(), perProc, gpus.data()));
            for (int t = 0; t < o.nThreads; t++)
                for (int i = 0; i < o.nGpus; i++)
                    sh.threads[t].comms[i] = comms[t * o.nGpus + i];
        }
        else
        {
            NCCLCHECK(ncclGroupStart());
            for (int t = 0; t < o.nThreads; t++)
                for (int i = 0; i < o.nGpus; i++)
                {
                    ThreadCtx& tc = sh.threads[t];
                    CUDACHECK(cudaSetDevice(tc.gpus[i]));
                    NCCLCHECK(ncclCommInitRank(&tc.comms[i], sh.nranks, id, tc.ranks[i]));
                }
            NCCLCHECK(ncclGroupEnd());
        }
        watchdog.Disarm();
    }

    if (main0)
    {
        const char* timeName = o.reportCpuTime ? "cputime" : "time";
        std::printf("#\n");
        std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
                    "in-place          \n",
                    "", "", "", "", "");
        std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
                    "count", "type", "redop", "root", timeName, "algbw", "busbw", "#wrong",
                    timeName, "algbw", "busbw", "#wrong");
        std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
                    "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                    "(GB/s)", "");
        std::fflush(stdout);
    }

    std::vector<std::thread> workers;
    for (int t = o.nThreads - 1; t >= 1; t--)
        workers.emplace_back([&sh, t, &id] { ThreadMain(sh, sh.threads[t], &id); });
    ThreadMain(sh, sh.threads[0], &id);
    for (std::thread& w : workers)
        w.join();

    int errors = 0;
    double bwSum = 0;
    int bwCount = 0;
    for (ThreadCtx& tc : sh.threads)
    {
        errors += tc.errors;
        bwSum += tc.bwSum;
        bwCount += tc.bwCount;
    }
    for (ThreadCtx& tc : sh.threads)
        for (size_t i = 0; i < tc.gpus.size(); i++)
        {
            NCCLCHECK(ncclCommDestroy(tc.comms[i]));
            CUDACHECK(cudaSetDevice(tc.gpus[i]));
            CUDACHECK(cudaFree(tc.send[i]));
            CUDACHECK(cudaFree(tc.recv[i]));
            CUDACHECK(cudaFree(tc.wrong[i]));
            CUDACHECK(cudaEventDestroy(tc.start[i]));
            CUDACHECK(cudaEventDestroy(tc.stop[i]));
            if (tc.streams[i])
                CUDACHECK(cudaStreamDestroy(tc.streams[i]));
        }
    if (main0)
    {
        double avg = bwCount ? bwSum / bwCount : 0;
        std::printf("# Out of bounds values : %d %s\n", errors, errors ? "FAILED" : "OK");
        std::printf("# Avg bus bandwidth    : %g \n", avg);
        std::printf("#\n");
        std::printf("# Collective test concluded: %s\n", o.coll->perfName);
        std::fflush(stdout);
    }
    return errors ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif // COLLECTIVE_BENCH_BUILTIN
