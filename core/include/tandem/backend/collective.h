#pragma once
// The tensor-parallel hook of a step graph: AllReduce / AllGather nodes call into this. The
// cluster runtime (net/) implements it over TCP/RDMA; tests implement it in-process. A backend
// without one runs as a single rank (both nodes are identities).
#include <cstddef>
#include <vector>

namespace tandem {

class Collective {
  public:
    virtual ~Collective() = default;
    virtual int rank() const = 0;
    virtual int n_ranks() const = 0;
    // In place: data[i] = sum over ranks of data[i]. Every rank passes the same n.
    virtual void all_reduce_sum(float* data, size_t n) = 0;
    // all = concatenation of every rank's `local` in rank order (ranks may differ in n);
    // sizes[r] = element count of rank r.
    virtual void all_gather(const float* local, size_t n, std::vector<float>& all,
                            std::vector<size_t>& sizes) = 0;
};

}  // namespace tandem
