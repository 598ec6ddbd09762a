#include "tokenizer/spm_model.h"

#include <cstdio>
#include <queue>

#include "tokenizer/utf8.h"

namespace tandem::tokenizer {

SpmModel::SpmModel(const Vocab& vocab, const TokenIndex& index) : vocab_(vocab), index_(index) {
    for (int b = 0; b < 256; ++b) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "<0x%02X>", b);
        int32_t id = index.find(hex);
        if (id < 0) id = index.find(std::string_view(reinterpret_cast<const char*>(&b), 1));
        byte_token_[b] = id;
    }
}

void SpmModel::encode(std::string_view text, std::vector<int32_t>& out) const {
    if (text.empty()) return;
    struct Symbol {
        uint32_t begin, len;
        int32_t prev, next;
    };
    std::vector<Symbol> sym;
    sym.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        size_t len = utf8_valid_len(text, pos);
        if (len == 0) len = 1;  // a broken byte is a symbol of its own
        const auto i = int32_t(sym.size());
        sym.push_back({uint32_t(pos), uint32_t(len), i - 1, -1});
        if (i > 0) sym[i - 1].next = i;
        pos += len;
    }

    struct Candidate {
        float score;
        int32_t left, right;
        uint32_t len;
        bool operator<(const Candidate& o) const {  // the queue's top: best score, then leftmost
            return score != o.score ? score < o.score : left > o.left;
        }
    };
    std::priority_queue<Candidate> queue;
    const auto consider = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const uint32_t len = sym[left].len + sym[right].len;
        const int32_t id = index_.find(text.substr(sym[left].begin, len));
        if (id < 0) return;
        const float score = vocab_.scores.empty() ? 0.0f : vocab_.scores[size_t(id)];
        queue.push({score, left, right, len});
    };
    for (int32_t i = 1; i < int32_t(sym.size()); ++i) consider(i - 1, i);

    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Symbol& l = sym[c.left];
        Symbol& r = sym[c.right];
        // Stale when either side has merged since (its length changed or it is gone).
        if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (l.next >= 0) sym[l.next].prev = c.left;
        consider(l.prev, c.left);
        consider(c.left, l.next);
    }

    for (int32_t i = 0; i >= 0; i = sym[i].next) {
        const std::string_view piece = text.substr(sym[i].begin, sym[i].len);
        const int32_t id = index_.find(piece);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        bool have_bytes = true;
        for (char c : piece) have_bytes = have_bytes && byte_token_[uint8_t(c)] >= 0;
        if (have_bytes) {
            for (char c : piece) out.push_back(byte_token_[uint8_t(c)]);
        } else if (vocab_.unk_id >= 0) {
            out.push_back(vocab_.unk_id);  // SentencePiece without byte fallback: one unk
        }
    }
}

}  // namespace tandem::tokenizer
