#pragma once
// What the library knows about one local model (a single GGUF or all parts of a split one).
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace tandem::library {

struct ModelFile {
    std::filesystem::path path;
    uint64_t size = 0;
    std::string sha256;  // "" when not computed (imported files are not hashed on import)
};

struct ModelRecord {
    int64_t id = 0;
    std::string name;              // general.name, else the file stem
    std::vector<ModelFile> files;  // split parts in order; files[0] is what a loader opens
    std::string architecture;      // general.architecture ("llama", "qwen2", ...)
    uint64_t parameters = 0;       // elements of all tensors
    std::string quant;             // "Q4_K_M" (general.file_type, else the file name)
    std::map<std::string, uint64_t> quant_mix;  // tensor type ("q4_k") -> bytes
    uint64_t size_bytes = 0;                    // all files
    uint64_t context_length = 0;                // <arch>.context_length (0 when absent)
    std::string source_repo;                    // "owner/name" when pulled from a hub
    std::string source_revision;
    bool managed = false;      // downloaded into the models folder: `rm` may delete the files
    int64_t added_at = 0;      // unix seconds
    int64_t last_used_at = 0;  // 0: never

    const std::filesystem::path& path() const { return files.front().path; }
};

// Reads a model's facts from its GGUF file(s) (header and tensor table only). For a split model
// give every part in order; the parts' split.count/split.no are checked. Throws tandem::Error
// naming the file for anything that is not a usable GGUF model (vocabulary-only files too).
ModelRecord inspect_gguf(const std::vector<std::filesystem::path>& parts);

// llama.cpp's general.file_type numbers as quant names (15 -> "Q4_K_M"); "" when unknown.
std::string file_type_name(uint64_t file_type);

}  // namespace tandem::library
