#include "tokenizer/bpe_model.h"

#include <queue>

#include "tandem/common/error.h"
#include "tokenizer/byte_alphabet.h"

namespace tandem::tokenizer {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}

}  // namespace

BpeModel::BpeModel(const Vocab& vocab, const TokenIndex& index, bool ignore_merges)
    : index_(index), ignore_merges_(ignore_merges), unk_id_(vocab.unk_id) {
    const auto& alphabet = ByteAlphabet::instance();
    for (int b = 0; b < 256; ++b) byte_token_[b] = index.find(alphabet.encode(uint8_t(b)));
    merges_.reserve(vocab.merges.size());
    std::string joined;
    for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
        const std::string& m = vocab.merges[rank];
        // "left right"; a left part may not start with a space, so the first space splits.
        const size_t sp = m.find(' ', 1);
        if (sp == std::string::npos)
            throw Error("tokenizer: merge " + std::to_string(rank) + " '" + m +
                        "' is not two tokens separated by a space");
        const std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
        joined.assign(left).append(right);
        const int32_t l = index.find(left), r = index.find(right), res = index.find(joined);
        if (l < 0 || r < 0 || res < 0) {
            ++skipped_;
            continue;
        }
        merges_.emplace(pair_key(l, r), Merge{int32_t(rank), res});  // first rank wins
    }
}

void BpeModel::encode_word(std::string_view bytes, std::vector<int32_t>& out) const {
    if (bytes.empty()) return;
    const auto emit = [&](int32_t id) {
        if (id >= 0)
            out.push_back(id);
        else if (unk_id_ >= 0)
            out.push_back(unk_id_);
    };
    if (bytes.size() == 1) {
        emit(byte_token_[uint8_t(bytes[0])]);
        return;
    }
    if (ignore_merges_) {
        const int32_t whole = index_.find(ByteAlphabet::instance().encode(bytes));
        if (whole >= 0) {
            out.push_back(whole);
            return;
        }
    }
    // Symbols: one per byte at first, linked so merging is O(1).
    struct Symbol {
        int32_t id;
        int32_t prev, next;
    };
    std::vector<Symbol> sym(bytes.size());
    for (size_t i = 0; i < bytes.size(); ++i)
        sym[i] = {byte_token_[uint8_t(bytes[i])], int32_t(i) - 1,
                  i + 1 < bytes.size() ? int32_t(i + 1) : -1};

    struct Candidate {
        int32_t rank, left, left_id, right_id, result;
        bool operator<(const Candidate& o) const {  // the queue's top: lowest rank, then leftmost
            return rank != o.rank ? rank > o.rank : left > o.left;
        }
    };
    std::priority_queue<Candidate> queue;
    const auto consider = [&](int32_t left) {
        if (left < 0) return;
        const int32_t right = sym[left].next;
        if (right < 0 || sym[left].id < 0 || sym[right].id < 0) return;
        auto it = merges_.find(pair_key(sym[left].id, sym[right].id));
        if (it == merges_.end()) return;
        queue.push({it->second.rank, left, sym[left].id, sym[right].id, it->second.result});
    };
    for (int32_t i = 0; i + 1 < int32_t(bytes.size()); ++i) consider(i);

    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Symbol& l = sym[c.left];
        // Stale when either side has merged since the candidate was queued.
        if (l.id != c.left_id || l.next < 0 || sym[l.next].id != c.right_id) continue;
        const int32_t r = l.next;
        l.id = c.result;
        l.next = sym[r].next;
        if (l.next >= 0) sym[l.next].prev = c.left;
        sym[r].id = -2;  // dead; never equal to a queued id
        consider(l.prev);
        consider(c.left);
    }
    for (int32_t i = 0; i >= 0; i = sym[i].next) emit(sym[i].id);
}

}  // namespace tandem::tokenizer
