#include "model_files.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "tandem/common/error.h"
#include "tandem/planner/shard_shape.h"

namespace tandem::net::cluster {

namespace fs = std::filesystem;

namespace {

std::string errno_text() {
    return std::strerror(errno);
}

}  // namespace

std::string model_fingerprint(const fs::path& file) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0)
        throw Error(file.string() + ": cannot read: " + errno_text());
    using Key = std::tuple<std::string, uint64_t, int64_t, int64_t>;
    static std::mutex mu;
    static std::map<Key, std::string> memo;
    const Key key{fs::absolute(file).string(), uint64_t(st.st_size), int64_t(st.st_mtim.tv_sec),
                  int64_t(st.st_mtim.tv_nsec)};
    {
        std::lock_guard lock(mu);
        if (auto it = memo.find(key); it != memo.end()) return it->second;
    }
    if (sodium_init() < 0) throw Error("libsodium failed to initialise");
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(file.string() + ": cannot open: " + errno_text());
    crypto_generichash_state state;
    crypto_generichash_init(&state, nullptr, 0, 32);
    std::vector<uint8_t> buf(size_t(4) << 20);
    for (;;) {
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const std::string why = errno_text();
            ::close(fd);
            throw Error(file.string() + ": read failed: " + why);
        }
        if (n == 0) break;
        crypto_generichash_update(&state, buf.data(), static_cast<size_t>(n));
    }
    ::close(fd);
    uint8_t digest[32];
    crypto_generichash_final(&state, digest, sizeof digest);
    char hex[65];
    sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
    std::lock_guard lock(mu);
    memo[key] = hex;
    return hex;
}

std::optional<fs::path> find_model(const std::vector<fs::path>& dirs, const std::string& name,
                                   const std::string& fingerprint) {
    for (const fs::path& d : dirs) {
        const fs::path p = d / name;
        std::error_code ec;
        if (!fs::is_regular_file(p, ec)) continue;
        if (model_fingerprint(p) == fingerprint) return p;
    }
    return std::nullopt;
}

fs::path shard_cache_path(const fs::path& dir, const std::string& fingerprint,
                          const engine::ShardSpec& s) {
    std::string key = fingerprint + "-kv" + std::to_string(s.kv_head_begin) + "_" +
                      std::to_string(s.kv_head_end) + "-q" + std::to_string(s.q_head_begin) + "_" +
                      std::to_string(s.q_head_end) + "-ff" + std::to_string(s.ff_begin) + "_" +
                      std::to_string(s.ff_end) + "-x" + std::to_string(s.expert_begin) + "_" +
                      std::to_string(s.expert_end) + "-v" + std::to_string(s.vocab_begin) + "_" +
                      std::to_string(s.vocab_end) + ".gguf";
    return dir / key;
}

ShardCacheWriter::ShardCacheWriter(fs::path final_path, uint64_t file_size)
    : final_(std::move(final_path)), size_(file_size) {
    std::error_code ec;
    fs::create_directories(final_.parent_path(), ec);
    tmp_ = final_;
    tmp_ += ".part" + std::to_string(::getpid());
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd_ < 0) throw Error(tmp_.string() + ": cannot create: " + errno_text());
    if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
        const std::string why = errno_text();
        ::close(fd_);
        fd_ = -1;
        fs::remove(tmp_, ec);
        throw Error(tmp_.string() + ": cannot size to " + std::to_string(size_) + ": " + why);
    }
}

ShardCacheWriter::~ShardCacheWriter() {
    if (fd_ >= 0) {
        ::close(fd_);
        std::error_code ec;
        fs::remove(tmp_, ec);
    }
}

void ShardCacheWriter::write(uint64_t offset, const uint8_t* data, size_t n) {
    if (fd_ < 0) throw Error("shard cache: already committed");
    if (offset > size_ || n > size_ - offset)
        throw Error("shard cache: chunk [" + std::to_string(offset) + ", +" + std::to_string(n) +
                    ") outside the model file of " + std::to_string(size_) + " bytes");
    while (n > 0) {
        const ssize_t w = ::pwrite(fd_, data, n, static_cast<off_t>(offset));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) throw Error(tmp_.string() + ": write failed: " + errno_text());
        data += w;
        n -= static_cast<size_t>(w);
        offset += static_cast<uint64_t>(w);
        written_ += static_cast<uint64_t>(w);
    }
}

void ShardCacheWriter::commit() {
    if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
        fd_ = -1;
        throw Error(tmp_.string() + ": cannot flush: " + errno_text());
    }
    fd_ = -1;
    fs::rename(tmp_, final_);
}

std::vector<ShardRange> shard_file_ranges(const fs::path& model_path,
                                          const engine::ShardSpec& shard) {
    auto whole = engine::load_model(model_path);
    auto shaped = planner::shape_shard(*whole, shard);
    std::vector<planner::ByteRange> all{{0, whole->file->data_offset()}};
    for (const auto& src : planner::weight_sources(*shaped))
        all.insert(all.end(), src.ranges.begin(), src.ranges.end());
    std::vector<ShardRange> out;
    for (const auto& r : planner::merge_ranges(std::move(all))) out.push_back({r.offset, r.size});
    return out;
}

}  // namespace tandem::net::cluster
