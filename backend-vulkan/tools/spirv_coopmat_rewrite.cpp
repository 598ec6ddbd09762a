#include "spirv_coopmat_rewrite.h"

#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

namespace tandem::vk::tools {
namespace {

// Opcodes and enumerants from the SPIR-V unified specification.
enum : uint32_t {
    kMagic = 0x07230203,
    OpExtension = 10,
    OpTypeInt = 21,
    OpConstantTrue = 41,
    OpConstantFalse = 42,
    OpConstant = 43,
    OpCapability = 17,
    OpTypeCooperativeMatrixNV = 5358,
    OpCooperativeMatrixLoadNV = 5359,
    OpCooperativeMatrixStoreNV = 5360,
    OpCooperativeMatrixMulAddNV = 5361,
    OpCooperativeMatrixLengthNV = 5362,
    OpTypeCooperativeMatrixKHR = 4456,
    OpCooperativeMatrixLoadKHR = 4457,
    OpCooperativeMatrixStoreKHR = 4458,
    OpCooperativeMatrixMulAddKHR = 4459,
    OpCooperativeMatrixLengthKHR = 4460,
    CapabilityCooperativeMatrixNV = 5357,
    CapabilityCooperativeMatrixKHR = 6022,
};
// CooperativeMatrixUse and CooperativeMatrixLayout values.
constexpr uint32_t kUseA = 0, kUseB = 1, kUseAccumulator = 2;

using Inst = std::vector<uint32_t>;  // word 0 included

uint32_t opcode(const Inst& in) {
    return in[0] & 0xFFFFu;
}

Inst make(uint32_t op, std::vector<uint32_t> operands) {
    Inst in{0};
    in.insert(in.end(), operands.begin(), operands.end());
    in[0] = (uint32_t(in.size()) << 16) | op;
    return in;
}

std::string literal_string(const Inst& in, size_t from) {
    std::string s;
    for (size_t w = from; w < in.size(); ++w)
        for (int b = 0; b < 4; ++b) {
            const char c = char((in[w] >> (8 * b)) & 0xFF);
            if (c == 0) return s;
            s += c;
        }
    return s;
}

std::vector<uint32_t> string_words(const std::string& s) {
    std::vector<uint32_t> w((s.size() + 4) / 4, 0);  // nul-terminated, zero-padded
    std::memcpy(w.data(), s.data(), s.size());
    return w;
}

[[noreturn]] void fail(const std::string& why) {
    throw std::runtime_error("coopmat NV -> KHR: " + why);
}

}  // namespace

std::vector<uint32_t> coopmat_nv_to_khr(const std::vector<uint32_t>& words) {
    if (words.size() < 5 || words[0] != kMagic) fail("not a SPIR-V module (or not little-endian)");
    std::vector<Inst> insts;
    for (size_t at = 5; at < words.size();) {
        const uint32_t n = words[at] >> 16;
        if (n == 0 || at + n > words.size())
            fail("truncated instruction at word " + std::to_string(at));
        insts.emplace_back(words.begin() + long(at), words.begin() + long(at + n));
        at += n;
    }
    uint32_t bound = words[3];

    // Result types of the values a MulAdd may take (what glslang emits for matrix operands).
    std::map<uint32_t, uint32_t> type_of;
    std::map<uint32_t, uint32_t> uses;       // NV matrix type -> Use
    std::map<uint32_t, bool> bool_constant;  // OpConstantTrue / False ids
    uint32_t uint_type = 0;
    for (const Inst& in : insts) {
        const uint32_t op = opcode(in);
        if (op == OpTypeInt && in.size() == 4 && in[2] == 32 && in[3] == 0) uint_type = in[1];
        if (op == OpConstantTrue || op == OpConstantFalse)
            bool_constant[in[2]] = op == OpConstantTrue;
        if (op == OpTypeCooperativeMatrixNV) uses.emplace(in[1], ~0u);
        // Every instruction with a result type has it in word 1 and the result in word 2; the
        // map is only consulted for MulAdd operands, whose producers are all of that form.
        if (in.size() >= 3 && op != OpTypeCooperativeMatrixNV && op != OpTypeInt)
            type_of[in[2]] = in[1];
    }
    if (uses.empty()) return words;  // nothing to do
    if (uint_type == 0) fail("no 32-bit unsigned integer type to build the Use constants from");

    auto set_use = [&](uint32_t type, uint32_t use, const char* what) {
        auto it = uses.find(type);
        if (it == uses.end())
            fail(std::string("the ") + what + " of a MulAdd is not a matrix type");
        if (it->second != ~0u && it->second != use)
            fail("matrix type %" + std::to_string(type) +
                 " is used as two of A, B and accumulator; give each its own type");
        it->second = use;
    };
    for (const Inst& in : insts) {
        if (opcode(in) != OpCooperativeMatrixMulAddNV) continue;
        auto operand_type = [&](uint32_t id) {
            auto it = type_of.find(id);
            if (it == type_of.end())
                fail("cannot find the type of MulAdd operand %" + std::to_string(id));
            return it->second;
        };
        set_use(in[1], kUseAccumulator, "result");
        set_use(operand_type(in[3]), kUseA, "A operand");
        set_use(operand_type(in[4]), kUseB, "B operand");
        set_use(operand_type(in[5]), kUseAccumulator, "C operand");
    }
    for (auto& [type, use] : uses)
        if (use == ~0u)
            fail("matrix type %" + std::to_string(type) +
                 " is never multiplied, so its use is unknown");

    // uint constants 0, 1, 2: the Use operands, and MemoryLayout RowMajor (0) / ColumnMajor (1).
    const uint32_t c[3] = {bound, bound + 1, bound + 2};
    bound += 3;
    auto layout_of = [&](uint32_t bool_id) {
        auto it = bool_constant.find(bool_id);
        if (it == bool_constant.end())
            fail("a load or store's column-major flag is not a constant");
        return it->second ? c[1] : c[0];
    };

    std::vector<Inst> out;
    bool constants_placed = false;
    for (const Inst& in : insts) {
        const uint32_t op = opcode(in);
        switch (op) {
            case OpCapability:
                out.push_back(in[1] == CapabilityCooperativeMatrixNV
                                  ? make(OpCapability, {CapabilityCooperativeMatrixKHR})
                                  : in);
                break;
            case OpExtension:
                out.push_back(literal_string(in, 1) == "SPV_NV_cooperative_matrix"
                                  ? make(OpExtension, string_words("SPV_KHR_cooperative_matrix"))
                                  : in);
                break;
            case OpTypeCooperativeMatrixNV:
                if (in.size() != 6) fail("malformed OpTypeCooperativeMatrixNV");
                if (!constants_placed) {
                    for (uint32_t v = 0; v < 3; ++v)
                        out.push_back(make(OpConstant, {uint_type, c[v], v}));
                    constants_placed = true;
                }
                out.push_back(make(OpTypeCooperativeMatrixKHR,
                                   {in[1], in[2], in[3], in[4], in[5], c[uses.at(in[1])]}));
                break;
            case OpCooperativeMatrixLoadNV: {
                if (in.size() < 6) fail("malformed OpCooperativeMatrixLoadNV");
                std::vector<uint32_t> ops{in[1], in[2], in[3], layout_of(in[5]), in[4]};
                ops.insert(ops.end(), in.begin() + 6, in.end());  // memory operands
                out.push_back(make(OpCooperativeMatrixLoadKHR, ops));
                break;
            }
            case OpCooperativeMatrixStoreNV: {
                if (in.size() < 5) fail("malformed OpCooperativeMatrixStoreNV");
                std::vector<uint32_t> ops{in[1], in[2], layout_of(in[4]), in[3]};
                ops.insert(ops.end(), in.begin() + 5, in.end());
                out.push_back(make(OpCooperativeMatrixStoreKHR, ops));
                break;
            }
            case OpCooperativeMatrixMulAddNV:
                out.push_back(
                    make(OpCooperativeMatrixMulAddKHR, {in[1], in[2], in[3], in[4], in[5]}));
                break;
            case OpCooperativeMatrixLengthNV:
                out.push_back(make(OpCooperativeMatrixLengthKHR, {in[1], in[2], in[3]}));
                break;
            default:
                out.push_back(in);
        }
    }

    std::vector<uint32_t> result(words.begin(), words.begin() + 5);
    result[3] = bound;
    for (const Inst& in : out) result.insert(result.end(), in.begin(), in.end());
    return result;
}

}  // namespace tandem::vk::tools
