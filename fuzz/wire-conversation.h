// The wire fuzzer's input format: a conversation of a few peers with eidolon-sim, as a sequence
// of messages, each [peer: 1 byte][length: 2 bytes, little-endian][that many bytes]; the bytes
// are handed to SimEndpoint::Deliver as a message from socket "p<peer % 4>". A message cut short
// by the end of the input is delivered as far as it goes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace eidolon::fuzz
{

inline std::vector<std::pair<std::string, std::string>>
SplitConversation(const uint8_t* data, size_t size)
{
    std::vector<std::pair<std::string, std::string>> messages;
    size_t at = 0;
    while (at + 3 <= size)
    {
        std::string peer = "p" + std::to_string(data[at] % 4);
        size_t length = size_t(data[at + 1]) | size_t(data[at + 2]) << 8;
        at += 3;
        length = std::min(length, size - at);
        messages.emplace_back(peer, std::string(reinterpret_cast<const char*>(data + at), length));
        at += length;
    }
    return messages;
}

inline std::string
JoinConversation(const std::vector<std::pair<int, std::string>>& messages)
{
    std::string out;
    for (const auto& [peer, bytes] : messages)
    {
        out += char(peer);
        out += char(bytes.size() & 0xff);
        out += char(bytes.size() >> 8);
        out += bytes;
    }
    return out;
}

} // namespace eidolon::fuzz
