#include "tandem/net/peer_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "security/hex.h"
#include "security/private_file.h"
#include "tandem/common/error.h"

namespace tandem::net {

namespace fs = std::filesystem;

namespace {

// Holds an exclusive flock on "<file>.lock" for the lifetime of the object.
class FileLock {
  public:
    explicit FileLock(const fs::path& file) {
        ensure_private_dir(file.parent_path().empty() ? fs::path(".") : file.parent_path());
        fs::path lock = file;
        lock += ".lock";
        fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd_ < 0) throw Error("cannot open lock file " + lock.string());
        while (::flock(fd_, LOCK_EX) != 0) {
        }
    }
    ~FileLock() {
        ::flock(fd_, LOCK_UN);
        ::close(fd_);
    }
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

  private:
    int fd_ = -1;
};

Key32 key_field(const nlohmann::json& j, const char* name, const std::string& where) {
    if (!j.contains(name) || !j[name].is_string())
        throw Error(where + ": missing string field '" + name + "'");
    auto v = from_hex(j[name].get<std::string>(), 32, where + ": '" + name + "'");
    Key32 k;
    std::copy(v.begin(), v.end(), k.begin());
    return k;
}

}  // namespace

PeerStore::PeerStore(fs::path file) : file_(std::move(file)) {}

std::vector<PairedPeer> PeerStore::load_locked() const {
    std::error_code ec;
    if (!fs::exists(file_, ec)) return {};
    std::string text = read_private_file(file_, "peers");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
        throw Error("peers file " + file_.string() + ": not valid JSON: " + e.what());
    }
    if (!j.is_object() || j.value("format", "") != "tandem-peers-1" || !j.contains("peers") ||
        !j["peers"].is_array())
        throw Error("peers file " + file_.string() +
                    ": expected {\"format\": \"tandem-peers-1\", \"peers\": [...]}");
    std::vector<PairedPeer> peers;
    size_t i = 0;
    for (const auto& p : j["peers"]) {
        std::string where = "peers file " + file_.string() + ": peers[" + std::to_string(i++) + "]";
        if (!p.is_object()) throw Error(where + ": not an object");
        PairedPeer peer;
        peer.keys.sign_pk = key_field(p, "ed25519", where);
        peer.keys.kx_pk = key_field(p, "x25519", where);
        peer.node_id = node_id_of(peer.keys);
        if (p.value("node_id", peer.node_id) != peer.node_id)
            throw Error(where + ": node_id does not match its keys");
        peer.name = p.value("name", "");
        peer.paired_at = p.value("paired_at", int64_t(0));
        peer.address = p.value("address", "");
        peers.push_back(std::move(peer));
    }
    return peers;
}

void PeerStore::save_locked(const std::vector<PairedPeer>& peers) const {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& p : peers)
        arr.push_back({{"node_id", p.node_id},
                       {"name", p.name},
                       {"ed25519", to_hex(p.keys.sign_pk)},
                       {"x25519", to_hex(p.keys.kx_pk)},
                       {"paired_at", p.paired_at},
                       {"address", p.address}});
    nlohmann::json j = {{"format", "tandem-peers-1"}, {"peers", arr}};
    write_private_file(file_, j.dump(2) + "\n");
}

std::vector<PairedPeer> PeerStore::list() const {
    std::lock_guard g(mutex_);
    FileLock lock(file_);
    return load_locked();
}

std::optional<PairedPeer> PeerStore::find(const std::string& node_id) const {
    for (auto& p : list())
        if (p.node_id == node_id) return p;
    return std::nullopt;
}

std::optional<PairedPeer> PeerStore::find_by_kx(const Key32& kx_pk) const {
    for (auto& p : list())
        if (p.keys.kx_pk == kx_pk) return p;
    return std::nullopt;
}

void PeerStore::add(const PairedPeer& peer) {
    if (node_id_of(peer.keys) != peer.node_id)
        throw Error("peers: node id " + peer.node_id + " does not match its keys");
    std::lock_guard g(mutex_);
    FileLock lock(file_);
    auto peers = load_locked();
    std::erase_if(peers, [&](const PairedPeer& p) { return p.node_id == peer.node_id; });
    peers.push_back(peer);
    save_locked(peers);
}

bool PeerStore::remove(const std::string& node_id) {
    std::lock_guard g(mutex_);
    FileLock lock(file_);
    auto peers = load_locked();
    size_t n = std::erase_if(peers, [&](const PairedPeer& p) { return p.node_id == node_id; });
    if (n) save_locked(peers);
    return n > 0;
}

}  // namespace tandem::net
