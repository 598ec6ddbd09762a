#pragma once
// Finds special tokens written in text ("<|im_end|>") before the text is tokenized. Matching is
// leftmost-longest over a byte trie, as Hugging Face's added-vocabulary matcher does, and costs
// O(text x longest token) however many special tokens the vocabulary has (Gemma 3 has thousands).
#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace tandem::tokenizer {

class SpecialMatcher {
  public:
    void add(std::string_view text, int32_t id);
    bool empty() const { return nodes_.size() <= 1; }

    // A piece of text to tokenize as text ({begin, end} bytes), or a special token id.
    struct Fragment {
        size_t begin = 0, end = 0;
        int32_t token = -1;  // >= 0: this fragment is that token
    };
    std::vector<Fragment> split(std::string_view text) const;

  private:
    // Longest token starting at text[pos]: {id, length}, or {-1, 0}.
    std::pair<int32_t, size_t> longest_at(std::string_view text, size_t pos) const;

    struct Node {
        int32_t token = -1;
    };
    std::vector<Node> nodes_{Node{}};
    std::unordered_map<uint64_t, uint32_t> edges_;  // (node << 8 | byte) -> child
    std::array<bool, 256> first_byte_{};
};

}  // namespace tandem::tokenizer
