#include "tandem/common/error.h"
#include "tandem/engine/model.h"
#include "tandem/engine/shard_split.h"

namespace tandem::engine {

ShardSpec ShardSpec::whole(const HParams& hp) {
    ShardSpec s;
    s.kv_head_end = hp.n_kv_head;
    s.ff_end = hp.n_ff;
    s.expert_end = hp.n_expert;
    s.vocab_end = hp.n_vocab;
    return s;
}

namespace {
// [begin, end) of part `rank` of n, in whole units of `align` (the last part takes the rest).
std::pair<int64_t, int64_t> split(int64_t total, int rank, int n, int64_t align) {
    const int64_t units = total / align;
    const int64_t b = units * rank / n * align;
    const int64_t e = rank == n - 1 ? total : units * (rank + 1) / n * align;
    return {b, e};
}
}  // namespace

void check_split(const HParams& hp, int rank, int n, int64_t heads, const char* heads_what,
                 int64_t ff_align) {
    if (n < 1 || rank < 0 || rank >= n)
        throw Error("shard: rank " + std::to_string(rank) + " of " + std::to_string(n) +
                    " invalid");
    if (heads < n)
        throw Error("shard: " + std::to_string(heads) + " " + heads_what + " cannot be split " +
                    std::to_string(n) + " ways");
    if (n > 1 && hp.n_ff > 0 && hp.n_ff / ff_align < n)
        throw Error("shard: FFN width " + std::to_string(hp.n_ff) + " has fewer than " +
                    std::to_string(n) + " blocks of " + std::to_string(ff_align));
    if (hp.n_expert > 0 && hp.n_expert < n)
        throw Error("shard: " + std::to_string(hp.n_expert) + " experts cannot be split " +
                    std::to_string(n) + " ways");
}

ShardSpec ShardSpec::even(const HParams& hp, int rank, int n, int64_t ff_align) {
    check_split(hp, rank, n, hp.n_kv_head, "KV heads", ff_align);
    ShardSpec s;
    s.rank = rank;
    s.n_ranks = n;
    std::tie(s.kv_head_begin, s.kv_head_end) = split(hp.n_kv_head, rank, n, 1);
    if (hp.n_ff > 0) std::tie(s.ff_begin, s.ff_end) = split(hp.n_ff, rank, n, n > 1 ? ff_align : 1);
    if (hp.n_expert > 0) std::tie(s.expert_begin, s.expert_end) = split(hp.n_expert, rank, n, 1);
    std::tie(s.vocab_begin, s.vocab_end) = split(hp.n_vocab, rank, n, 1);
    return s;
}

}  // namespace tandem::engine
