// The size of the buffer a Beast parser reads into, for the server's sessions and the client
// alike. Beast parses a chunk-size line with its extensions, and the whole trailer block, only
// once it sits in the read buffer, and bounds neither by the header limit; the buffer's own
// limit bounds them (a longer one is error::buffer_overflow), well under the 64 KiB at which
// Beast's field storage throws from inside the read. Bodies pass through the buffer in pieces,
// so this does not bound them.
#pragma once

#include <cstddef>

namespace perfscope::server {

// What the buffer may hold beyond the header block itself.
inline constexpr std::size_t kReadSlackBytes = 32 << 10;
// The header limit (at most 32 KiB of it counts) plus the slack.
constexpr std::size_t read_buffer_bytes(std::size_t header_limit) {
  return (header_limit < (32 << 10) ? header_limit : (32 << 10)) + kReadSlackBytes;
}

}  // namespace perfscope::server
