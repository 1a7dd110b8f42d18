// eidolon-profile-import: adds the GPU kernels of PyTorch profiler (Kineto) Chrome traces,
// measured on a real GPU, to an eidolon profile database (format: gpu-emu/README.md).
//   eidolon-profile-import --gpu H100-SXM5-80GB --db profiles.json trace.json [more traces...]
// Entries already in the database are kept; a kernel seen in several traces gets one entry per
// trace-file median (the first entry of a key wins when pricing).
#include "profile-db.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>

int
main(int argc, char** argv)
{
    CLI::App app{"Import PyTorch profiler (Kineto) Chrome traces into an eidolon profile database"};
    std::string gpu;
    std::string dbPath;
    std::vector<std::string> traces;
    app.add_option("--gpu", gpu, "GPU model the traces were measured on (a topologies/gpus name)")
        ->required();
    app.add_option("--db", dbPath, "profile database to create or extend")->required();
    app.add_option("traces", traces, "Chrome trace JSON files")
        ->required()
        ->check(CLI::ExistingFile);
    CLI11_PARSE(app, argc, argv);

    eidolon::gpu::ProfileDb db;
    try
    {
        if (std::ifstream(dbPath).good())
        {
            db.Load(dbPath);
        }
        size_t before = db.Size();
        for (const auto& trace : traces)
        {
            size_t kernels = db.ImportKinetoTrace(trace, gpu);
            std::printf("%s: %zu kernel executions\n", trace.c_str(), kernels);
        }
        db.Save(dbPath);
        std::printf("%s: %zu entries (%zu new)\n", dbPath.c_str(), db.Size(), db.Size() - before);
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "eidolon-profile-import: %s\n", e.what());
        return 1;
    }
    return 0;
}
