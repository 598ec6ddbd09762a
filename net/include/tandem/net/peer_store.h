#pragma once
// The peers this node has paired with (peers.json, 0600 beside the identity). A key that is not
// in this list never gets a channel. Several processes may share one home (tandem-node serving,
// tandem-node pair run by the user), so every operation re-reads the file under an flock.
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tandem/net/identity.h"

namespace tandem::net {

struct PairedPeer {
    std::string node_id;
    std::string name;
    PublicKeys keys;
    int64_t paired_at = 0;  // unix seconds
    std::string address;    // last address it was paired or reached at ("10.0.0.2:47401")
};

class PeerStore {
  public:
    explicit PeerStore(std::filesystem::path file);

    std::vector<PairedPeer> list() const;
    std::optional<PairedPeer> find(const std::string& node_id) const;
    std::optional<PairedPeer> find_by_kx(const Key32& kx_pk) const;
    // Adds or replaces (same node id). The node id must match the keys.
    void add(const PairedPeer& peer);
    // Un-pairs; false if the node id was not paired.
    bool remove(const std::string& node_id);
    const std::filesystem::path& file() const { return file_; }

  private:
    std::vector<PairedPeer> load_locked() const;
    void save_locked(const std::vector<PairedPeer>& peers) const;
    std::filesystem::path file_;
    mutable std::mutex mutex_;
};

}  // namespace tandem::net
