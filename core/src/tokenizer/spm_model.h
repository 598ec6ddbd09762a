#pragma once
// SentencePiece-style BPE (llama, gemma): characters are merged pair by pair, always the pair
// whose joined text is the token with the highest score (leftmost on ties), as llama.cpp's
// llm_tokenizer_spm and SentencePiece's BPE model do. What stays unmerged and is not a token falls
// back to <0xNN> byte tokens (or unk when the vocabulary has none).
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tandem/tokenizer/vocab.h"
#include "tokenizer/token_index.h"

namespace tandem::tokenizer {

class SpmModel {
  public:
    SpmModel(const Vocab& vocab, const TokenIndex& index);
    // Appends the ids of text whose spaces are already U+2581.
    void encode(std::string_view text, std::vector<int32_t>& out) const;

  private:
    const Vocab& vocab_;
    const TokenIndex& index_;
    std::array<int32_t, 256> byte_token_{};  // <0xNN> (or the byte itself as a token), or -1
};

}  // namespace tandem::tokenizer
