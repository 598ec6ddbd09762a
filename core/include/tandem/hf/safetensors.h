#pragma once
// Hugging Face safetensors: one file ("model.safetensors") or shards listed by
// "model.safetensors.index.json". A file is a u64 header length, a JSON header
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}} and the data.
// Every length, shape and offset is checked against the file; F32, F16 and BF16 are supported.
//
// Shapes here are as the file stores them (row-major, shape[0] slowest, PyTorch order), the
// reverse of ggml order.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tandem/common/dtype.h"

namespace tandem::gguf {
class MappedRange;
}

namespace tandem::hf {

struct SafeTensor {
    std::string name;
    DType dtype = DType::F32;     // F32, F16 or BF16
    std::vector<uint64_t> shape;  // row-major, PyTorch order
    uint64_t offset = 0;          // absolute offset of the data in its file
    uint64_t nbytes = 0;
    size_t shard = 0;  // index into SafetensorsModel::shards()
    uint64_t n_elements() const;
};

// Parses a header held in memory: `bytes` is the start of the file (at least 8 + header length
// bytes), file_size the whole file's size (data offsets are checked against it). `name` is used
// in messages. Throws tandem::Error naming the file, tensor and field. (Entry of the fuzzer.)
std::vector<SafeTensor> parse_safetensors_header(const uint8_t* bytes, size_t size,
                                                 uint64_t file_size, const std::string& name);

class SafetensorsModel {
  public:
    // `path`: a .safetensors file, or a folder with model.safetensors.index.json (shards) or
    // model.safetensors.
    static SafetensorsModel open(const std::filesystem::path& path);

    const std::vector<std::filesystem::path>& shards() const { return shards_; }
    const std::vector<SafeTensor>& tensors() const { return tensors_; }  // in file order
    const SafeTensor* find(const std::string& name) const;               // nullptr when absent
    const SafeTensor& get(const std::string& name) const;                // throws when absent
    // The raw bytes of a tensor (mapped, valid while this model lives).
    const uint8_t* data(const SafeTensor& t) const;
    // The tensor as float32 (exact from F16/BF16).
    std::vector<float> read_f32(const SafeTensor& t) const;

  private:
    std::vector<std::filesystem::path> shards_;
    std::vector<std::shared_ptr<gguf::MappedRange>> maps_;
    std::vector<SafeTensor> tensors_;
    std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace tandem::hf
