#include "security/private_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tandem/common/error.h"

namespace tandem::net {

namespace fs = std::filesystem;

void ensure_private_dir(const fs::path& dir) {
    std::error_code ec;
    if (fs::exists(dir, ec)) return;
    fs::create_directories(dir, ec);
    if (ec) throw Error("cannot create folder " + dir.string() + ": " + ec.message());
    // Only the owner may list the folder that holds the identity and the trust list.
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
}

void write_private_file(const fs::path& file, const std::string& content) {
    ensure_private_dir(file.parent_path().empty() ? fs::path(".") : file.parent_path());
    fs::path tmp = file;
    tmp += ".tmp." + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) throw Error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    // The umask cannot widen 0600, but an existing file keeps its mode: force it.
    ::fchmod(fd, 0600);
    size_t done = 0;
    while (done < content.size()) {
        ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            throw Error("cannot write " + tmp.string() + ": " + std::strerror(e));
        }
        done += size_t(n);
    }
    ::fsync(fd);
    ::close(fd);
    if (::rename(tmp.c_str(), file.c_str()) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        throw Error("cannot replace " + file.string() + ": " + std::strerror(e));
    }
}

std::string read_private_file(const fs::path& file, const char* what) {
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        throw Error(std::string(what) + " file " + file.string() + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(std::string(what) + " file " + file.string() + " is not a regular file");
    }
    if (st.st_mode & 077) {
        ::close(fd);
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
        throw Error(std::string(what) + " file " + file.string() + " has mode " + mode +
                    " (group/others can access it); refusing to use it. Run: chmod 600 " +
                    file.string());
    }
    if (st.st_uid != ::geteuid()) {
        ::close(fd);
        throw Error(std::string(what) + " file " + file.string() + " is owned by uid " +
                    std::to_string(st.st_uid) + ", not by this user; refusing to use it");
    }
    std::string content;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            ::close(fd);
            throw Error(std::string(what) + " file " + file.string() + ": " + std::strerror(e));
        }
        if (n == 0) break;
        content.append(buf, size_t(n));
        if (content.size() > (1u << 24)) {
            ::close(fd);
            throw Error(std::string(what) + " file " + file.string() + " is larger than 16 MiB");
        }
    }
    ::close(fd);
    return content;
}

}  // namespace tandem::net
