#pragma once
// Full mesh of TCP transports between the ranks of one tensor-parallel group. Every rank listens;
// rank r connects to every lower rank and accepts every higher one. The first message on each
// connection is a hello naming the group secret and the connecting rank, so a stray or
// misconfigured process is refused with an error naming what did not match. After the hello both
// ends negotiate RDMA (rdma_transport.h): each connection is RDMA when both ends have a verbs
// device on a common subnet, else TCP with the reason logged once.
#include <memory>
#include <string>
#include <vector>

#include "tandem/net/rdma_transport.h"
#include "tandem/net/socket.h"
#include "tandem/net/transport.h"

namespace tandem::net {

struct MeshOptions {
    std::string secret;     // shared by every rank of the group
    Millis timeout{10000};  // for connecting and the hellos
    TcpOptions tcp;
    RdmaOptions rdma;
};

// addresses[k] = where rank k listens (addresses[rank] is ours and unused; we accept on
// `listener`). Returns one transport per rank, nullptr at our own index. Throws tandem::Error
// naming the rank and address that could not be reached or sent a bad hello.
std::vector<std::unique_ptr<Transport>> connect_mesh(int rank,
                                                     const std::vector<HostPort>& addresses,
                                                     Listener& listener, const MeshOptions& opts);

}  // namespace tandem::net
