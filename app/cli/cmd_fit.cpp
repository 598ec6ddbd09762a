// tandem-cli fit: the per-device memory plan of a model (weights of each shard, KV, scratch
// peak, overhead) and the largest context that fits the free memory, or a refusal naming the
// device that is short. Nothing is allocated or read beyond the GGUF header.
#include <cctype>
#include <cstdio>

#include "command.h"
#include "tandem/backend/backend.h"
#include "tandem/backend/registry.h"
#include "tandem/common/error.h"
#include "tandem/planner/fit.h"

namespace {

using namespace tandem;

struct FitCliOptions {
    std::string model, backend = "cpu", kv_type = "f16", cluster_devices;
    int device = 0;
    int64_t ctx = 0, batch = 512, max_ctx = 0;
    double margin = 5.0;
    bool all_logits = false;
};

// "64GiB", "32 GB", "512MiB", "1.5TiB", "123456" (bytes).
uint64_t parse_size(const std::string& text, const std::string& item) {
    size_t pos = 0;
    double v = 0;
    try {
        v = std::stod(text, &pos);
    } catch (...) {
        throw Error("--cluster-devices: '" + item + "': size '" + text + "' is not a number");
    }
    std::string unit;
    for (char c : text.substr(pos))
        if (!std::isspace(static_cast<unsigned char>(c)))
            unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    double mul = 1;
    if (unit == "" || unit == "b")
        mul = 1;
    else if (unit == "k" || unit == "kib")
        mul = 1024.0;
    else if (unit == "m" || unit == "mib")
        mul = 1024.0 * 1024;
    else if (unit == "g" || unit == "gib")
        mul = 1024.0 * 1024 * 1024;
    else if (unit == "t" || unit == "tib")
        mul = 1024.0 * 1024 * 1024 * 1024;
    else if (unit == "kb")
        mul = 1e3;
    else if (unit == "mb")
        mul = 1e6;
    else if (unit == "gb")
        mul = 1e9;
    else if (unit == "tb")
        mul = 1e12;
    else
        throw Error("--cluster-devices: '" + item + "': unknown unit '" + unit + "'");
    if (!(v > 0)) throw Error("--cluster-devices: '" + item + "': size must be positive");
    return static_cast<uint64_t>(v * mul);
}

// "A:64GiB,B:32GiB:gpu" -> budgets (kind cpu by default: a node's RAM).
std::vector<planner::DeviceBudget> parse_cluster(const std::string& text) {
    std::vector<planner::DeviceBudget> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = text.find(',', start);
        const std::string item =
            text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        start = comma == std::string::npos ? text.size() + 1 : comma + 1;
        if (item.empty()) continue;
        const size_t c1 = item.find(':');
        if (c1 == std::string::npos || c1 == 0)
            throw Error("--cluster-devices: '" + item + "' is not NAME:SIZE[:cpu|gpu]");
        const size_t c2 = item.find(':', c1 + 1);
        const std::string name = item.substr(0, c1);
        const std::string size = item.substr(c1 + 1, c2 == std::string::npos ? c2 : c2 - c1 - 1);
        const std::string kind = c2 == std::string::npos ? "cpu" : item.substr(c2 + 1);
        if (kind != "cpu" && kind != "gpu")
            throw Error("--cluster-devices: '" + item + "': kind must be cpu or gpu");
        out.push_back(
            {name, parse_size(size, item),
             planner::runtime_overhead(kind == "gpu" ? DeviceType::DiscreteGpu : DeviceType::Cpu)});
    }
    if (out.empty()) throw Error("--cluster-devices: no devices given");
    return out;
}

std::vector<planner::DeviceBudget> local_device(const FitCliOptions& o) {
    BackendFactory* f = BackendRegistry::instance().factory(o.backend);
    if (!f)
        throw Error("fit: backend '" + o.backend + "' is not available (see tandem-cli devices)");
    const auto devs = f->devices();
    if (o.device < 0 || o.device >= static_cast<int>(devs.size()))
        throw Error("fit: backend '" + o.backend + "' has no device " + std::to_string(o.device));
    return {planner::budget_of(devs[static_cast<size_t>(o.device)])};
}

std::string range(int64_t b, int64_t e) {
    return std::to_string(b) + "-" + std::to_string(e);
}

tandem::cli::Register reg(
    "fit", "Plan memory per device and pick the largest context that fits", [](CLI::App& sub) {
        auto o = std::make_shared<FitCliOptions>();
        sub.add_option("-m,--model", o->model, "GGUF model")->required();
        sub.add_option("--ctx", o->ctx, "exactly this context (0: the largest that fits)")
            ->capture_default_str();
        sub.add_option("--max-ctx", o->max_ctx, "largest context to consider (0: training)");
        sub.add_option("--batch", o->batch, "prefill batch (tokens per step)")
            ->capture_default_str();
        sub.add_option("--kv-type", o->kv_type, "KV cache type: f16 or f32")->capture_default_str();
        sub.add_option("--margin", o->margin, "percent of free memory kept unused")
            ->capture_default_str();
        sub.add_flag("--all-logits", o->all_logits, "plan for steps returning every logit");
        sub.add_option("--backend", o->backend, "backend whose device is planned")
            ->capture_default_str();
        sub.add_option("--device", o->device, "device index of that backend");
        sub.add_option("--cluster-devices", o->cluster_devices,
                       "plan a tensor-parallel split instead: NAME:SIZE[:cpu|gpu],... "
                       "(e.g. \"A:64GiB,B:32GiB\")");
        return [o]() -> int {
            if (o->kv_type != "f16" && o->kv_type != "f32")
                throw Error("fit: --kv-type must be f16 or f32, not '" + o->kv_type + "'");
            if (o->margin < 0 || o->margin >= 100) throw Error("fit: --margin must be in [0, 100)");
            const auto devices =
                o->cluster_devices.empty() ? local_device(*o) : parse_cluster(o->cluster_devices);
            auto whole = engine::load_model(o->model);
            planner::FitOptions fo;
            fo.n_ctx = o->ctx;
            fo.max_ctx = o->max_ctx;
            fo.n_batch = o->batch;
            fo.kv_type = o->kv_type == "f32" ? DType::F32 : DType::F16;
            fo.all_logits = o->all_logits;
            fo.margin = o->margin / 100.0;
            const planner::FitResult r = planner::fit(*whole, devices, fo);

            std::printf("model    %s (%s, %lld layers, %s of weights)\n", o->model.c_str(),
                        engine::arch_name(whole->hp.arch),
                        static_cast<long long>(whole->hp.n_layer),
                        planner::format_gib(whole->weight_bytes()).c_str());
            std::printf("context  %lld tokens%s, KV %s, batch %lld, margin %.0f%%\n",
                        static_cast<long long>(r.n_ctx), o->ctx > 0 ? "" : " (largest that fits)",
                        o->kv_type.c_str(), static_cast<long long>(o->batch), o->margin);
            std::printf("%-12s %6s %8s %10s %10s %10s %10s %10s %10s %10s\n", "device", "share",
                        "kv-heads", "ffn-cols", "weights", "kv", "scratch", "overhead", "total",
                        "free");
            for (size_t k = 0; k < r.devices.size(); ++k) {
                const auto& p = r.devices[k];
                std::printf("%-12s %6.3f %8s %10s %10s %10s %10s %10s %10s %10s\n",
                            p.device.c_str(), r.shares[k],
                            range(p.shard.kv_head_begin, p.shard.kv_head_end).c_str(),
                            range(p.shard.ff_begin, p.shard.ff_end).c_str(),
                            planner::format_gib(p.weight_bytes).c_str(),
                            planner::format_gib(p.kv_bytes).c_str(),
                            planner::format_gib(p.scratch_bytes).c_str(),
                            planner::format_gib(p.overhead_bytes).c_str(),
                            planner::format_gib(p.total()).c_str(),
                            planner::format_gib(devices[k].free_bytes).c_str());
            }
            return 0;
        };
    });

}  // namespace
