#include "tandem/planner/shard_loader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tandem/common/error.h"
#include "tandem/planner/shard_shape.h"

namespace tandem::planner {

namespace {

constexpr uint64_t kAlign = 64;  // weight start alignment in the shard buffer (SIMD loads)

struct Copy {
    uint64_t src = 0, size = 0, dst = 0;  // file offset, bytes, offset in the shard buffer
};

class Fd {
  public:
    explicit Fd(const std::filesystem::path& p) : fd_(::open(p.c_str(), O_RDONLY | O_CLOEXEC)) {
        if (fd_ < 0) throw Error(p.string() + ": cannot open: " + std::strerror(errno));
    }
    ~Fd() { ::close(fd_); }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }

  private:
    int fd_;
};

void read_exact(const Fd& fd, const std::filesystem::path& p, uint8_t* dst, uint64_t size,
                uint64_t offset) {
    while (size > 0) {
        const ssize_t got = ::pread(fd.get(), dst, size, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            throw Error(p.string() + ": short read at offset " + std::to_string(offset) + ": " +
                        (got < 0 ? std::strerror(errno) : "end of file"));
        dst += got;
        size -= static_cast<uint64_t>(got);
        offset += static_cast<uint64_t>(got);
    }
}

}  // namespace

std::shared_ptr<engine::Model> load_shard(const std::filesystem::path& path,
                                          const engine::ShardSpec& shard, ShardLoadStats* stats) {
    // The tensor table, shapes and slots from the header alone: the file stays unmapped and
    // only the shard's ranges are read below.
    auto file = std::make_shared<const gguf::File>(
        gguf::File::open(path, gguf::OpenOptions{.map_all = false}));
    std::shared_ptr<engine::Model> model = engine::load_layout(file, shard);
    std::vector<WeightSource> sources = weight_sources(*model);

    // Lay weights out in file order so that ranges adjacent in the file are adjacent in the
    // buffer too and merge into one read.
    std::sort(sources.begin(), sources.end(), [](const WeightSource& a, const WeightSource& b) {
        return a.ranges.front().offset < b.ranges.front().offset;
    });
    std::vector<Copy> copies;
    std::vector<uint64_t> starts;
    uint64_t at = 0;
    for (const WeightSource& s : sources) {
        // Keep the file's own gap when it is the padding before this weight, so a contiguous
        // stretch of the file stays one read; otherwise start on a fresh aligned offset.
        uint64_t start = (at + kAlign - 1) / kAlign * kAlign;
        if (!copies.empty()) {
            const Copy& prev = copies.back();
            const uint64_t gap = s.ranges.front().offset - (prev.src + prev.size);
            if (s.ranges.front().offset >= prev.src + prev.size && gap < kAlign &&
                (at + gap) % 32 == 0)
                start = at + gap;
        }
        starts.push_back(start);
        uint64_t d = start;
        for (const ByteRange& r : s.ranges) {
            copies.push_back({r.offset, r.size, d});
            d += r.size;
        }
        at = d;
    }
    const uint64_t n_ranges = copies.size();

    // Merge: same gap in the file and in the buffer (a gap is padding read along).
    std::vector<Copy> reads;
    for (const Copy& c : copies) {
        if (!reads.empty()) {
            Copy& r = reads.back();
            if (c.src >= r.src + r.size && c.dst >= r.dst + r.size &&
                c.src - (r.src + r.size) == c.dst - (r.dst + r.size) &&
                c.src - (r.src + r.size) < kAlign) {
                r.size = c.src + c.size - r.src;
                continue;
            }
        }
        reads.push_back(c);
    }

    const uint64_t buffer_bytes = at + kAlign;
    auto buffer = std::make_unique_for_overwrite<uint8_t[]>(buffer_bytes);
    uint8_t* base = buffer.get();
    base += (kAlign - reinterpret_cast<uintptr_t>(base) % kAlign) % kAlign;
    Fd fd(path);
    uint64_t bytes_read = 0;
    for (const Copy& r : reads) {
        read_exact(fd, path, base + r.dst, r.size, r.src);
        bytes_read += r.size;
    }

    for (size_t i = 0; i < sources.size(); ++i) {
        auto* w = const_cast<engine::Weight*>(sources[i].weight);
        w->data = base + starts[i];
    }
    // A tied head holding the whole vocabulary shares the embedding's slot and bytes.
    if (model->output.slot == model->tok_embd.slot) model->output.data = model->tok_embd.data;
    model->owned.push_back(std::move(buffer));
    if (stats) *stats = {bytes_read, buffer_bytes, n_ranges, reads.size()};
    return model;
}

}  // namespace tandem::planner
