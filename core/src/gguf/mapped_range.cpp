// Read-only mmap of a byte range of a file.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"

namespace tandem::gguf {

MappedRange::MappedRange(const std::filesystem::path& path, uint64_t offset, uint64_t size)
    : size_(size), offset_(offset) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("gguf: cannot open " + path.string() + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        throw Error("gguf: cannot stat " + path.string() + ": " + std::strerror(e));
    }
    const uint64_t file_size = uint64_t(st.st_size);
    // Mapping past the end would turn a read into SIGBUS instead of an error.
    if (offset > file_size || size > file_size - offset) {
        ::close(fd);
        throw Error("gguf: " + path.string() + ": range [" + std::to_string(offset) + ", +" +
                    std::to_string(size) + ") past end of file (size " + std::to_string(file_size) +
                    ")");
    }
    if (size == 0) {
        ::close(fd);
        return;
    }
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    const uint64_t base_off = offset / page * page;
    base_len_ = size_t(size + (offset - base_off));
    base_ = ::mmap(nullptr, base_len_, PROT_READ, MAP_SHARED, fd, off_t(base_off));
    int e = errno;
    ::close(fd);
    if (base_ == MAP_FAILED) {
        base_ = nullptr;
        throw Error("gguf: cannot map " + path.string() + ": " + std::strerror(e));
    }
    data_ = static_cast<const uint8_t*>(base_) + (offset - base_off);
}

MappedRange::~MappedRange() {
    if (base_) ::munmap(base_, base_len_);
}

MappedRange::MappedRange(MappedRange&& o) noexcept
    : base_(o.base_), base_len_(o.base_len_), data_(o.data_), size_(o.size_), offset_(o.offset_) {
    o.base_ = nullptr;
    o.data_ = nullptr;
    o.base_len_ = 0;
    o.size_ = 0;
}

MappedRange& MappedRange::operator=(MappedRange&& o) noexcept {
    if (this != &o) {
        if (base_) ::munmap(base_, base_len_);
        base_ = o.base_;
        base_len_ = o.base_len_;
        data_ = o.data_;
        size_ = o.size_;
        offset_ = o.offset_;
        o.base_ = nullptr;
        o.data_ = nullptr;
        o.base_len_ = 0;
        o.size_ = 0;
    }
    return *this;
}

}  // namespace tandem::gguf
