// Value conversions and type names.
#include <cmath>

#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"

namespace tandem::gguf {

std::string_view value_type_name(ValueType t) {
    switch (t) {
        case ValueType::UInt8:
            return "u8";
        case ValueType::Int8:
            return "i8";
        case ValueType::UInt16:
            return "u16";
        case ValueType::Int16:
            return "i16";
        case ValueType::UInt32:
            return "u32";
        case ValueType::Int32:
            return "i32";
        case ValueType::Float32:
            return "f32";
        case ValueType::Bool:
            return "bool";
        case ValueType::String:
            return "string";
        case ValueType::Array:
            return "array";
        case ValueType::UInt64:
            return "u64";
        case ValueType::Int64:
            return "i64";
        case ValueType::Float64:
            return "f64";
    }
    return "unknown";
}

namespace {
[[noreturn]] void wrong_type(ValueType have, const char* want) {
    throw Error("gguf: value is " + std::string(value_type_name(have)) + ", expected " + want);
}
}  // namespace

uint64_t Value::as_u64() const {
    if (auto* u = std::get_if<uint64_t>(&storage_)) return *u;
    if (auto* i = std::get_if<int64_t>(&storage_)) {
        if (*i < 0)
            throw Error("gguf: value " + std::to_string(*i) + " is negative, expected unsigned");
        return uint64_t(*i);
    }
    if (auto* d = std::get_if<double>(&storage_)) {
        // Integral floats (e.g. a context length someone stored as f32) are accepted exactly.
        if (*d >= 0 && *d < 18446744073709551616.0 && std::floor(*d) == *d) return uint64_t(*d);
        throw Error("gguf: value " + std::to_string(*d) + " is not a non-negative integer");
    }
    wrong_type(type_, "an integer");
}

int64_t Value::as_i64() const {
    if (auto* i = std::get_if<int64_t>(&storage_)) return *i;
    if (auto* u = std::get_if<uint64_t>(&storage_)) {
        if (*u > uint64_t(INT64_MAX))
            throw Error("gguf: value " + std::to_string(*u) + " too large for i64");
        return int64_t(*u);
    }
    if (auto* d = std::get_if<double>(&storage_)) {
        if (*d >= -9223372036854775808.0 && *d < 9223372036854775808.0 && std::floor(*d) == *d)
            return int64_t(*d);
        throw Error("gguf: value " + std::to_string(*d) + " is not an integer");
    }
    wrong_type(type_, "an integer");
}

double Value::as_f64() const {
    if (auto* d = std::get_if<double>(&storage_)) return *d;
    if (auto* u = std::get_if<uint64_t>(&storage_)) return double(*u);
    if (auto* i = std::get_if<int64_t>(&storage_)) return double(*i);
    wrong_type(type_, "a number");
}

bool Value::as_bool() const {
    if (auto* b = std::get_if<bool>(&storage_)) return *b;
    wrong_type(type_, "bool");
}

const std::string& Value::as_string() const {
    if (auto* s = std::get_if<std::string>(&storage_)) return *s;
    wrong_type(type_, "string");
}

const Value::Array& Value::as_array() const {
    if (auto* a = std::get_if<Array>(&storage_)) return *a;
    wrong_type(type_, "array");
}

}  // namespace tandem::gguf
