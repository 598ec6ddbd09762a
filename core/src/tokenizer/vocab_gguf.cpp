// Vocabulary <-> GGUF with llama.cpp's tokenizer.ggml.* keys.
#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"
#include "tandem/tokenizer/vocab.h"
#include "tokenizer/vocab_finish.h"

namespace tandem::tokenizer {
namespace {

constexpr const char* kModel = "tokenizer.ggml.model";
constexpr const char* kPre = "tokenizer.ggml.pre";
constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kScores = "tokenizer.ggml.scores";
constexpr const char* kTypes = "tokenizer.ggml.token_type";
constexpr const char* kMerges = "tokenizer.ggml.merges";
constexpr const char* kAddBos = "tokenizer.ggml.add_bos_token";
constexpr const char* kAddEos = "tokenizer.ggml.add_eos_token";
constexpr const char* kAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
constexpr const char* kChatTemplate = "tokenizer.chat_template";

struct IdKey {
    const char* key;
    int32_t Vocab::*field;
};
constexpr IdKey kIdKeys[] = {
    {"tokenizer.ggml.bos_token_id", &Vocab::bos_id},
    {"tokenizer.ggml.eos_token_id", &Vocab::eos_id},
    {"tokenizer.ggml.unknown_token_id", &Vocab::unk_id},
    {"tokenizer.ggml.padding_token_id", &Vocab::pad_id},
    {"tokenizer.ggml.seperator_token_id", &Vocab::sep_id},  // sic: llama.cpp's spelling
    {"tokenizer.ggml.mask_token_id", &Vocab::mask_id},
    {"tokenizer.ggml.eot_token_id", &Vocab::eot_id},
    {"tokenizer.ggml.eom_token_id", &Vocab::eom_id},
};

const gguf::Value::Array& array_of(const gguf::File& f, const char* key, gguf::ValueType elem,
                                   const char* elem_name) {
    const gguf::Value* v = f.find(key);
    if (!v) throw Error("tokenizer: " + f.path().string() + ": missing key " + key);
    if (!v->is_array() || v->as_array().elem_type != elem)
        throw Error("tokenizer: " + f.path().string() + ": " + key + " is not an array of " +
                    elem_name);
    return v->as_array();
}

}  // namespace

Vocab load_vocab(const gguf::File& f) {
    const std::string src = f.path().string();
    Vocab v;
    const std::string model = f.get_string(kModel);
    if (model == "llama") {
        v.model = ModelKind::Spm;
        // llama.cpp's defaults for SentencePiece files that omit the keys.
        v.bos_id = 1;
        v.eos_id = 2;
        v.unk_id = 0;
        v.add_bos = true;
    } else if (model == "gpt2") {
        v.model = ModelKind::Bpe;
    } else {
        throw Error("tokenizer: " + src + ": " + kModel + " '" + model +
                    "' is not supported (supported: llama, gpt2)");
    }
    v.pre = f.get_string(kPre, "default");

    for (const auto& item : array_of(f, kTokens, gguf::ValueType::String, "strings").items)
        v.tokens.push_back(item.as_string());
    if (f.find(kScores)) {
        const auto& a = array_of(f, kScores, gguf::ValueType::Float32, "float32");
        v.scores.reserve(a.items.size());
        for (const auto& item : a.items) v.scores.push_back(float(item.as_f64()));
    }
    if (f.find(kTypes)) {
        const auto& a = array_of(f, kTypes, gguf::ValueType::Int32, "int32");
        v.types.reserve(a.items.size());
        for (const auto& item : a.items) v.types.push_back(TokenType(int32_t(item.as_i64())));
    }
    if (f.find(kMerges))
        for (const auto& item : array_of(f, kMerges, gguf::ValueType::String, "strings").items)
            v.merges.push_back(item.as_string());
    if (v.model == ModelKind::Bpe && v.merges.empty())
        throw Error("tokenizer: " + src + ": byte-level BPE vocabulary without " + kMerges);

    for (const auto& k : kIdKeys) {
        if (!f.find(k.key)) continue;
        const uint64_t id = f.get_u64(k.key);
        v.*k.field = id > uint64_t(INT32_MAX) ? INT32_MAX : int32_t(id);
    }
    v.add_bos = f.get_bool(kAddBos, v.add_bos);
    v.add_eos = f.get_bool(kAddEos, v.add_eos);
    v.add_space_prefix = f.get_bool(kAddSpacePrefix, v.model == ModelKind::Spm);
    v.chat_template = f.get_string(kChatTemplate, "");
    finish_vocab(v, src);
    return v;
}

void write_vocab(const Vocab& v, gguf::Writer& w) {
    using gguf::Value;
    using gguf::ValueType;
    w.set(kModel, Value::string(model_kind_name(v.model)));
    w.set(kPre, Value::string(v.pre));
    std::vector<Value> items;
    items.reserve(v.tokens.size());
    for (const auto& t : v.tokens) items.push_back(Value::string(t));
    w.set(kTokens, Value::array(ValueType::String, std::move(items)));
    if (!v.scores.empty()) {
        items.clear();
        for (float s : v.scores) items.push_back(Value::f32(s));
        w.set(kScores, Value::array(ValueType::Float32, std::move(items)));
    }
    items.clear();
    for (size_t i = 0; i < v.tokens.size(); ++i)
        items.push_back(Value::i32(int32_t(i < v.types.size() ? v.types[i] : TokenType::Normal)));
    w.set(kTypes, Value::array(ValueType::Int32, std::move(items)));
    if (!v.merges.empty()) {
        items.clear();
        for (const auto& m : v.merges) items.push_back(Value::string(m));
        w.set(kMerges, Value::array(ValueType::String, std::move(items)));
    }
    for (const auto& k : kIdKeys)
        if (v.*k.field >= 0) w.set(k.key, Value::u32(uint32_t(v.*k.field)));
    w.set(kAddBos, Value::boolean(v.add_bos));
    w.set(kAddEos, Value::boolean(v.add_eos));
    if (v.model == ModelKind::Spm) w.set(kAddSpacePrefix, Value::boolean(v.add_space_prefix));
    if (!v.chat_template.empty()) w.set(kChatTemplate, Value::string(v.chat_template));
}

}  // namespace tandem::tokenizer
