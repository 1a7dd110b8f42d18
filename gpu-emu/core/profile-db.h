// Profile database: measured kernel durations (format in gpu-emu/README.md), first in the chain.
#pragma once

#include "cost-model.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace eidolon::gpu
{

struct ProfileEntry
{
    std::string gpu;
    std::string kernel; // demangled name as the profiler prints it (a leading "void " is ignored)
    Dim3 grid;
    Dim3 block;
    uint64_t sharedMemBytes = 0;
    int64_t argBytes = -1; // -1: matches any
    double durationUs = 0;
    uint64_t samples = 1;
};

// The matching form of a kernel name: demangled, leading "void " and surrounding spaces removed.
std::string NormalizeKernelName(const std::string& name);

// Demangles an Itanium C++ ABI name ("_Z4axpyfPKfPfi" -> "axpy(float, float const*, float*, int)");
// returns the input when it is not mangled.
std::string Demangle(const std::string& mangled);

class ProfileDb : public CostProvider
{
public:
    const char* Name() const override { return "profile-db"; }
    std::optional<Ns> PriceKernel(const KernelLaunch& launch, const GpuSpec& spec) override;

    void Add(const ProfileEntry& entry);
    size_t Size() const { return m_entries.size(); }
    const std::vector<ProfileEntry>& Entries() const { return m_entries; }

    // Reads a database file and adds its entries; throws std::runtime_error on a malformed file.
    void Load(const std::string& path);
    // Writes all entries in the database format.
    void Save(const std::string& path) const;

    // Adds the kernels of a PyTorch profiler (Kineto) Chrome trace measured on `gpu`; entries with
    // the same key are merged into one whose duration is the median. Returns the kernels read.
    size_t ImportKinetoTrace(const std::string& path, const std::string& gpu);

private:
    static std::string Key(const std::string& gpu, const std::string& kernel, Dim3 grid, Dim3 block,
                           uint64_t sharedMem);
    std::vector<ProfileEntry> m_entries;
    std::unordered_multimap<std::string, size_t> m_index;
};

} // namespace eidolon::gpu
