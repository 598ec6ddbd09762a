#pragma once
// A model's vocabulary as llama.cpp stores it in GGUF (tokenizer.ggml.* keys): the token strings,
// SentencePiece scores, token types, BPE merges, the special ids and the flags that steer encoding.
// Loaded from a GGUF file or from a Hugging Face folder (tokenizer.json, vocab.json + merges.txt,
// or encoder.json + vocab.bpe, with tokenizer_config.json), and written back with llama.cpp's keys.
//
// Token strings are kept exactly as the model files spell them: byte-level BPE vocabularies use
// GPT-2's byte-to-unicode alphabet ("Ġthe"), SentencePiece vocabularies use U+2581 for a space
// ("▁the") and "<0x0A>" byte tokens.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tandem::gguf {
class File;
class Writer;
}  // namespace tandem::gguf

namespace tandem::tokenizer {

// tokenizer.ggml.model: "gpt2" (byte-level BPE with merges) or "llama" (SentencePiece with scores).
enum class ModelKind { Bpe, Spm };

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type / gguf-py's TokenType).
enum class TokenType : int32_t {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,      // <s>, </s>, <|endoftext|>: never produced from text unless special parsing
    UserDefined = 4,  // added tokens matched as whole strings
    Unused = 5,
    Byte = 6,  // <0xNN> byte-fallback tokens of SentencePiece
};

struct Vocab {
    ModelKind model = ModelKind::Bpe;
    // tokenizer.ggml.pre: "default", "llama-bpe", "qwen2", "deepseek-coder", "deepseek-llm",
    // "falcon", "mpt", "gpt-2", ... (selects the pre-tokenizer regexes of byte-level BPE).
    std::string pre = "default";

    std::vector<std::string> tokens;  // id -> token string
    std::vector<float> scores;        // id -> score (SentencePiece); empty when the model has none
    std::vector<TokenType> types;     // id -> type; same size as tokens
    std::vector<std::string> merges;  // BPE merges "left right", highest priority first

    // Special ids, -1 when the model has none.
    int32_t bos_id = -1;
    int32_t eos_id = -1;
    int32_t unk_id = -1;
    int32_t pad_id = -1;
    int32_t sep_id = -1;
    int32_t mask_id = -1;
    int32_t eot_id = -1;  // end of turn (<|eot_id|>, <end_of_turn>, <|im_end|>)
    int32_t eom_id = -1;  // end of message (Llama 3.1 tool calls)
    // Every id that ends generation (eos, eot, eom and the like), no duplicates.
    std::vector<int32_t> eog_ids;

    bool add_bos = false;
    bool add_eos = false;
    // SentencePiece: prefix the text with a space (U+2581) before encoding. Gemma 3: false.
    bool add_space_prefix = true;

    std::string chat_template;  // tokenizer.chat_template ("" when absent)

    size_t size() const { return tokens.size(); }
    // The token string of id, or throws tandem::Error when out of range.
    const std::string& token(int32_t id) const;
    TokenType type(int32_t id) const;
    bool is_eog(int32_t id) const;
};

// Reads tokenizer.ggml.* and tokenizer.chat_template. Throws tandem::Error naming the file and key
// when a required key is missing or malformed (wrong type, sizes that disagree, a bos/eos/unk id
// out of range); other special ids out of range are dropped with a warning. Models other than
// "llama" and "gpt2" (bert, t5, rwkv...) are refused.
Vocab load_vocab(const gguf::File& file);

// Reads a Hugging Face tokenizer folder: tokenizer.json, or vocab.json + merges.txt, or
// encoder.json + vocab.bpe (GPT-2/OpenAI style), or SentencePiece's tokenizer.model (BPE); plus
// tokenizer_config.json (added tokens, special tokens, bos/eos, add_bos_token, chat_template) and
// special_tokens_map.json when present. The pre-tokenizer comes from tokenizer.json's regexes;
// without tokenizer.json it is recognised from tokenizer_config.json's tokenizer_class or the
// vocabulary's first merges (Llama 3, Qwen2, GPT-2), unless pre names it. Throws tandem::Error
// naming the file and field when the folder has no usable tokenizer or the pre-tokenizer cannot be
// told.
Vocab load_hf_vocab(const std::filesystem::path& folder, const std::string& pre = "");

// The vocabulary of a model given by path: a GGUF file (load_vocab) or a Hugging Face folder
// (load_hf_vocab). Throws tandem::Error naming the path when it is neither.
Vocab load_model_vocab(const std::filesystem::path& model);

// True when folder holds files load_hf_vocab can read.
bool has_hf_vocab(const std::filesystem::path& folder);

// Writes the vocabulary with llama.cpp's keys (tokenizer.ggml.model, .pre, .tokens, .scores,
// .token_type, .merges, .*_token_id, .add_bos_token, .add_eos_token, .add_space_prefix,
// tokenizer.chat_template).
void write_vocab(const Vocab& vocab, gguf::Writer& writer);

}  // namespace tandem::tokenizer
