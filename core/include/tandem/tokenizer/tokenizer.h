#pragma once
// Text <-> token ids for a Vocab: byte-level BPE (GPT-2 family, with the pre-tokenizer regexes
// named by Vocab::pre) and SentencePiece-style BPE (llama/gemma: scores, byte fallback, U+2581
// spaces). Behaviour follows llama.cpp's llama-vocab, whose test vectors come from Hugging Face
// tokenizers. Thread-safe after construction (encode/decode are const and keep no state).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/tokenizer/vocab.h"

namespace tandem::tokenizer {

class Tokenizer {
  public:
    // Builds the lookup tables and compiles the pre-tokenizer; throws tandem::Error for an
    // unknown Vocab::pre or a vocabulary that cannot work (no tokens, bad merges).
    explicit Tokenizer(Vocab vocab);
    ~Tokenizer();
    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;

    const Vocab& vocab() const;

    // add_special: prepend BOS / append EOS as the vocabulary asks (add_bos/add_eos).
    // parse_special: control and unknown-type tokens written in the text ("<|im_end|>") become
    // their ids; when false they are tokenized as plain text. User-defined tokens are always
    // matched whole (as llama.cpp and HF tokenizers do). Invalid UTF-8 is kept byte for byte
    // (byte tokens), never dropped.
    std::vector<int32_t> encode(std::string_view text, bool add_special = true,
                                bool parse_special = false) const;

    // The text of a sequence. render_special: control tokens are written out ("<|im_end|>");
    // otherwise they produce nothing. SentencePiece vocabularies with add_space_prefix drop the
    // one space that encode added in front.
    std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

    // The bytes one token stands for (no space stripping); may be part of a UTF-8 character.
    std::string token_to_piece(int32_t id, bool render_special = true) const;

    // How encode cuts text before merging: special tokens (as with parse_special) and, for
    // byte-level BPE, the pre-tokenizer's pieces. SentencePiece pieces are the text between
    // special tokens. For inspection and tests; the pieces concatenate back to text.
    std::vector<std::string_view> pre_tokenize(std::string_view text,
                                               bool parse_special = false) const;

    // The id of a token string as the vocabulary spells it, or -1.
    int32_t find(std::string_view token) const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::tokenizer
