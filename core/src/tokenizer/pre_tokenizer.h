#pragma once
// The regex pre-tokenizers of byte-level BPE vocabularies, by llama.cpp's tokenizer.ggml.pre name.
// A pre-tokenizer is a list of regexes applied in turn, as Hugging Face's Sequence of Split
// pre-tokenizers with the "Isolated" behaviour: each regex cuts every current piece into its
// matches and the gaps between them (both kept), and sees only that piece (anchors and look-ahead
// stop at its ends). The regexes run on ICU, so \p{L}, \p{N}, \s are Unicode's categories.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::tokenizer {

// The regexes of a pre name in Hugging Face's spelling, or empty when the name is unknown.
std::vector<std::string> pre_tokenizer_regexes(std::string_view pre);

// True for the vocabularies whose BPE emits a pre-token whole when it is itself a token
// (Hugging Face's ignore_merges: Llama 3, Tekken).
bool pre_tokenizer_ignores_merges(std::string_view pre);

class PreTokenizer {
  public:
    // Throws tandem::Error naming pre when it is unknown or a regex does not compile.
    explicit PreTokenizer(std::string_view pre);
    ~PreTokenizer();
    PreTokenizer(PreTokenizer&&) noexcept;

    // Byte ranges [begin, end) of the pieces of text, in order, covering all of it.
    // Invalid UTF-8 bytes take part in matching as U+FFFD but stay their own bytes.
    std::vector<std::pair<size_t, size_t>> split(std::string_view text) const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::tokenizer
