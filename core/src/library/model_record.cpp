#include "tandem/library/model_record.h"

#include "tandem/common/dtype.h"
#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"
#include "tandem/library/quant_pick.h"

namespace tandem::library {

std::string file_type_name(uint64_t ft) {
    // llama.cpp's enum llama_ftype (the 'MOSTLY_' prefix dropped).
    static const std::map<uint64_t, const char*> names = {
        {0, "F32"},      {1, "F16"},      {2, "Q4_0"},       {3, "Q4_1"},    {7, "Q8_0"},
        {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},      {11, "Q3_K_S"}, {12, "Q3_K_M"},
        {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"},    {16, "Q5_K_S"}, {17, "Q5_K_M"},
        {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"},    {21, "Q2_K_S"}, {22, "IQ3_XS"},
        {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"},    {26, "IQ3_S"},  {27, "IQ3_M"},
        {28, "IQ2_S"},   {29, "IQ2_M"},   {30, "IQ4_XS"},    {31, "IQ1_M"},  {32, "BF16"},
        {36, "TQ1_0"},   {37, "TQ2_0"},   {38, "MXFP4_MOE"},
    };
    auto it = names.find(ft);
    return it == names.end() ? "" : it->second;
}

ModelRecord inspect_gguf(const std::vector<std::filesystem::path>& parts) {
    if (parts.empty()) throw Error("library: inspect_gguf needs at least one file");
    ModelRecord rec;
    gguf::OpenOptions no_map;
    no_map.map_all = false;
    for (size_t i = 0; i < parts.size(); ++i) {
        auto f = gguf::File::open(parts[i], no_map);
        const std::string where = "library: " + parts[i].string();
        uint64_t split_count = f.get_u64("split.count", 1);
        if (split_count != parts.size())
            throw Error(where + ": split.count is " + std::to_string(split_count) + " but " +
                        std::to_string(parts.size()) + " part(s) were found");
        if (parts.size() > 1 && f.get_u64("split.no", 0) != i)
            throw Error(where + ": split.no is " + std::to_string(f.get_u64("split.no", 0)) +
                        ", expected " + std::to_string(i));
        if (i == 0) {
            rec.architecture = f.get_string("general.architecture", "");
            if (rec.architecture.empty())
                throw Error(where + ": no general.architecture: not a model file");
            rec.name = f.get_string("general.name", "");
            rec.context_length = f.get_u64(rec.architecture + ".context_length", 0);
            if (f.find("general.file_type"))
                rec.quant = file_type_name(f.get_u64("general.file_type"));
        }
        for (const auto& t : f.tensors()) {
            rec.parameters += t.n_elements();
            rec.quant_mix[std::string(dtype_name(t.type))] += t.nbytes;
        }
        ModelFile mf;
        mf.path = std::filesystem::absolute(parts[i]);
        mf.size = f.file_size();
        rec.size_bytes += mf.size;
        rec.files.push_back(std::move(mf));
    }
    if (rec.parameters == 0)
        throw Error("library: " + parts[0].string() + ": has no tensors (vocabulary-only file?)");
    std::string stem = parts[0].filename().string();
    if (rec.name.empty())
        rec.name = stem.substr(0, stem.size() - parts[0].extension().string().size());
    if (rec.quant.empty())
        if (auto q = quant_from_filename(stem)) rec.quant = *q;
    return rec;
}

}  // namespace tandem::library
