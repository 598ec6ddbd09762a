#pragma once
// The one exception type of the core library. Errors carry a message a user can act on
// ("gguf: tensor 'blk.0.attn_q.weight': data offset 123 past end of file (size 100)").
#include <stdexcept>
#include <string>

namespace tandem {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace tandem
