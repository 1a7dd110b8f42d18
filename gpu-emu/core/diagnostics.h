// Messages from gpu-emu to the user's stderr. Nothing in gpu-emu ever ends the program.
#pragma once

#include <string>

namespace eidolon::gpu
{

// Prints "eidolon: <message>" on stderr.
void Warn(const std::string& message);

// Prints once per process and name: "eidolon: <api> is not supported by eidolon (returns <what>)".
void WarnUnsupportedOnce(const char* api, const char* returned);

} // namespace eidolon::gpu
