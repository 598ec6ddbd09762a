#pragma once
// The step graph: what one forward step (n_tokens at positions n_past..) computes, as a flat list
// of nodes over tensor ids. Model builders emit it once per step shape; every backend executes the
// same graph (the CPU backend node by node, GPU backends recorded into one submission).
//
// Activations are 2-D row-major matrices [rows, cols] (rows = tokens); ops that see heads take the
// head structure from their parameters, so no reshape/view nodes are needed. Weights keep their
// file type and ggml shape {n_in, n_out, (n_expert)}.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tandem/common/dtype.h"

namespace tandem {

using TensorId = int32_t;
inline constexpr TensorId kNoTensor = -1;

enum class TensorRole : uint8_t {
    Weight,      // model weight; slot = weight index given to Backend::upload_weight
    Input,       // per-step host input (token ids, positions); slot = StepIO::inputs index
    KvCache,     // persistent per-layer K or V cache; slot = KV index given to allocate_kv
    Activation,  // scratch; offset placed by plan_scratch()
    Output,      // per-step host output (logits); slot = StepIO::outputs index
};

struct GraphTensor {
    std::string name;
    TensorRole role = TensorRole::Activation;
    DType type = DType::F32;
    // ggml order: ne[0] fastest. Activations: {cols, rows}. Weights: {n_in, n_out, n_expert}.
    std::array<int64_t, 3> ne{1, 1, 1};
    int slot = -1;        // see TensorRole
    uint64_t offset = 0;  // byte offset in the scratch buffer (Activation)

    int64_t n_elements() const { return ne[0] * ne[1] * ne[2]; }
    int64_t cols() const { return ne[0]; }
    int64_t rows() const { return ne[1] * ne[2]; }
    uint64_t nbytes() const;
};

enum class Op : uint8_t {
    GetRows,    // out[t,:] = f32(src0[ids[t],:]); src0 weight [n_vocab, n_embd], src1 ids (i32)
    RmsNorm,    // out = x / rms(x) * w per group of i0 elements (i0 = row length or head_dim);
                // src0 x, src1 weight [i0] (optional), f0 = eps
    MatMul,     // out[t,o] = sum_i W[o,i] x[t,i] (+ bias[o]); src0 W, src1 x, src2 bias (optional)
    Add,        // out = src0 + src1 (same shape)
    Mul,        // out = src0 * src1 (same shape)
    Scale,      // out = src0 * f0
    Rope,       // rotary embedding of every head: src0 x [t, n_head*head_dim], src1 positions
                // (i32 [t]), src2 freq factors (optional, [n_rot/2]); i0 = head_dim, i1 = n_rot,
                // i2 = RopeMode, f0 = freq_base, f1 = freq_scale
    KvStore,    // writes src0 [t, width] into cache src1 at rows n_past..n_past+t-1 (out = src1)
    Attention,  // out [t, n_head*head_dim]; src0 q, src1 K cache, src2 V cache;
                // i0 = n_head, i1 = n_kv_head, i2 = head_dim, i3 = sliding window (0 = none),
                // f0 = scale, f1 = softcap (0 = none); causal over positions (cache row = position)
    GatedAct,   // out = act(src0) * src1; i0 = Activation
    MoeRoute,   // src0 router logits [t, n_expert] -> out [t, 2*k]: (expert id, weight) pairs;
                // i0 = k, i1 = normalize weights (bool); softmax gating
    MoeFfn,     // out[t] = sum_k w_k * down_e(act(gate_e x) * up_e x) over the experts of this
                // rank; src0 x, src1 route, src2 gate_exps, src3 up_exps, src4 down_exps;
                // i0 = first expert held here, i1 = Activation
    Softcap,    // out = f0 * tanh(src0 / f0)
    AllReduce,  // out = sum over ranks of src0 (tensor-parallel hook; identity for one rank)
    AllGather,  // out = concat over ranks of src0 along cols (vocab-split logits); identity alone
    TakeRows,   // out = rows [i0, i0 + out.rows) of src0
    Copy,       // out = src0 (e.g. activations to a host output)
};

enum class RopeMode : int32_t { Normal = 0, Neox = 2 };  // ggml's ids
enum class Activation : int32_t { Silu = 0, GeluTanh = 1 };

const char* op_name(Op op);

struct Node {
    Op op = Op::Copy;
    TensorId out = kNoTensor;
    std::array<TensorId, 5> src{kNoTensor, kNoTensor, kNoTensor, kNoTensor, kNoTensor};
    std::array<int32_t, 4> i{0, 0, 0, 0};
    std::array<float, 2> f{0.0f, 0.0f};
};

// A node of op writing out from src (in order), with its integer and float parameters.
inline Node make_node(Op op, TensorId out, std::initializer_list<TensorId> src,
                      std::array<int32_t, 4> i = {0, 0, 0, 0}, std::array<float, 2> f = {0, 0}) {
    Node n;
    n.op = op;
    n.out = out;
    size_t k = 0;
    for (TensorId s : src) n.src[k++] = s;
    n.i = i;
    n.f = f;
    return n;
}

// Graph::fingerprint()'s start, and one word into a running fingerprint (multiply-xorshift,
// word at a time); backends mix in their own keys (buffer addresses) the same way.
inline constexpr uint64_t kFingerprintSeed = 0x243F6A8885A308D3ull;
inline uint64_t fingerprint_mix(uint64_t h, uint64_t v) {
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

class Graph {
  public:
    TensorId add_tensor(GraphTensor t);
    TensorId weight(int slot, std::string name, DType type, std::array<int64_t, 3> ne);
    TensorId input(int slot, std::string name, DType type, int64_t n);
    TensorId kv(int slot, std::string name, DType type, int64_t width, int64_t n_ctx);
    TensorId activation(std::string name, int64_t cols, int64_t rows);
    TensorId output(int slot, std::string name, int64_t cols, int64_t rows);
    void add_node(const Node& n);

    const std::vector<GraphTensor>& tensors() const { return tensors_; }
    const std::vector<Node>& nodes() const { return nodes_; }
    const GraphTensor& tensor(TensorId id) const { return tensors_.at(static_cast<size_t>(id)); }
    uint64_t scratch_bytes() const { return scratch_bytes_; }

    // Places activations in one scratch buffer by liveness (linear scan, first fit, 64-byte
    // aligned); returns the peak bytes. Inputs of a node never share memory with its output.
    uint64_t plan_scratch();
    // Checks ids, roles and shapes of every node; throws tandem::Error naming the node.
    void validate() const;

    // A 64-bit hash of the nodes and of the tensors' roles, types, shapes, slots and offsets
    // (not their names): what backends key a recorded step by. Kept current by every change, so
    // reading it per step costs nothing (hashing the ~1000 fields of an 8B step every step cost
    // the HIP backend 90 us a token, 4 % of an H200's decode step).
    uint64_t fingerprint() const;

  private:
    void hash_tensors();

    std::vector<GraphTensor> tensors_;
    std::vector<Node> nodes_;
    uint64_t scratch_bytes_ = 0;
    uint64_t nodes_hash_ = kFingerprintSeed, tensors_hash_ = kFingerprintSeed;
};

// Host-side data of one step.
struct StepIO {
    int32_t n_past = 0;               // position of the first token of the step
    std::vector<const void*> inputs;  // by input slot
    std::vector<void*> outputs;       // by output slot
};

// Host-side checks of a step that every backend runs before computing anything: token ids of
// GetRows nodes reading an input within the table's rows, KV stores within the cache
// ("context full"), n_past >= 0 for attention. Throws tandem::Error; a missing input is left to
// the backend's own input checks.
void check_step_inputs(const Graph& g, const StepIO& io);

}  // namespace tandem
