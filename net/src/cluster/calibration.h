#pragma once
// A node's speed for the split: a short timed matrix-vector product of Q8_0 weights on the
// node's own backend (decode is bound by reading weights, so bytes/s of a matvec is what the
// shares should follow), and its free memory.
#include "protocol.h"
#include "tandem/backend/backend.h"

namespace tandem::net::cluster {

// ~35 MiB of weights, best of a few runs; a fraction of a second on a CPU core.
double calibrate_matvec_gbps(Backend& backend);

// Name, backend, device, free memory and calibrated speed of a backend (creates it).
NodeInfo describe_node(const std::string& name, const std::string& backend, int device,
                       int threads);

}  // namespace tandem::net::cluster
