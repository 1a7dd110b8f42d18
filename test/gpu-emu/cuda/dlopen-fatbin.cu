// dlopen() of a library with a fat binary whose loading reads the clock on another thread, first
// before the process has joined the simulator (its registrations must not join), then, with the
// bridge connected, whose loading makes another thread's first CUDA calls. Run under `eidolon run`;
// a regression hangs (ctest's timeout).
// Usage: dlopen-fatbin <library loaded first> <library loaded after joining>
#include "check.h"

#include <dlfcn.h>
#include <stdlib.h>

using Launch = int (*)(float*, int);
using ThreadResult = int (*)();

static void
LoadAndUse(const char* path, bool launch)
{
    // RTLD_LOCAL: the two copies define the same weak symbols and must not interpose.
    void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(library != nullptr);
    if (!library)
    {
        std::printf("dlopen %s: %s\n", path, dlerror());
        return;
    }
    auto result = reinterpret_cast<ThreadResult>(dlsym(library, "FatbinLibraryThreadResult"));
    CHECK(result && result() == 0); // the loading thread's CUDA calls succeeded
    if (result && result() != 0)
    {
        std::printf("%s: the loading thread got %d\n", path, result());
    }
    if (launch)
    {
        auto run = reinterpret_cast<Launch>(dlsym(library, "FatbinLibraryLaunch"));
        float* x = nullptr;
        CHECK_CUDA(cudaMalloc(&x, 1024 * sizeof(float)));
        CHECK(run && run(x, 1024) == 0);
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaFree(x));
    }
}

int
main(int argc, char** argv)
{
    if (argc != 3)
    {
        std::printf("usage: dlopen-fatbin <library> <library>\n");
        return 2;
    }
    LoadAndUse(argv[1], false); // registrations before the process's first CUDA call
    CHECK_CUDA(cudaFree(nullptr));
    int count = 0;
    CHECK_CUDA(cudaGetDeviceCount(&count));
    CHECK(count >= 1);
    setenv("FATBIN_LIBRARY_CALLS_CUDA", "1", 1);
    LoadAndUse(argv[2], true); // joined: ZeroMQ's I/O thread is running
    std::printf("dlopen-fatbin: %s\n", g_failures ? "FAILED" : "passed");
    return g_failures ? 1 : 0;
}
