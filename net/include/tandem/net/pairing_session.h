#pragma once
// Pairing over TCP: the coordinator side (pair_with) and the joining node's side (serve_pairing),
// both storing the other's keys in their PeerStore when the exchange succeeds.
#include <optional>
#include <span>
#include <string>

#include "tandem/net/pairing.h"
#include "tandem/net/peer_store.h"
#include "tandem/net/socket.h"

namespace tandem::net {

struct PairOptions {
    Millis timeout{10000};
    // When the user picked the node from the discovery list, its node id: pairing fails unless
    // the node that proved the code has exactly this id.
    std::string expect_node_id;
};

// Throws RefusedError (wrong code, locked, not accepting pairing, version) or PairingFailed.
PairedPeer pair_with(const HostPort& to, const Identity& self, const std::string& self_name,
                     const std::string& code, PeerStore& peers, const PairOptions& opts = {});

// Handles one pairing attempt on an accepted socket whose first Pairing record (`hello`) was
// already read. Every refusal is logged with its reason and sent to the peer.
std::optional<PairedPeer> serve_pairing(Socket& sock, std::span<const uint8_t> hello,
                                        const Identity& self, const std::string& self_name,
                                        PairingGate& gate, PeerStore& peers,
                                        Millis timeout = Millis(10000));

}  // namespace tandem::net
