#pragma once
// Frames of an established channel: u32 big-endian body length, then ChaCha20-Poly1305 (IETF)
// ciphertext + 16-byte tag, the header as associated data. Each direction has its own key and a
// counter that is the nonce and is never sent: a replayed, dropped, reordered or altered frame
// fails to decrypt, and the channel is then closed.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "tandem/net/wire.h"

namespace tandem::net {

inline constexpr size_t kFrameHeader = 4;
inline constexpr size_t kFrameTag = 16;
inline constexpr size_t kDefaultMaxMessage = size_t(64) << 20;

class FrameSealer {
  public:
    explicit FrameSealer(const Key32& key);
    ~FrameSealer();
    // header + ciphertext + tag, ready to write.
    std::vector<uint8_t> seal(std::span<const uint8_t> plain);
    uint64_t counter() const { return counter_; }

  private:
    Key32 key_{};
    uint64_t counter_ = 0;
};

class FrameOpener {
  public:
    FrameOpener(const Key32& key, size_t max_message);
    ~FrameOpener();
    // Length of the body that follows `header`; throws before anything is allocated when it is
    // shorter than a tag or longer than max_message + tag.
    size_t body_length(std::span<const uint8_t, kFrameHeader> header) const;
    // Throws tandem::Error when the tag does not verify (tampered, replayed or reordered).
    std::vector<uint8_t> open(std::span<const uint8_t, kFrameHeader> header,
                              std::span<const uint8_t> body);
    uint64_t counter() const { return counter_; }

  private:
    Key32 key_{};
    size_t max_message_;
    uint64_t counter_ = 0;
};

}  // namespace tandem::net
