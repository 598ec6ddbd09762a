#include "tokenizer/special_matcher.h"

namespace tandem::tokenizer {

void SpecialMatcher::add(std::string_view text, int32_t id) {
    if (text.empty()) return;
    first_byte_[uint8_t(text[0])] = true;
    uint32_t node = 0;
    for (char c : text) {
        const uint64_t key = (uint64_t(node) << 8) | uint8_t(c);
        auto it = edges_.find(key);
        if (it == edges_.end()) {
            nodes_.push_back(Node{});
            it = edges_.emplace(key, uint32_t(nodes_.size() - 1)).first;
        }
        node = it->second;
    }
    // Several ids with one text: keep the first (the lowest id, the one tokenizers emit).
    if (nodes_[node].token < 0) nodes_[node].token = id;
}

std::pair<int32_t, size_t> SpecialMatcher::longest_at(std::string_view text, size_t pos) const {
    std::pair<int32_t, size_t> best{-1, 0};
    uint32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
        auto it = edges_.find((uint64_t(node) << 8) | uint8_t(text[i]));
        if (it == edges_.end()) break;
        node = it->second;
        if (nodes_[node].token >= 0) best = {nodes_[node].token, i + 1 - pos};
    }
    return best;
}

std::vector<SpecialMatcher::Fragment> SpecialMatcher::split(std::string_view text) const {
    std::vector<Fragment> out;
    size_t plain = 0;  // start of the current run of plain text
    for (size_t pos = 0; pos < text.size();) {
        if (first_byte_[uint8_t(text[pos])]) {
            const auto [id, len] = longest_at(text, pos);
            if (id >= 0) {
                if (pos > plain) out.push_back({plain, pos, -1});
                out.push_back({pos, pos + len, id});
                pos += len;
                plain = pos;
                continue;
            }
        }
        ++pos;
    }
    if (plain < text.size()) out.push_back({plain, text.size(), -1});
    return out;
}

}  // namespace tandem::tokenizer
