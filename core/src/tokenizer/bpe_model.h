#pragma once
// Byte-level BPE (GPT-2 family): a pre-token's bytes, spelled in GPT-2's byte alphabet, are merged
// pair by pair in merge-rank order (lowest rank first, leftmost first on ties), as Hugging Face's
// BPE model does. A priority queue over adjacent pairs keeps a word O(n log n).
#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tandem/tokenizer/vocab.h"
#include "tokenizer/token_index.h"

namespace tandem::tokenizer {

class BpeModel {
  public:
    // Merges whose parts or result are not tokens are skipped (they can never apply).
    BpeModel(const Vocab& vocab, const TokenIndex& index, bool ignore_merges);
    // Appends the ids of one pre-token (raw bytes).
    void encode_word(std::string_view bytes, std::vector<int32_t>& out) const;
    size_t skipped_merges() const { return skipped_; }

  private:
    struct Merge {
        int32_t rank;
        int32_t result;
    };
    const TokenIndex& index_;
    bool ignore_merges_;
    int32_t unk_id_;
    std::array<int32_t, 256> byte_token_{};       // id of each byte's alphabet character, or -1
    std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id) -> merge
    size_t skipped_ = 0;
};

}  // namespace tandem::tokenizer
