#include "fatbin.h"

#include <cstring>

namespace eidolon::gpu
{
namespace
{

constexpr uint32_t kWrapperMagic = 0x466243b1; // __fatBinC_Wrapper_t::magic
constexpr uint32_t kFatbinMagic = 0xBA55ED50;  // fat binary container header
constexpr uint8_t kFormatHalf = 0x03;          // EIFMT_HVAL: a 16-bit value inline
constexpr uint8_t kFormatSized = 0x04;         // EIFMT_SVAL: a 16-bit size, then the payload
constexpr uint8_t kFormatNone = 0x01;          // EIFMT_NVAL: no value
constexpr uint8_t kParamSizeAttribute = 0x19;  // EIATTR_CBANK_PARAM_SIZE
const char kInfoPrefix[] = ".nv.info.";

template<typename T>
bool
Read(const unsigned char* base, uint64_t size, uint64_t offset, T& value)
{
    if (offset > size || sizeof(T) > size - offset)
    {
        return false;
    }
    std::memcpy(&value, base + offset, sizeof(T));
    return true;
}

// Total parameter bytes in one .nv.info.<kernel> section, or -1.
int64_t
ParamBytes(const unsigned char* info, uint64_t size)
{
    uint64_t p = 0;
    while (p + 4 <= size)
    {
        uint8_t format = info[p];
        uint8_t attribute = info[p + 1];
        uint16_t value = 0;
        Read(info, size, p + 2, value);
        if (format == kFormatHalf && attribute == kParamSizeAttribute)
        {
            return value;
        }
        if (format == kFormatSized)
        {
            p += 4 + uint64_t(value);
        }
        else if (format == kFormatNone)
        {
            p += 2;
        }
        else
        {
            p += 4;
        }
    }
    return -1;
}

} // namespace

void
AddKernelParamBytes(const unsigned char* elf, uint64_t size,
                    std::unordered_map<std::string, int64_t>& out)
{
    if (size < 64 ||
        std::memcmp(elf,
                    "\x7f"
                    "ELF",
                    4) != 0 ||
        elf[4] != 2) // ELF64 only
    {
        return;
    }
    uint64_t sectionTable = 0;
    uint16_t entrySize = 0, count = 0, namesIndex = 0;
    if (!Read(elf, size, 0x28, sectionTable) || !Read(elf, size, 0x3A, entrySize) ||
        !Read(elf, size, 0x3C, count) || !Read(elf, size, 0x3E, namesIndex) || entrySize < 64 ||
        namesIndex >= count)
    {
        return;
    }
    auto section = [&](uint16_t index, uint32_t& name, uint64_t& offset, uint64_t& bytes)
    {
        uint64_t header = sectionTable + uint64_t(index) * entrySize;
        return Read(elf, size, header, name) && Read(elf, size, header + 0x18, offset) &&
               Read(elf, size, header + 0x20, bytes) && offset <= size && bytes <= size - offset;
    };
    uint32_t unused = 0;
    uint64_t namesOffset = 0, namesSize = 0;
    if (!section(namesIndex, unused, namesOffset, namesSize))
    {
        return;
    }
    for (uint16_t i = 0; i < count; ++i)
    {
        uint32_t name = 0;
        uint64_t offset = 0, bytes = 0;
        if (!section(i, name, offset, bytes) || name >= namesSize)
        {
            continue;
        }
        const char* text = reinterpret_cast<const char*>(elf + namesOffset + name);
        size_t length = strnlen(text, namesSize - name);
        if (length == namesSize - name ||
            std::strncmp(text, kInfoPrefix, sizeof(kInfoPrefix) - 1) != 0)
        {
            continue;
        }
        int64_t params = ParamBytes(elf + offset, bytes);
        if (params >= 0)
        {
            out[std::string(text + sizeof(kInfoPrefix) - 1, length - (sizeof(kInfoPrefix) - 1))] =
                params;
        }
    }
}

namespace
{
// Walks the entries of a fat binary container.
void
AddContainer(const unsigned char* fatbin, std::unordered_map<std::string, int64_t>& result)
{
    uint32_t magic = 0;
    uint16_t headerSize = 0;
    uint64_t fatSize = 0;
    std::memcpy(&magic, fatbin, 4);
    std::memcpy(&headerSize, fatbin + 6, 2);
    std::memcpy(&fatSize, fatbin + 8, 8);
    if (magic != kFatbinMagic || fatSize > (uint64_t(1) << 34))
    {
        return;
    }
    const uint64_t total = uint64_t(headerSize) + fatSize;
    uint64_t entry = headerSize;
    while (entry + 16 <= total)
    {
        uint32_t entryHeader = 0;
        uint64_t payload = 0;
        if (!Read(fatbin, total, entry + 4, entryHeader) ||
            !Read(fatbin, total, entry + 8, payload) || entryHeader < 16 ||
            entryHeader > total - entry || payload > total - entry - entryHeader)
        {
            break;
        }
        AddKernelParamBytes(fatbin + entry + entryHeader, payload,
                            result); // skips non-ELF (PTX, compressed)
        entry += entryHeader + payload;
    }
}
} // namespace

std::unordered_map<std::string, int64_t>
ModuleImageParamBytes(const void* image)
{
    std::unordered_map<std::string, int64_t> result;
    const auto* bytes = static_cast<const unsigned char*>(image);
    if (!bytes)
    {
        return result;
    }
    if (std::memcmp(bytes,
                    "\x7f"
                    "ELF",
                    4) == 0 &&
        bytes[4] == 2)
    {
        // An ELF image's extent: its section header table comes last.
        uint64_t sectionTable = 0;
        uint16_t entrySize = 0, count = 0;
        std::memcpy(&sectionTable, bytes + 0x28, 8);
        std::memcpy(&entrySize, bytes + 0x3A, 2);
        std::memcpy(&count, bytes + 0x3C, 2);
        if (sectionTable < (uint64_t(1) << 34))
        {
            AddKernelParamBytes(bytes, sectionTable + uint64_t(entrySize) * count, result);
        }
        return result;
    }
    uint32_t magic = 0;
    std::memcpy(&magic, bytes, 4);
    if (magic == kFatbinMagic)
    {
        AddContainer(bytes, result);
    }
    return result;
}

std::unordered_map<std::string, int64_t>
KernelParamBytes(const void* wrapper)
{
    std::unordered_map<std::string, int64_t> result;
    if (!wrapper)
    {
        return result;
    }
    struct Wrapper
    {
        int magic;
        int version;
        const unsigned long long* data;
        void* filenameOrFatbins;
    } header;
    std::memcpy(&header, wrapper, sizeof(header));
    if (uint32_t(header.magic) != kWrapperMagic || !header.data)
    {
        return result;
    }
    AddContainer(reinterpret_cast<const unsigned char*>(header.data), result);
    return result;
}

} // namespace eidolon::gpu
