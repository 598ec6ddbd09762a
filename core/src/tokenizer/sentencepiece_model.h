#pragma once
// SentencePiece's tokenizer.model (a ModelProto protobuf) as a Vocab: pieces, scores and types,
// the unk/bos/eos ids of its trainer spec and add_dummy_prefix as add_space_prefix.
#include <filesystem>

#include "tandem/tokenizer/vocab.h"

namespace tandem::tokenizer {

// Throws tandem::Error naming the file for malformed protobuf, a model type other than BPE
// (Unigram models need a different algorithm) or a normalizer other than "identity".
void read_sentencepiece_model(Vocab& vocab, const std::filesystem::path& path);

}  // namespace tandem::tokenizer
