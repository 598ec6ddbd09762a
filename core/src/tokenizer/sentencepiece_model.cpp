#include "tokenizer/sentencepiece_model.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "tandem/common/error.h"
#include "tandem/common/log.h"

namespace tandem::tokenizer {
namespace {

// A protobuf message reader: fields are (number, wire type, payload). Only what ModelProto
// uses: varints (0), fixed64 (1), length-delimited (2) and fixed32 (5).
class ProtoReader {
  public:
    ProtoReader(std::string_view data, const std::string& where) : data_(data), where_(where) {}

    bool done() const { return pos_ >= data_.size(); }

    void next_field(uint32_t& number, uint32_t& wire) {
        const uint64_t key = varint();
        number = uint32_t(key >> 3);
        wire = uint32_t(key & 7);
    }
    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ >= data_.size()) fail("truncated varint");
            const uint8_t b = uint8_t(data_[pos_++]);
            v |= uint64_t(b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
        }
        fail("varint longer than 10 bytes");
    }
    std::string_view bytes() {
        const uint64_t n = varint();
        if (n > data_.size() - pos_) fail("length " + std::to_string(n) + " past the end");
        const std::string_view s = data_.substr(pos_, size_t(n));
        pos_ += size_t(n);
        return s;
    }
    float fixed32_float() {
        if (data_.size() - pos_ < 4) fail("truncated fixed32");
        uint32_t u = 0;
        for (int i = 0; i < 4; ++i) u |= uint32_t(uint8_t(data_[pos_ + size_t(i)])) << (8 * i);
        pos_ += 4;
        float f;
        static_assert(sizeof f == 4);
        std::memcpy(&f, &u, 4);
        return f;
    }
    void skip(uint32_t wire) {
        switch (wire) {
            case 0:
                varint();
                return;
            case 1:
                advance(8);
                return;
            case 2:
                bytes();
                return;
            case 5:
                advance(4);
                return;
            default:
                fail("unsupported wire type " + std::to_string(wire));
        }
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw Error("tokenizer: " + where_ + ": malformed protobuf at byte " +
                    std::to_string(pos_) + ": " + what);
    }

  private:
    void advance(size_t n) {
        if (data_.size() - pos_ < n) fail("truncated field");
        pos_ += n;
    }
    std::string_view data_;
    std::string where_;
    size_t pos_ = 0;
};

constexpr std::string_view kSpace = "\xE2\x96\x81";

}  // namespace

void read_sentencepiece_model(Vocab& v, const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("tokenizer: cannot read " + path.string());
    std::ostringstream ss;
    ss << f.rdbuf();
    const std::string data = ss.str();
    const std::string where = path.string();

    int32_t unk = 0, bos = 1, eos = 2, pad = -1;  // SentencePiece's defaults
    uint64_t model_type = 1;                      // UNIGRAM unless the trainer spec says BPE
    bool add_dummy_prefix = true, remove_extra_whitespaces = true;
    std::string normalizer = "nmt_nfkc";
    ProtoReader model(data, where);
    uint32_t number, wire;
    while (!model.done()) {
        model.next_field(number, wire);
        if (number == 1 && wire == 2) {  // SentencePiece
            ProtoReader piece(model.bytes(), where);
            std::string text;
            float score = 0.0f;
            uint64_t type = 1;
            while (!piece.done()) {
                piece.next_field(number, wire);
                if (number == 1 && wire == 2)
                    text = std::string(piece.bytes());
                else if (number == 2 && wire == 5)
                    score = piece.fixed32_float();
                else if (number == 3 && wire == 0)
                    type = piece.varint();
                else
                    piece.skip(wire);
            }
            if (type < 1 || type > 6) piece.fail("piece type " + std::to_string(type));
            // Like llama.cpp's converter: user-defined pieces are matched in raw text, so their
            // U+2581 become the spaces they stand for.
            if (type == uint64_t(TokenType::UserDefined)) {
                for (size_t at; (at = text.find(kSpace)) != std::string::npos;)
                    text.replace(at, kSpace.size(), " ");
            }
            v.tokens.push_back(std::move(text));
            v.scores.push_back(score);
            v.types.push_back(TokenType(type));
        } else if (number == 2 && wire == 2) {  // TrainerSpec
            ProtoReader spec(model.bytes(), where);
            while (!spec.done()) {
                spec.next_field(number, wire);
                if (wire != 0) {
                    spec.skip(wire);
                    continue;
                }
                const uint64_t value = spec.varint();
                if (number == 3) model_type = value;
                if (number == 40) unk = int32_t(value);
                if (number == 41) bos = int32_t(value);
                if (number == 42) eos = int32_t(value);
                if (number == 43) pad = int32_t(value);
            }
        } else if (number == 3 && wire == 2) {  // NormalizerSpec
            ProtoReader spec(model.bytes(), where);
            while (!spec.done()) {
                spec.next_field(number, wire);
                if (number == 1 && wire == 2)
                    normalizer = std::string(spec.bytes());
                else if (number == 3 && wire == 0)
                    add_dummy_prefix = spec.varint() != 0;
                else if (number == 4 && wire == 0)
                    remove_extra_whitespaces = spec.varint() != 0;
                else
                    spec.skip(wire);
            }
        } else {
            model.skip(wire);
        }
    }
    if (v.tokens.empty()) throw Error("tokenizer: " + where + ": no pieces");
    if (model_type != 2)
        throw Error("tokenizer: " + where + ": SentencePiece model type " +
                    std::to_string(model_type) + " is not supported (BPE, type 2, only)");
    if (normalizer != "identity")
        throw Error("tokenizer: " + where + ": SentencePiece normalizer '" + normalizer +
                    "' is not supported (identity only)");
    if (remove_extra_whitespaces)
        log_warn("tokenizer: " + where +
                 ": remove_extra_whitespaces is set; runs of spaces are kept as they are");
    v.model = ModelKind::Spm;
    v.add_space_prefix = add_dummy_prefix;
    // SentencePiece gives -1 for "none"; the vocabulary says -1 too.
    v.unk_id = unk;
    v.bos_id = bos;
    v.eos_id = eos;
    v.pad_id = pad;
    v.add_bos = v.bos_id >= 0;
}

}  // namespace tandem::tokenizer
