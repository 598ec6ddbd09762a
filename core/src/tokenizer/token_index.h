#pragma once
// Token string -> id lookup without building a std::string per query.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tandem::tokenizer {

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class TokenIndex {
  public:
    // The first id of a text wins (some GGUF vocabularies repeat padding tokens).
    void add(const std::string& token, int32_t id) { map_.emplace(token, id); }
    int32_t find(std::string_view token) const {
        auto it = map_.find(token);
        return it == map_.end() ? -1 : it->second;
    }
    void reserve(size_t n) { map_.reserve(n); }

  private:
    std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> map_;
};

}  // namespace tandem::tokenizer
