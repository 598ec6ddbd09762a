#pragma once
// One end of an RDMA connection on a libibverbs device: opened and offered before the peer's
// offer is known, connected (RTR/RTS) after. Without libibverbs at build time open() always
// answers why not.
#include <memory>
#include <string>

#include "tandem/net/rdma_transport.h"

namespace tandem::net {

class VerbsEndpoint {
  public:
    virtual ~VerbsEndpoint() = default;
    // Picks the device port that carries `local_ip` (RoCE v2 GID of that address, else an
    // InfiniBand port), checks memlock, registers the ring and its mirror, creates the RC queue
    // pair and posts its receives. nullptr with `why_not` set when any step fails.
    static std::unique_ptr<VerbsEndpoint> open(const std::string& local_ip, const RdmaOptions& opts,
                                               std::string& why_not);
    virtual RdmaOffer offer() const = 0;
    // Moves the queue pair to ready-to-send towards `peer`; throws tandem::Error.
    virtual void connect(const RdmaOffer& peer) = 0;
};

// A connected endpoint as the ring protocol's link; `side_channel` (the TCP connection it was
// negotiated over) is kept to notice a peer that vanished, and closed on shutdown.
std::unique_ptr<RdmaLink> make_verbs_link(std::unique_ptr<VerbsEndpoint> connected,
                                          std::unique_ptr<Transport> side_channel);

// "" when libibverbs lists at least one device.
std::string verbs_device_problem();

}  // namespace tandem::net
