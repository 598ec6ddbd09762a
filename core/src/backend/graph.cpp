#include "tandem/backend/graph.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "tandem/common/error.h"

namespace tandem {

uint64_t GraphTensor::nbytes() const {
    return static_cast<uint64_t>(ne[1]) * static_cast<uint64_t>(ne[2]) * row_bytes(type, ne[0]);
}

const char* op_name(Op op) {
    switch (op) {
        case Op::GetRows:
            return "get_rows";
        case Op::RmsNorm:
            return "rms_norm";
        case Op::MatMul:
            return "mat_mul";
        case Op::Add:
            return "add";
        case Op::Mul:
            return "mul";
        case Op::Scale:
            return "scale";
        case Op::Rope:
            return "rope";
        case Op::KvStore:
            return "kv_store";
        case Op::Attention:
            return "attention";
        case Op::GatedAct:
            return "gated_act";
        case Op::MoeRoute:
            return "moe_route";
        case Op::MoeFfn:
            return "moe_ffn";
        case Op::Softcap:
            return "softcap";
        case Op::AllReduce:
            return "all_reduce";
        case Op::AllGather:
            return "all_gather";
        case Op::TakeRows:
            return "take_rows";
        case Op::Copy:
            return "copy";
    }
    return "?";
}

namespace {

uint64_t mix_tensor(uint64_t h, const GraphTensor& t) {
    h = fingerprint_mix(
        h, uint64_t(t.role) | uint64_t(t.type) << 8 | uint64_t(uint32_t(t.slot)) << 32);
    for (int64_t e : t.ne) h = fingerprint_mix(h, uint64_t(e));
    return fingerprint_mix(h, t.offset);
}

uint64_t mix_node(uint64_t h, const Node& n) {
    h = fingerprint_mix(h, uint64_t(n.op) | uint64_t(uint32_t(n.out)) << 32);
    for (TensorId s : n.src) h = fingerprint_mix(h, uint64_t(uint32_t(s)));
    for (int32_t v : n.i) h = fingerprint_mix(h, uint64_t(uint32_t(v)));
    for (float f : n.f) {
        uint32_t u;
        std::memcpy(&u, &f, sizeof u);
        h = fingerprint_mix(h, u);
    }
    return h;
}

}  // namespace

TensorId Graph::add_tensor(GraphTensor t) {
    tensors_hash_ = mix_tensor(tensors_hash_, t);
    tensors_.push_back(std::move(t));
    return static_cast<TensorId>(tensors_.size() - 1);
}

void Graph::hash_tensors() {
    tensors_hash_ = kFingerprintSeed;
    for (const GraphTensor& t : tensors_) tensors_hash_ = mix_tensor(tensors_hash_, t);
}

uint64_t Graph::fingerprint() const {
    uint64_t h = fingerprint_mix(kFingerprintSeed, nodes_.size());
    h = fingerprint_mix(h, tensors_.size());
    h = fingerprint_mix(h, nodes_hash_);
    return fingerprint_mix(h, tensors_hash_);
}

TensorId Graph::weight(int slot, std::string name, DType type, std::array<int64_t, 3> ne) {
    GraphTensor t;
    t.name = std::move(name);
    t.role = TensorRole::Weight;
    t.type = type;
    t.ne = ne;
    t.slot = slot;
    return add_tensor(std::move(t));
}

TensorId Graph::input(int slot, std::string name, DType type, int64_t n) {
    GraphTensor t;
    t.name = std::move(name);
    t.role = TensorRole::Input;
    t.type = type;
    t.ne = {n, 1, 1};
    t.slot = slot;
    return add_tensor(std::move(t));
}

TensorId Graph::kv(int slot, std::string name, DType type, int64_t width, int64_t n_ctx) {
    GraphTensor t;
    t.name = std::move(name);
    t.role = TensorRole::KvCache;
    t.type = type;
    t.ne = {width, n_ctx, 1};
    t.slot = slot;
    return add_tensor(std::move(t));
}

TensorId Graph::activation(std::string name, int64_t cols, int64_t rows) {
    GraphTensor t;
    t.name = std::move(name);
    t.ne = {cols, rows, 1};
    return add_tensor(std::move(t));
}

TensorId Graph::output(int slot, std::string name, int64_t cols, int64_t rows) {
    GraphTensor t;
    t.name = std::move(name);
    t.role = TensorRole::Output;
    t.ne = {cols, rows, 1};
    t.slot = slot;
    return add_tensor(std::move(t));
}

void Graph::add_node(const Node& n) {
    nodes_hash_ = mix_node(nodes_hash_, n);
    nodes_.push_back(n);
}

uint64_t Graph::plan_scratch() {
    constexpr uint64_t kAlign = 64;
    const size_t n_t = tensors_.size();
    std::vector<int> first(n_t, -1), last(n_t, -1);
    for (size_t k = 0; k < nodes_.size(); ++k) {
        const Node& n = nodes_[k];
        if (first[n.out] < 0) first[n.out] = static_cast<int>(k);
        last[n.out] = std::max(last[n.out], static_cast<int>(k));
        for (TensorId s : n.src)
            if (s != kNoTensor) last[s] = std::max(last[s], static_cast<int>(k));
    }
    // Free list of [offset, size) holes; blocks live from their first write to their last read.
    std::map<uint64_t, uint64_t> free_blocks;  // offset -> size
    uint64_t top = 0, peak = 0;
    auto release = [&](uint64_t off, uint64_t size) {
        auto it = free_blocks.emplace(off, size).first;
        auto next = std::next(it);
        if (next != free_blocks.end() && it->first + it->second == next->first) {
            it->second += next->second;
            free_blocks.erase(next);
        }
        if (it != free_blocks.begin()) {
            auto prev = std::prev(it);
            if (prev->first + prev->second == it->first) {
                prev->second += it->second;
                free_blocks.erase(it);
                it = prev;
            }
        }
        if (it->first + it->second == top) {  // a hole at the top shrinks the arena
            top = it->first;
            free_blocks.erase(it);
        }
    };
    std::vector<std::vector<TensorId>> dying(nodes_.size());
    for (size_t t = 0; t < n_t; ++t)
        if (tensors_[t].role == TensorRole::Activation && first[t] >= 0)
            dying[last[t]].push_back(static_cast<TensorId>(t));
    for (size_t k = 0; k < nodes_.size(); ++k) {
        GraphTensor& out = tensors_[nodes_[k].out];
        if (out.role == TensorRole::Activation && first[nodes_[k].out] == static_cast<int>(k)) {
            uint64_t size = (out.nbytes() + kAlign - 1) / kAlign * kAlign;
            uint64_t off = top;
            for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it) {
                if (it->second >= size) {
                    off = it->first;
                    uint64_t rest = it->second - size;
                    free_blocks.erase(it);
                    if (rest) free_blocks.emplace(off + size, rest);
                    break;
                }
            }
            if (off == top) top += size;
            out.offset = off;
            peak = std::max(peak, top);
        }
        // Released after the node so a node's output never overlaps its inputs.
        for (TensorId t : dying[k]) {
            const GraphTensor& d = tensors_[t];
            release(d.offset, (d.nbytes() + kAlign - 1) / kAlign * kAlign);
        }
    }
    scratch_bytes_ = peak;
    hash_tensors();  // the offsets changed
    return peak;
}

void Graph::validate() const {
    const auto n_t = static_cast<TensorId>(tensors_.size());
    for (size_t k = 0; k < nodes_.size(); ++k) {
        const Node& n = nodes_[k];
        auto fail = [&](const std::string& why) {
            throw Error("graph: node " + std::to_string(k) + " (" + op_name(n.op) + "): " + why);
        };
        if (n.out < 0 || n.out >= n_t) fail("output id out of range");
        for (TensorId s : n.src)
            if (s != kNoTensor && (s < 0 || s >= n_t)) fail("input id out of range");
        const GraphTensor& out = tensors_[n.out];
        if (out.role == TensorRole::Weight || out.role == TensorRole::Input)
            fail("writes to read-only tensor '" + out.name + "'");
        auto src = [&](int j) -> const GraphTensor& {
            if (n.src[j] == kNoTensor) fail("missing input " + std::to_string(j));
            return tensors_[n.src[j]];
        };
        switch (n.op) {
            case Op::MatMul:
                if (src(0).ne[0] != src(1).cols())
                    fail("weight '" + src(0).name + "' has " + std::to_string(src(0).ne[0]) +
                         " inputs but x has " + std::to_string(src(1).cols()) + " columns");
                if (out.cols() != src(0).ne[1] || out.rows() != src(1).rows())
                    fail("output '" + out.name + "' shape mismatch");
                break;
            case Op::Add:
            case Op::Mul:
                if (src(0).n_elements() != src(1).n_elements() ||
                    out.n_elements() != src(0).n_elements())
                    fail("element counts differ");
                break;
            case Op::GetRows:
                if (out.cols() != src(0).ne[0] || out.rows() != src(1).ne[0])
                    fail("output shape mismatch");
                break;
            default:
                break;
        }
    }
}

void check_step_inputs(const Graph& g, const StepIO& io) {
    for (const Node& n : g.nodes()) {
        if (n.op == Op::GetRows) {
            const GraphTensor& ids = g.tensor(n.src[1]);
            if (ids.role != TensorRole::Input || ids.slot < 0 ||
                static_cast<size_t>(ids.slot) >= io.inputs.size() || !io.inputs[ids.slot])
                continue;
            const int64_t rows = g.tensor(n.src[0]).ne[1];
            const auto* v = static_cast<const int32_t*>(io.inputs[ids.slot]);
            for (int64_t t = 0; t < g.tensor(n.out).rows(); ++t)
                if (v[t] < 0 || v[t] >= rows)
                    throw Error("get_rows: token id " + std::to_string(v[t]) +
                                " outside the vocabulary (" + std::to_string(rows) + " rows)");
        } else if (n.op == Op::KvStore) {
            const GraphTensor& cache = g.tensor(n.src[1]);
            const GraphTensor& src = g.tensor(n.src[0]);
            if (io.n_past < 0 || io.n_past + src.rows() > cache.rows())
                throw Error("context full: " + std::to_string(io.n_past) + " cached + " +
                            std::to_string(src.rows()) + " new tokens exceed the context of " +
                            std::to_string(cache.rows()) + " (raise --ctx)");
        } else if (n.op == Op::Attention) {
            if (io.n_past < 0) throw Error("attention: negative n_past");
        }
    }
}

}  // namespace tandem
