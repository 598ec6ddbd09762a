#pragma once
// Choosing what to download from a GGUF repository: "owner/name[@revision][:QUANT]" specs, the
// quantization named in a file name, and split GGUFs (name-00001-of-00003.gguf) kept together.
#include <optional>
#include <string>
#include <vector>

#include "tandem/library/hf_client.h"

namespace tandem::library {

struct ModelSpec {
    std::string repo;  // "owner/name"
    std::string revision = "main";
    std::string quant;  // "" when not given
    // Throws tandem::Error for a spec without "owner/name".
    static ModelSpec parse(const std::string& spec);
};

// One downloadable model: a single GGUF or all parts of a split one, in part order.
struct QuantGroup {
    std::string quant;  // upper case ("Q4_K_M"), or the file stem when the name has none
    std::vector<RepoFile> files;
    uint32_t split_count = 1;  // NN of -000kk-of-000NN (1 when not split)
    uint64_t total_size() const;
    bool complete() const { return files.size() == split_count; }
};

// "Llama-3.2-1B-Instruct-Q4_K_M.gguf" -> "Q4_K_M"; nullopt when no quant tag is found.
std::optional<std::string> quant_from_filename(const std::string& filename);

// Groups the .gguf files of a repo listing (mmproj/projector files left out), sorted by name.
std::vector<QuantGroup> group_gguf_files(const std::vector<RepoFile>& files);

// The group for `quant` (case-insensitive); with quant empty, the only group or Q4_K_M when
// there are several. Throws tandem::Error listing the available quants otherwise, or when a
// split model's parts are missing from the listing.
const QuantGroup& pick_quant(const std::vector<QuantGroup>& groups, const std::string& quant,
                             const std::string& repo);

}  // namespace tandem::library
