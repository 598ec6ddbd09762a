// Build tool: spirv-coopmat-khr IN.spv OUT.spv rewrites a module compiled against
// GL_NV_cooperative_matrix to SPV_KHR_cooperative_matrix (see spirv_coopmat_rewrite.h).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "spirv_coopmat_rewrite.h"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s IN.spv OUT.spv\n", argv[0]);
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.eof() && in.fail()) {
        std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
        return 1;
    }
    if (bytes.size() % 4) {
        std::fprintf(stderr, "%s: %s is not whole 32-bit words\n", argv[0], argv[1]);
        return 1;
    }
    std::vector<uint32_t> words(bytes.size() / 4);
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(words.data()));
    try {
        words = tandem::vk::tools::coopmat_nv_to_khr(words);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], e.what());
        return 1;
    }
    std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(words.data()), std::streamsize(words.size() * 4));
    if (!out) {
        std::fprintf(stderr, "%s: cannot write %s\n", argv[0], argv[2]);
        return 1;
    }
    return 0;
}
