#include "tandem/library/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <vector>

#include "tandem/common/error.h"

namespace tandem::library {

struct Sha256::Impl {
    EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
    impl_->ctx = EVP_MD_CTX_new();
    if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) != 1)
        throw Error("sha256: OpenSSL could not start a digest");
}

Sha256::~Sha256() {
    EVP_MD_CTX_free(impl_->ctx);
}

void Sha256::update(const void* data, size_t n) {
    if (EVP_DigestUpdate(impl_->ctx, data, n) != 1) throw Error("sha256: digest update failed");
}

std::string Sha256::hex_digest() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(impl_->ctx, md, &len) != 1) throw Error("sha256: digest final failed");
    static const char* hex = "0123456789abcdef";
    std::string out;
    out.reserve(len * 2);
    for (unsigned i = 0; i < len; ++i) {
        out.push_back(hex[md[i] >> 4]);
        out.push_back(hex[md[i] & 15]);
    }
    return out;
}

std::string sha256_file(const std::filesystem::path& path,
                        const std::function<bool(uint64_t)>& on_bytes) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw Error("sha256: cannot open " + path.string());
    Sha256 h;
    std::vector<char> buf(1 << 20);
    uint64_t total = 0;
    for (;;) {
        size_t n = std::fread(buf.data(), 1, buf.size(), f);
        if (n > 0) {
            h.update(buf.data(), n);
            total += n;
            if (on_bytes && !on_bytes(total)) {
                std::fclose(f);
                throw Error("sha256: cancelled while hashing " + path.string());
            }
        }
        if (n < buf.size()) break;
    }
    bool failed = std::ferror(f) != 0;
    std::fclose(f);
    if (failed) throw Error("sha256: read error in " + path.string());
    return h.hex_digest();
}

}  // namespace tandem::library
