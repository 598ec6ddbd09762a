// Opening a safetensors model: one file, or the shards named by the index.
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <set>

#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"
#include "tandem/hf/safetensors.h"
#include "tandem/quant/fp16.h"

namespace tandem::hf {
namespace {

nlohmann::json read_json(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw Error("safetensors: cannot open " + p.string());
    auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw Error("safetensors: " + p.string() + ": not valid JSON");
    return j;
}

}  // namespace

SafetensorsModel SafetensorsModel::open(const std::filesystem::path& path) {
    SafetensorsModel m;
    std::error_code ec;
    // The tensors each shard must hold, when an index names them.
    std::map<std::string, std::string> expected;
    if (std::filesystem::is_directory(path, ec)) {
        const auto index = path / "model.safetensors.index.json";
        if (std::filesystem::exists(index)) {
            auto j = read_json(index);
            if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
                throw Error("safetensors: " + index.string() + ": no weight_map object");
            std::set<std::string> files;
            for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
                if (!it.value().is_string())
                    throw Error("safetensors: " + index.string() + ": weight_map['" + it.key() +
                                "'] is not a file name");
                const std::string f = it.value().get<std::string>();
                // Shards live beside the index; a path elsewhere is a broken or hostile index.
                if (f.empty() || f.find('/') != std::string::npos ||
                    f.find('\\') != std::string::npos || f == "." || f == "..")
                    throw Error("safetensors: " + index.string() + ": weight_map['" + it.key() +
                                "'] = '" + f + "' is not a file name in the folder");
                files.insert(f);
                expected[it.key()] = f;
            }
            if (files.empty())
                throw Error("safetensors: " + index.string() + ": weight_map is empty");
            for (const auto& f : files) m.shards_.push_back(path / f);
        } else if (std::filesystem::exists(path / "model.safetensors")) {
            m.shards_.push_back(path / "model.safetensors");
        } else {
            throw Error("safetensors: " + path.string() +
                        ": no model.safetensors or model.safetensors.index.json");
        }
    } else {
        m.shards_.push_back(path);
    }

    for (size_t s = 0; s < m.shards_.size(); ++s) {
        const auto& shard = m.shards_[s];
        const auto size = std::filesystem::file_size(shard, ec);
        if (ec) throw Error("safetensors: cannot open " + shard.string() + ": " + ec.message());
        auto map = std::make_shared<gguf::MappedRange>(shard, 0, size);
        auto tensors =
            parse_safetensors_header(map->data(), size_t(map->size()), size, shard.string());
        for (auto& t : tensors) {
            t.shard = s;
            if (!expected.empty()) {
                auto it = expected.find(t.name);
                if (it == expected.end() || it->second != shard.filename().string())
                    continue;  // the index is authoritative about where a tensor lives
            }
            if (m.index_.count(t.name))
                throw Error("safetensors: tensor '" + t.name + "' appears in more than one shard");
            m.index_.emplace(t.name, m.tensors_.size());
            m.tensors_.push_back(std::move(t));
        }
        m.maps_.push_back(std::move(map));
    }
    for (const auto& [name, file] : expected)
        if (!m.index_.count(name))
            throw Error("safetensors: tensor '" + name + "' listed in the index is not in " + file);
    return m;
}

const SafeTensor* SafetensorsModel::find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

const SafeTensor& SafetensorsModel::get(const std::string& name) const {
    const auto* t = find(name);
    if (!t) throw Error("safetensors: tensor '" + name + "' not found in the model");
    return *t;
}

const uint8_t* SafetensorsModel::data(const SafeTensor& t) const {
    return maps_.at(t.shard)->data() + t.offset;
}

std::vector<float> SafetensorsModel::read_f32(const SafeTensor& t) const {
    const uint8_t* src = data(t);
    const size_t n = size_t(t.n_elements());
    std::vector<float> out(n);
    switch (t.dtype) {
        case DType::F32:
            std::memcpy(out.data(), src, n * 4);
            break;
        case DType::F16:
            for (size_t i = 0; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, src + 2 * i, 2);
                out[i] = quant::fp16_to_fp32(h);
            }
            break;
        case DType::BF16:
            for (size_t i = 0; i < n; ++i) {
                uint16_t h;
                std::memcpy(&h, src + 2 * i, 2);
                out[i] = quant::bf16_to_fp32(h);
            }
            break;
        default:
            throw Error("safetensors: tensor '" + t.name + "': unsupported dtype");
    }
    return out;
}

}  // namespace tandem::hf
