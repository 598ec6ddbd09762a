#include "tandem/engine/weight_cut.h"

#include "tandem/common/error.h"

namespace tandem::engine {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string range_str(const WeightCut& c) {
    return "[" + std::to_string(c.begin) + ", " + std::to_string(c.end) + ")";
}

}  // namespace

WeightCut weight_cut(std::string_view n, bool is_output, const HParams& hp, const ShardSpec& s) {
    if (is_output) return {CutKind::Rows, s.vocab_begin, s.vocab_end, 1};
    const int64_t hd = hp.head_dim;
    const int64_t q_b = s.q_begin(hp) * hd, q_e = s.q_end(hp) * hd;
    const int64_t kv_b = s.kv_head_begin * hd, kv_e = s.kv_head_end * hd;
    if (ends_with(n, ".attn_q.weight")) return {CutKind::Rows, q_b, q_e, 1};
    if (ends_with(n, ".attn_q.bias")) return {CutKind::Rows, q_b, q_e, 0};
    if (ends_with(n, ".attn_k.weight") || ends_with(n, ".attn_v.weight"))
        return {CutKind::Rows, kv_b, kv_e, 1};
    if (ends_with(n, ".attn_k.bias") || ends_with(n, ".attn_v.bias"))
        return {CutKind::Rows, kv_b, kv_e, 0};
    if (ends_with(n, ".attn_output.weight")) return {CutKind::Cols, q_b, q_e, 0};
    if (ends_with(n, ".ffn_gate.weight") || ends_with(n, ".ffn_up.weight"))
        return {CutKind::Rows, s.ff_begin, s.ff_end, 1};
    if (ends_with(n, ".ffn_down.weight")) return {CutKind::Cols, s.ff_begin, s.ff_end, 0};
    if (ends_with(n, "_exps.weight")) return {CutKind::Rows, s.expert_begin, s.expert_end, 2};
    return {};
}

CutLayout cut_layout(const std::string& name, DType type, const std::array<int64_t, 3>& ne,
                     const WeightCut& c) {
    const auto& tr = dtype_traits(type);
    const uint64_t row = row_bytes(type, uint64_t(ne[0]));
    const uint64_t n_rows = uint64_t(ne[1] * ne[2]);
    CutLayout out;
    out.ne = ne;
    out.nbytes = row * n_rows;
    if (c.kind == CutKind::None) {
        out.spans.push_back({0, out.nbytes});
        return out;
    }
    const int dim = c.kind == CutKind::Cols ? 0 : c.dim;
    if (dim < 0 || dim > 2 || c.begin < 0 || c.end <= c.begin || c.end > ne[size_t(dim)])
        throw Error("tensor '" + name + "': slice " + range_str(c) + " outside dimension " +
                    std::to_string(dim) + " of " + std::to_string(ne[size_t(dim)]));
    const int64_t len = c.end - c.begin;
    if (dim == 0) {
        // Whole quant blocks; a bias may end at its own (short) end.
        if (c.begin % tr.block_elems || (c.end % tr.block_elems && c.end != ne[0]))
            throw Error("tensor '" + name +
                        "': " + (c.kind == CutKind::Cols ? "column slice " : "slice ") +
                        range_str(c) + " not in whole " + std::string(tr.name) + " blocks");
        out.ne[0] = len;
        const uint64_t off = row_bytes(type, uint64_t(c.begin));
        const uint64_t part = row_bytes(type, uint64_t(len));
        out.nbytes = part * n_rows;
        for (uint64_t r = 0; r < n_rows; ++r) {
            const uint64_t at = row * r + off;
            if (!out.spans.empty() && out.spans.back().offset + out.spans.back().size == at)
                out.spans.back().size += part;  // the whole row: contiguous with the last one
            else
                out.spans.push_back({at, part});
        }
        return out;
    }
    // One index of the cut dimension: a row, or a whole expert matrix.
    const uint64_t unit = row * (dim == 2 ? uint64_t(ne[1]) : 1);
    out.ne[size_t(dim)] = len;
    out.nbytes = unit * uint64_t(len);
    out.spans.push_back({unit * uint64_t(c.begin), out.nbytes});
    return out;
}

}  // namespace tandem::engine
