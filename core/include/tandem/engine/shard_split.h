#pragma once
// The checks that come before any split of a model over n ranks (ShardSpec::even here, the
// planner's shard_by_shares): one place, so both refuse the same models with the same words.
#include <cstdint>

#include "tandem/engine/model.h"

namespace tandem::engine {

// Throws tandem::Error unless `rank` is one of `n` and the model splits n ways: `heads` units
// (named `heads_what` in the message, e.g. "KV heads") at least one per rank, the FFN width in
// at least n blocks of `ff_align` (when n > 1), and the experts at least one per rank.
void check_split(const HParams& hp, int rank, int n, int64_t heads, const char* heads_what,
                 int64_t ff_align);

}  // namespace tandem::engine
