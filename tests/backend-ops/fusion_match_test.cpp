// match_qkv_rope and match_qk_norm_rope (tandem/backend/fusion.h), the patterns both GPU backends
// fuse (into their q/k/v matvec; into one q/k-norm launch): the graph builder's attention block
// matches (normal and NeoX), and each thing that must keep the separate kernels does not: another
// reader of the raw k / v / roped k, a partial rotary dimension, ropes that differ, caches of two
// types, a q norm between matmul and rope, an output tensor instead of an activation, and a run cut
// short. match_matvec_resid_norm, the projection + residual add + norm run both fold into their
// matvecs, likewise. No backend needed.
#include <gtest/gtest.h>

#include <functional>

#include "tandem/backend/fusion.h"

namespace tandem {
namespace {

struct Block {
    Graph g;
    TensorId x, q, k, v, qr, kr, kc, vc, pos;
};

// q/k/v of x, then the ropes and stores as the graph builder orders them (nodes 1..7 after a
// leading norm at 0); `edit` may change the nodes before they are added.
Block block(RopeMode mode, int32_t n_rot, DType kv_v = DType::F16,
            const std::function<void(std::vector<Node>&, Block&)>& edit = nullptr) {
    Block b;
    const int64_t hd = 64, H = 4, KV = 2, T = 1;
    const TensorId in = b.g.input(0, "in", DType::F32, 256);
    b.pos = b.g.input(1, "pos", DType::I32, T);
    b.x = b.g.activation("x", 256, T);
    b.q = b.g.activation("q", H * hd, T);
    b.k = b.g.activation("k", KV * hd, T);
    b.v = b.g.activation("v", KV * hd, T);
    b.qr = b.g.activation("q_rope", H * hd, T);
    b.kr = b.g.activation("k_rope", KV * hd, T);
    b.kc = b.g.kv(0, "k_cache", DType::F16, KV * hd, 16);
    b.vc = b.g.kv(1, "v_cache", kv_v, KV * hd, 16);
    const TensorId wq = b.g.weight(0, "wq", DType::Q4_0, {256, H * hd, 1});
    const TensorId wk = b.g.weight(1, "wk", DType::Q4_0, {256, KV * hd, 1});
    const TensorId wv = b.g.weight(2, "wv", DType::Q4_0, {256, KV * hd, 1});
    const std::array<int32_t, 4> ri{int32_t(hd), n_rot, int32_t(mode), 0};
    std::vector<Node> nodes = {
        make_node(Op::RmsNorm, b.x, {in}, {0, 0, 0, 0}, {1e-5f, 0}),
        make_node(Op::MatMul, b.q, {wq, b.x}),
        make_node(Op::MatMul, b.k, {wk, b.x}),
        make_node(Op::MatMul, b.v, {wv, b.x}),
        make_node(Op::Rope, b.qr, {b.q, b.pos, kNoTensor}, ri, {10000.0f, 1.0f}),
        make_node(Op::Rope, b.kr, {b.k, b.pos, kNoTensor}, ri, {10000.0f, 1.0f}),
        make_node(Op::KvStore, b.kc, {b.kr, b.kc}),
        make_node(Op::KvStore, b.vc, {b.v, b.vc}),
        make_node(Op::Attention, b.g.output(0, "attn", H * hd, T), {b.qr, b.kc, b.vc},
                  {int32_t(H), int32_t(KV), int32_t(hd), 0}, {0.125f, 0}),
    };
    if (edit) edit(nodes, b);
    for (const Node& n : nodes) b.g.add_node(n);
    return b;
}

TEST(FusionMatch, AttentionBlockMatchesInBothModes) {
    for (RopeMode mode : {RopeMode::Normal, RopeMode::Neox}) {
        Block b = block(mode, 64);
        EXPECT_FALSE(match_qkv_rope(b.g, 0));  // the norm, not q
        const auto m = match_qkv_rope(b.g, 1);
        ASSERT_TRUE(m);
        EXPECT_EQ(m->q, &b.g.nodes()[1]);
        EXPECT_EQ(m->store_v, &b.g.nodes()[7]);
        EXPECT_EQ(m->rope_q->out, b.qr);
        EXPECT_EQ(m->head_dim, 64);
        EXPECT_EQ(m->neox, mode == RopeMode::Neox);
        EXPECT_TRUE(m->cache_f16);
    }
}

TEST(FusionMatch, WhatMustStaySeparateDoesNotMatch) {
    // A partial rotary dimension, caches of two types.
    EXPECT_FALSE(match_qkv_rope(block(RopeMode::Neox, 32).g, 1));
    EXPECT_FALSE(match_qkv_rope(block(RopeMode::Normal, 64, DType::F32).g, 1));
    // Another reader of the raw k, of v, of the roped k: they would never be written.
    for (int which : {0, 1, 2}) {
        Block b = block(RopeMode::Normal, 64, DType::F16, [which](std::vector<Node>& n, Block& b) {
            const TensorId t = which == 0 ? b.k : which == 1 ? b.v : b.kr;
            n.push_back(make_node(Op::Copy, b.g.output(1, "peek", b.g.tensor(t).cols(), 1), {t}));
        });
        EXPECT_FALSE(match_qkv_rope(b.g, 1)) << which;
    }
    // The roped q read later is fine (it is written).
    Block ok = block(RopeMode::Normal, 64, DType::F16, [](std::vector<Node>& n, Block& b) {
        n.push_back(
            make_node(Op::Copy, b.g.output(1, "q_out", b.g.tensor(b.qr).cols(), 1), {b.qr}));
    });
    EXPECT_TRUE(match_qkv_rope(ok.g, 1));
    // Ropes with different bases; a q norm between the matmul and its rope (Qwen3, Gemma 3).
    Block base = block(RopeMode::Normal, 64, DType::F16,
                       [](std::vector<Node>& n, Block&) { n[5].f[0] = 500000.0f; });
    EXPECT_FALSE(match_qkv_rope(base.g, 1));
    Block normed = block(RopeMode::Normal, 64, DType::F16, [](std::vector<Node>& n, Block& b) {
        const TensorId qn = b.g.activation("q_normed", b.g.tensor(b.q).cols(), 1);
        n.insert(n.begin() + 4, make_node(Op::RmsNorm, qn, {b.q}, {64, 0, 0, 0}, {1e-5f, 0}));
        n[5].src[0] = qn;
    });
    EXPECT_FALSE(match_qkv_rope(normed.g, 1));
    // A run cut short: the graph ends before the V store.
    Block cut =
        block(RopeMode::Normal, 64, DType::F16, [](std::vector<Node>& n, Block&) { n.resize(7); });
    EXPECT_FALSE(match_qkv_rope(cut.g, 1));
    EXPECT_FALSE(match_qkv_rope(cut.g, 100));
}

// The same block with q/k norms per head between the matmuls and the ropes, as the graph builder
// emits it for Qwen3 and Gemma 3 (norms at nodes 4, 5; ropes 6, 7; stores 8, 9).
Block normed_block(const std::function<void(std::vector<Node>&, Block&)>& edit = nullptr) {
    return block(RopeMode::Neox, 64, DType::F16, [&edit](std::vector<Node>& n, Block& b) {
        const TensorId qn = b.g.activation("q_normed", b.g.tensor(b.q).cols(), 1);
        const TensorId kn = b.g.activation("k_normed", b.g.tensor(b.k).cols(), 1);
        const TensorId qw = b.g.weight(3, "q_norm", DType::F32, {64, 1, 1});
        const TensorId kw = b.g.weight(4, "k_norm", DType::F32, {64, 1, 1});
        n.insert(n.begin() + 4, {make_node(Op::RmsNorm, qn, {b.q, qw}, {64, 0, 0, 0}, {1e-6f, 0}),
                                 make_node(Op::RmsNorm, kn, {b.k, kw}, {64, 0, 0, 0}, {1e-6f, 0})});
        n[6].src[0] = qn;
        n[7].src[0] = kn;
        if (edit) edit(n, b);
    });
}

TEST(FusionMatch, QkNormBlockMatches) {
    Block b = normed_block();
    EXPECT_FALSE(match_qkv_rope(b.g, 1));      // the norms sit between matmuls and ropes
    EXPECT_FALSE(match_qk_norm_rope(b.g, 1));  // q's matmul, not its norm
    const auto m = match_qk_norm_rope(b.g, 4);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->norm_q, &b.g.nodes()[4]);
    EXPECT_EQ(m->norm_k, &b.g.nodes()[5]);
    EXPECT_EQ(m->rope_q->out, b.qr);
    EXPECT_EQ(m->store_v, &b.g.nodes()[9]);
    EXPECT_EQ(m->store_v->src[0], b.v);
    EXPECT_EQ(m->head_dim, 64);
    EXPECT_TRUE(m->neox);
    EXPECT_TRUE(m->cache_f16);
}

TEST(FusionMatch, QkNormBlockThatMustStaySeparateDoesNotMatch) {
    // A norm over another group than the head, norms of two eps, ropes of two bases.
    const std::function<void(std::vector<Node>&, Block&)> edits[] = {
        [](std::vector<Node>& n, Block&) { n[4].i[0] = 256; },
        [](std::vector<Node>& n, Block&) { n[5].f[0] = 1e-5f; },
        [](std::vector<Node>& n, Block&) { n[7].f[0] = 500000.0f; },
        // Another reader of the normed q, of the roped k: they would never be written.
        [](std::vector<Node>& n, Block& b) {
            n.push_back(make_node(Op::Copy, b.g.output(1, "peek", 256, 1), {n[4].out}));
        },
        [](std::vector<Node>& n, Block& b) {
            n.push_back(make_node(Op::Copy, b.g.output(1, "peek", 128, 1), {b.kr}));
        },
        // The K store of something other than the roped k.
        [](std::vector<Node>& n, Block& b) { n[8].src[0] = b.v; },
    };
    for (size_t i = 0; i < std::size(edits); ++i)
        EXPECT_FALSE(match_qk_norm_rope(normed_block(edits[i]).g, 4)) << "edit " << i;
    // A run cut short.
    EXPECT_FALSE(
        match_qk_norm_rope(normed_block([](std::vector<Node>& n, Block&) { n.resize(9); }).g, 4));
}

// An output projection, its all-reduce, the residual add and the next norm, read by a matmul
// (as the graph builder ends an attention block); `edit` may change the nodes.
struct ResidBlock {
    Graph g;
    TensorId a, o, resid, sum, normed, y;
};
ResidBlock resid_block(const std::function<void(std::vector<Node>&, ResidBlock&)>& edit = nullptr) {
    ResidBlock b;
    b.a = b.g.input(0, "attn", DType::F32, 256);
    b.resid = b.g.input(1, "resid", DType::F32, 256);
    b.o = b.g.activation("o", 256, 1);
    b.sum = b.g.activation("sum", 256, 1);
    b.normed = b.g.activation("normed", 256, 1);
    b.y = b.g.output(0, "y", 64, 1);
    const TensorId wo = b.g.weight(0, "wo", DType::Q4_0, {256, 256, 1});
    const TensorId nw = b.g.weight(1, "nw", DType::F32, {256, 1, 1});
    const TensorId wq = b.g.weight(2, "wq", DType::Q4_0, {256, 64, 1});
    std::vector<Node> nodes = {
        make_node(Op::MatMul, b.o, {wo, b.a}),
        make_node(Op::AllReduce, b.o, {b.o}),
        make_node(Op::Add, b.sum, {b.resid, b.o}),
        make_node(Op::RmsNorm, b.normed, {b.sum, nw}, {0, 0, 0, 0}, {1e-5f, 0}),
        make_node(Op::MatMul, b.y, {wq, b.normed}),
    };
    if (edit) edit(nodes, b);
    for (const Node& n : nodes) b.g.add_node(n);
    return b;
}

TEST(FusionMatch, ProjectionAddNormMatches) {
    ResidBlock b = resid_block();
    const TensorUses u = tensor_uses(b.g);
    EXPECT_EQ(u.last_read[size_t(b.sum)], 3);
    EXPECT_EQ(u.last_write[size_t(b.o)], 1);  // the all-reduce, in place
    const auto m = match_matvec_resid_norm(b.g, 0, u, true);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->mm, &b.g.nodes()[0]);
    EXPECT_EQ(m->add, &b.g.nodes()[2]);
    EXPECT_EQ(m->norm, &b.g.nodes()[3]);
    EXPECT_EQ(m->resid, b.resid);
    EXPECT_EQ(m->nodes, 4u);
    EXPECT_EQ(m->last, 4u);
    // More than one rank: the all-reduce is a real one and must run.
    EXPECT_FALSE(match_matvec_resid_norm(b.g, 0, u, false));
    // Without the all-reduce, and with the add's inputs the other way round.
    ResidBlock plain = resid_block([](std::vector<Node>& n, ResidBlock& b) {
        n.erase(n.begin() + 1);
        n[1].src = {b.o, b.resid, kNoTensor, kNoTensor, kNoTensor};
    });
    const auto mp = match_matvec_resid_norm(plain.g, 0, tensor_uses(plain.g), false);
    ASSERT_TRUE(mp);
    EXPECT_EQ(mp->resid, plain.resid);
    EXPECT_EQ(mp->nodes, 3u);
    EXPECT_FALSE(match_matvec_resid_norm(b.g, 1, u, true));  // not a matmul
}

TEST(FusionMatch, ProjectionAddNormThatMustStaySeparateDoesNotMatch) {
    using Edit = std::function<void(std::vector<Node>&, ResidBlock&)>;
    const std::pair<const char*, Edit> cases[] = {
        // The projection's output read by another node: it would never be written.
        {"o read later",
         [](std::vector<Node>& n, ResidBlock& b) {
             n.push_back(make_node(Op::Copy, b.g.output(1, "peek", 256, 1), {b.o}));
         }},
        // The sum written again in place after the norm (its output may be written from it).
        {"sum written again",
         [](std::vector<Node>& n, ResidBlock& b) {
             n.push_back(make_node(Op::AllReduce, b.sum, {b.sum}));
         }},
        // A per-head norm, not over whole rows.
        {"head norm", [](std::vector<Node>& n, ResidBlock&) { n[3].i[0] = 64; }},
        // Nothing reads the norm.
        {"norm unread", [](std::vector<Node>& n, ResidBlock&) { n.pop_back(); }},
        // The norm's output a step output (the host reads it).
        {"norm output",
         [](std::vector<Node>& n, ResidBlock& b) {
             b.normed = b.g.output(1, "normed_out", 256, 1);
             n[3].out = b.normed;
             n[4].src[1] = b.normed;
         }},
        // The add of two other tensors.
        {"add elsewhere", [](std::vector<Node>& n, ResidBlock& b) { n[2].src[1] = b.resid; }},
    };
    for (const auto& [what, edit] : cases) {
        ResidBlock b = resid_block(edit);
        EXPECT_FALSE(match_matvec_resid_norm(b.g, 0, tensor_uses(b.g), true)) << what;
    }
}

}  // namespace
}  // namespace tandem
