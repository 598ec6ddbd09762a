#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"
#include "tandem/tokenizer/vocab.h"

namespace tandem::tokenizer {

Vocab load_model_vocab(const std::filesystem::path& model) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(model, ec)) return load_hf_vocab(model);
    if (!fs::exists(model, ec)) throw Error("tokenizer: " + model.string() + ": no such file");
    // Only metadata is needed: do not map the tensor data.
    return load_vocab(gguf::File::open(model, gguf::OpenOptions{.map_all = false}));
}

}  // namespace tandem::tokenizer
