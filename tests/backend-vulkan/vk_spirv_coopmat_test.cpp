// The build's NV -> KHR cooperative-matrix rewrite (backend-vulkan/tools), against instruction
// layouts written out from the SPIR-V specification (SPV_NV_cooperative_matrix and
// SPV_KHR_cooperative_matrix), and on the shader the build rewrote.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "spirv_coopmat_rewrite.h"

namespace tandem::test {
namespace {

using Words = std::vector<uint32_t>;

// A module under construction: header (bound filled in by words()) then instructions.
struct Module {
    Words body;
    uint32_t next_id = 1;
    uint32_t id() { return next_id++; }
    void inst(uint32_t op, Words operands) {
        body.push_back((uint32_t(operands.size() + 1) << 16) | op);
        body.insert(body.end(), operands.begin(), operands.end());
    }
    void str(uint32_t op, const std::string& s) {
        Words w((s.size() + 4) / 4, 0);
        std::memcpy(w.data(), s.data(), s.size());
        inst(op, w);
    }
    Words words() const {
        Words m{0x07230203, 0x00010500, 0, next_id, 0};
        m.insert(m.end(), body.begin(), body.end());
        return m;
    }
};

struct Inst {
    uint32_t op;
    Words operands;
};
std::vector<Inst> parse(const Words& m) {
    std::vector<Inst> out;
    for (size_t at = 5; at < m.size();) {
        const uint32_t n = m[at] >> 16;
        EXPECT_GT(n, 0u);
        if (n == 0) break;
        out.push_back({m[at] & 0xFFFF, Words(m.begin() + long(at) + 1, m.begin() + long(at + n))});
        at += n;
    }
    return out;
}

std::string string_of(const Words& w) {
    std::string s;
    for (uint32_t x : w)
        for (int b = 0; b < 4 && char(x >> (8 * b)); ++b) s += char(x >> (8 * b));
    return s;
}

// Spec opcodes used below.
enum : uint32_t {
    OpCapability = 17,
    OpExtension = 10,
    OpTypeInt = 21,
    OpTypeFloat = 22,
    OpTypeBool = 20,
    OpConstantTrue = 41,
    OpConstantFalse = 42,
    OpConstant = 43,
    OpSpecConstant = 50,
    OpTypeCooperativeMatrixNV = 5358,
    OpCooperativeMatrixLoadNV = 5359,
    OpCooperativeMatrixStoreNV = 5360,
    OpCooperativeMatrixMulAddNV = 5361,
    OpTypeCooperativeMatrixKHR = 4456,
    OpCooperativeMatrixLoadKHR = 4457,
    OpCooperativeMatrixStoreKHR = 4458,
    OpCooperativeMatrixMulAddKHR = 4459,
};

// The ids of a small NV module: A (16 x K), B (K x 16) and C types, loads of A (row major) and
// B (column major, with a memory operand), a MulAdd and a column-major store.
struct NvModule {
    Module m;
    uint32_t uint_t, half_t, float_t, bool_t, scope, sixteen, spec_a, spec_b, t_a, t_b, t_c, yes,
        no, ptr, stride, a, b, c0, d;
    explicit NvModule(bool share_ab_type = false) {
        uint_t = m.id(), half_t = m.id(), float_t = m.id(), bool_t = m.id(), scope = m.id(),
        sixteen = m.id(), spec_a = m.id(), spec_b = m.id(), t_a = m.id(),
        t_b = share_ab_type ? t_a : m.id(), t_c = m.id(), yes = m.id(), no = m.id(), ptr = m.id(),
        stride = m.id(), a = m.id(), b = m.id(), c0 = m.id(), d = m.id();
        m.inst(OpCapability, {1});  // Shader
        m.inst(OpCapability, {5357});
        m.str(OpExtension, "SPV_NV_cooperative_matrix");
        m.inst(OpTypeInt, {uint_t, 32, 0});
        m.inst(OpTypeFloat, {half_t, 16});
        m.inst(OpTypeFloat, {float_t, 32});
        m.inst(OpTypeBool, {bool_t});
        m.inst(OpConstant, {uint_t, scope, 3});
        m.inst(OpConstant, {uint_t, sixteen, 16});
        m.inst(OpSpecConstant, {uint_t, spec_a, 16});
        m.inst(OpSpecConstant, {uint_t, spec_b, 16});
        m.inst(OpTypeCooperativeMatrixNV, {t_a, half_t, scope, spec_a, sixteen});
        if (!share_ab_type)
            m.inst(OpTypeCooperativeMatrixNV, {t_b, half_t, scope, sixteen, spec_b});
        m.inst(OpTypeCooperativeMatrixNV, {t_c, float_t, scope, sixteen, sixteen});
        m.inst(OpConstantTrue, {bool_t, yes});
        m.inst(OpConstantFalse, {bool_t, no});
        m.inst(OpConstant, {uint_t, stride, 72});
        // (pointer and accumulator values stand in by id: the rewrite reads no further)
        m.inst(OpCooperativeMatrixLoadNV, {t_a, a, ptr, stride, no});
        m.inst(OpCooperativeMatrixLoadNV, {t_b, b, ptr, stride, yes, 0x2 /*Aligned*/, 16});
        m.inst(OpCooperativeMatrixLoadNV, {t_c, c0, ptr, stride, no});
        m.inst(OpCooperativeMatrixMulAddNV, {t_c, d, a, b, c0});
        m.inst(OpCooperativeMatrixStoreNV, {ptr, d, sixteen, yes});
    }
};

TEST(VulkanSpirvCoopmat, NvInstructionsBecomeKhrOnes) {
    NvModule nv;
    const Words out = vk::tools::coopmat_nv_to_khr(nv.m.words());
    ASSERT_GE(out.size(), 5u);
    EXPECT_EQ(out[0], 0x07230203u);
    EXPECT_EQ(out[3], nv.m.next_id + 3) << "three constants added: Use / layout 0, 1, 2";
    std::map<uint32_t, uint32_t> uint_constant;  // id -> value
    std::map<uint32_t, Words> khr_type;
    std::vector<Inst> loads, stores, muladds;
    bool cap = false, ext = false;
    for (const Inst& in : parse(out)) {
        EXPECT_TRUE(in.op < 5357 || in.op > 5362) << "NV opcode " << in.op << " left";
        if (in.op == OpCapability) {
            EXPECT_NE(in.operands[0], 5357u);
            cap |= in.operands[0] == 6022;
        }
        if (in.op == OpExtension) {
            EXPECT_NE(string_of(in.operands), "SPV_NV_cooperative_matrix");
            ext |= string_of(in.operands) == "SPV_KHR_cooperative_matrix";
        }
        if (in.op == OpConstant && in.operands[0] == nv.uint_t)
            uint_constant[in.operands[1]] = in.operands[2];
        if (in.op == OpTypeCooperativeMatrixKHR) {
            ASSERT_EQ(in.operands.size(), 6u);
            // declared after its Use constant
            EXPECT_TRUE(uint_constant.count(in.operands[5])) << "Use constant not yet declared";
            khr_type[in.operands[0]] = in.operands;
        }
        if (in.op == OpCooperativeMatrixLoadKHR) loads.push_back(in);
        if (in.op == OpCooperativeMatrixStoreKHR) stores.push_back(in);
        if (in.op == OpCooperativeMatrixMulAddKHR) muladds.push_back(in);
    }
    EXPECT_TRUE(cap);
    EXPECT_TRUE(ext);
    // OpTypeCooperativeMatrixKHR: Result, Component Type, Scope, Rows, Columns, Use
    // (MatrixAKHR 0, MatrixBKHR 1, MatrixAccumulatorKHR 2).
    ASSERT_EQ(khr_type.size(), 3u);
    EXPECT_EQ(khr_type[nv.t_a],
              (Words{nv.t_a, nv.half_t, nv.scope, nv.spec_a, nv.sixteen, khr_type[nv.t_a][5]}));
    EXPECT_EQ(uint_constant[khr_type[nv.t_a][5]], 0u);
    EXPECT_EQ(uint_constant[khr_type[nv.t_b][5]], 1u);
    EXPECT_EQ(uint_constant[khr_type[nv.t_c][5]], 2u);
    EXPECT_EQ(khr_type[nv.t_c][1], nv.float_t);
    // OpCooperativeMatrixLoadKHR: Result Type, Result, Pointer, MemoryLayout, Stride, operands
    // (RowMajorKHR 0, ColumnMajorKHR 1).
    ASSERT_EQ(loads.size(), 3u);
    EXPECT_EQ(loads[0].operands[0], nv.t_a);
    EXPECT_EQ(loads[0].operands[1], nv.a);
    EXPECT_EQ(loads[0].operands[2], nv.ptr);
    EXPECT_EQ(uint_constant[loads[0].operands[3]], 0u);
    EXPECT_EQ(loads[0].operands[4], nv.stride);
    EXPECT_EQ(loads[0].operands.size(), 5u);
    EXPECT_EQ(uint_constant[loads[1].operands[3]], 1u);
    EXPECT_EQ((Words(loads[1].operands.begin() + 4, loads[1].operands.end())),
              (Words{nv.stride, 0x2, 16}));
    // OpCooperativeMatrixStoreKHR: Pointer, Object, MemoryLayout, Stride.
    ASSERT_EQ(stores.size(), 1u);
    EXPECT_EQ(stores[0].operands.size(), 4u);
    EXPECT_EQ(stores[0].operands[0], nv.ptr);
    EXPECT_EQ(stores[0].operands[1], nv.d);
    EXPECT_EQ(uint_constant[stores[0].operands[2]], 1u);
    EXPECT_EQ(stores[0].operands[3], nv.sixteen);
    // OpCooperativeMatrixMulAddKHR: Result Type, Result, A, B, C (no operands for floats).
    ASSERT_EQ(muladds.size(), 1u);
    EXPECT_EQ(muladds[0].operands, (Words{nv.t_c, nv.d, nv.a, nv.b, nv.c0}));
}

TEST(VulkanSpirvCoopmat, WhatItCannotRewriteIsAClearError) {
    // A and B of one type: the KHR type's Use would have to be both.
    NvModule shared(true);
    try {
        vk::tools::coopmat_nv_to_khr(shared.m.words());
        ADD_FAILURE() << "rewrote a module whose A and B share a type";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("own type"), std::string::npos) << e.what();
    }
    Words cut = NvModule().m.words();
    cut.resize(cut.size() - 2);
    EXPECT_THROW(vk::tools::coopmat_nv_to_khr(cut), std::runtime_error);
    EXPECT_THROW(vk::tools::coopmat_nv_to_khr(Words{1, 2, 3}), std::runtime_error);
}

TEST(VulkanSpirvCoopmat, ModulesWithoutCooperativeMatricesPassUnchanged) {
    Module m;
    const uint32_t u = m.id(), c = m.id();
    m.inst(OpCapability, {1});
    m.inst(OpTypeInt, {u, 32, 0});
    m.inst(OpConstant, {u, c, 7});
    EXPECT_EQ(vk::tools::coopmat_nv_to_khr(m.words()), m.words());
}

// The prefill kernel as the build embedded it: KHR instructions only.
TEST(VulkanSpirvCoopmat, TheBuiltKernelIsKhrOnly) {
    const std::string path = std::string(TANDEM_VK_SPV_DIR) + "/matmul_coopmat.spv";
    std::ifstream f(path, std::ios::binary);
    if (!f) GTEST_SKIP() << "no " << path << " (Vulkan backend not built here)";
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    ASSERT_EQ(bytes.size() % 4, 0u);
    Words w(bytes.size() / 4);
    std::memcpy(w.data(), bytes.data(), bytes.size());
    int types = 0, muladds = 0;
    for (const Inst& in : parse(w)) {
        EXPECT_TRUE(in.op < 5357 || in.op > 5362) << "NV opcode " << in.op << " in " << path;
        types += in.op == OpTypeCooperativeMatrixKHR;
        muladds += in.op == OpCooperativeMatrixMulAddKHR;
    }
    EXPECT_EQ(types, 3) << "A, B and accumulator";
    EXPECT_GT(muladds, 0);
}

}  // namespace
}  // namespace tandem::test
