#pragma once
// Shared pieces of the GGUF tests: a file with every metadata type and several tensor types, and
// the conversion of our values into the shape the PyPI gguf reader reports them in.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "tandem/gguf/gguf.h"

namespace tandem::test {

// Deterministic bytes for tensor data (a tiny LCG, so reruns compare equal).
inline std::vector<uint8_t> pattern_bytes(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    uint32_t x = seed * 2654435761u + 1;
    for (auto& b : v) {
        x = x * 1664525u + 1013904223u;
        b = uint8_t(x >> 24);
    }
    return v;
}

struct SampleTensor {
    std::string name;
    DType type;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> data;
};

inline std::vector<SampleTensor> sample_tensors() {
    std::vector<SampleTensor> ts = {
        {"token_embd.weight", DType::F16, {64, 10}, {}},     // [10, 64]
        {"blk.0.attn_norm.weight", DType::F32, {64}, {}},    // [64]
        {"blk.0.attn_q.weight", DType::Q8_0, {64, 8}, {}},   // [8, 64] in 32-element blocks
        {"blk.0.ffn_up.weight", DType::Q4_K, {256, 3}, {}},  // [3, 256] in 256-element blocks
        {"blk.0.ffn_down.weight", DType::BF16, {6, 5, 2}, {}},
        {"positions", DType::I32, {7}, {}},
        {"experts", DType::F32, {2, 3, 4, 5}, {}},
    };
    uint32_t seed = 1;
    for (auto& t : ts)
        t.data = pattern_bytes(
            row_bytes(t.type, t.shape[0]) *
                [&] {
                    uint64_t r = 1;
                    for (size_t i = 1; i < t.shape.size(); ++i) r *= t.shape[i];
                    return r;
                }(),
            seed++);
    return ts;
}

inline std::vector<std::pair<std::string, gguf::Value>> sample_metadata() {
    using gguf::Value;
    using gguf::ValueType;
    return {
        {"general.architecture", Value::string("llama")},
        {"test.u8", Value(ValueType::UInt8, uint64_t(200))},
        {"test.i8", Value(ValueType::Int8, int64_t(-100))},
        {"test.u16", Value(ValueType::UInt16, uint64_t(65000))},
        {"test.i16", Value(ValueType::Int16, int64_t(-32000))},
        {"test.u32", Value::u32(4000000000u)},
        {"test.i32", Value::i32(-2000000000)},
        {"test.f32", Value::f32(0.1f)},
        {"test.bool_true", Value::boolean(true)},
        {"test.bool_false", Value::boolean(false)},
        {"test.string", Value::string("héllo \xe4\xb8\x96\xe7\x95\x8c")},
        {"test.empty_string", Value::string("")},
        {"test.u64", Value::u64(18000000000000000000ull)},
        {"test.i64", Value(ValueType::Int64, int64_t(-9000000000000000000ll))},
        {"test.f64", Value(ValueType::Float64, 2.718281828459045)},
        {"test.array_i32",
         Value::array(ValueType::Int32, {Value::i32(1), Value::i32(-2), Value::i32(3)})},
        {"test.array_f32",
         Value::array(ValueType::Float32, {Value::f32(0.5f), Value::f32(-1.25f)})},
        {"test.array_string",
         Value::array(ValueType::String,
                      {Value::string("a"), Value::string(""), Value::string("<|endoftext|>")})},
        {"test.array_empty", Value::array(ValueType::UInt8, {})},
        {"test.array_nested",
         Value::array(ValueType::Array,
                      {Value::array(ValueType::UInt32, {Value::u32(1), Value::u32(2)}),
                       Value::array(ValueType::UInt32, {Value::u32(3)})})},
        {"test.array_bool",
         Value::array(ValueType::Bool, {Value::boolean(true), Value::boolean(false)})},
    };
}

inline gguf::Writer sample_writer(const std::vector<SampleTensor>& tensors, uint64_t alignment) {
    gguf::Writer w(alignment);
    for (auto& [k, v] : sample_metadata()) w.set(k, v);
    for (const auto& t : tensors) w.add_tensor(t.name, t.type, t.shape, t.data.data());
    return w;
}

// A value as the PyPI reader's ReaderField.contents() shows it: scalars as themselves, arrays of
// strings as lists, other arrays flattened (nested arrays too).
inline void flatten_into(const gguf::Value& v, nlohmann::json& out) {
    if (v.is_array()) {
        for (const auto& item : v.as_array().items) flatten_into(item, out);
        return;
    }
    out.push_back(nlohmann::json());
    auto& slot = out.back();
    switch (v.type()) {
        case gguf::ValueType::String:
            slot = v.as_string();
            break;
        case gguf::ValueType::Bool:
            slot = v.as_bool();
            break;
        case gguf::ValueType::Float32:
        case gguf::ValueType::Float64:
            slot = v.as_f64();
            break;
        case gguf::ValueType::Int8:
        case gguf::ValueType::Int16:
        case gguf::ValueType::Int32:
        case gguf::ValueType::Int64:
            slot = v.as_i64();
            break;
        default:
            slot = v.as_u64();
            break;
    }
}

inline nlohmann::json as_python_contents(const gguf::Value& v) {
    nlohmann::json out = nlohmann::json::array();
    flatten_into(v, out);
    return v.is_array() ? out : out[0];
}

}  // namespace tandem::test
