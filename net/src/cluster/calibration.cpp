#include "calibration.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "tandem/common/dtype.h"
#include "tandem/common/sysinfo.h"

namespace tandem::net::cluster {

double calibrate_matvec_gbps(Backend& backend) {
    constexpr int64_t kCols = 4096, kRows = 8192;  // Q8_0: 34 bytes per 32 weights, ~35 MiB
    const uint64_t w_bytes = row_bytes(DType::Q8_0, kCols) * kRows;
    // Zero blocks (scale 0): timing does not depend on the values.
    std::vector<uint8_t> w(w_bytes, 0);
    std::vector<float> embd(kCols, 1.0f);
    backend.upload_weight(
        0, {"calib.embd", DType::F32, {kCols, 1, 1}, embd.data(), embd.size() * sizeof(float)},
        true);
    backend.upload_weight(1, {"calib.w", DType::Q8_0, {kCols, kRows, 1}, w.data(), w_bytes}, true);
    Graph g;
    const TensorId ids = g.input(0, "ids", DType::I32, 1);
    const TensorId e = g.weight(0, "calib.embd", DType::F32, {kCols, 1, 1});
    const TensorId x = g.activation("x", kCols, 1);
    Node get;
    get.op = Op::GetRows;
    get.out = x;
    get.src[0] = e;
    get.src[1] = ids;
    g.add_node(get);
    const TensorId W = g.weight(1, "calib.w", DType::Q8_0, {kCols, kRows, 1});
    const TensorId y = g.output(0, "y", kRows, 1);
    Node mm;
    mm.op = Op::MatMul;
    mm.out = y;
    mm.src[0] = W;
    mm.src[1] = x;
    g.add_node(mm);
    g.validate();
    backend.reserve_scratch(g.plan_scratch());
    const int32_t id = 0;
    std::vector<float> out(kRows);
    StepIO io;
    io.inputs = {&id, &id};
    io.outputs = {out.data()};
    double best = 1e9;
    for (int run = 0; run < 5; ++run) {
        const auto t0 = std::chrono::steady_clock::now();
        backend.compute(g, io);
        best = std::min(
            best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return double(w_bytes) / std::max(best, 1e-9) / 1e9;
}

NodeInfo describe_node(const std::string& name, const std::string& backend_name, int device,
                       int threads) {
    BackendOptions bo;
    bo.threads = threads;
    auto backend = create_backend(backend_name, device, bo);
    NodeInfo info;
    info.name = name;
    if (info.name.empty()) {
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        info.name = host;
    }
    info.backend = backend_name;
    info.device = backend->device().name;
    info.memory_free = backend->device().memory_free;
    if (info.memory_free == 0) info.memory_free = host_memory().available;
    info.matvec_gbps = calibrate_matvec_gbps(*backend);
    return info;
}

}  // namespace tandem::net::cluster
