// Reads kernel parameter sizes out of the fat binaries nvcc embeds in a program, so that the
// profile database can key on argument bytes. Only what is needed: the uncompressed ELF cubins'
// ".nv.info.<kernel>" sections and their EIATTR_CBANK_PARAM_SIZE attribute.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace eidolon::gpu
{

// Mangled kernel name -> total parameter bytes, for every kernel of every uncompressed cubin in
// the fat binary `wrapper` points at (the __fatDeviceText the program passes to
// __cudaRegisterFatBinary). Malformed or compressed parts are skipped; never reads outside the
// sizes the headers declare.
std::unordered_map<std::string, int64_t> KernelParamBytes(const void* wrapper);

// The same for a module image as cuModuleLoadData receives it: an ELF cubin or a fat binary
// container (PTX and anything else give nothing).
std::unordered_map<std::string, int64_t> ModuleImageParamBytes(const void* image);

// The same for one ELF cubin image of `size` bytes.
void AddKernelParamBytes(const unsigned char* elf, uint64_t size,
                         std::unordered_map<std::string, int64_t>& out);

} // namespace eidolon::gpu
