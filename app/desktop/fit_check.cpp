#include "fit_check.h"

#include "tandem/backend/backend.h"
#include "tandem/backend/registry.h"
#include "tandem/common/error.h"
#include "tandem/common/sysinfo.h"
#include "tandem/library/format.h"

namespace tandem::ui {

planner::DeviceBudget deviceBudget(const std::string& backend, int device) {
    if (backend == "cpu")
        return {"cpu", host_memory().available, planner::runtime_overhead(DeviceType::Cpu)};
    BackendFactory* f = BackendRegistry::instance().factory(backend);
    if (!f) throw Error("backend '" + backend + "' is not available on this machine");
    const auto devs = f->devices();
    if (device < 0 || device >= static_cast<int>(devs.size()))
        throw Error("backend '" + backend + "' has no device " + std::to_string(device));
    const DeviceInfo& d = devs[static_cast<size_t>(device)];
    return {backend + ":" + std::to_string(d.index), d.memory_free,
            planner::runtime_overhead(d.type)};
}

FitVerdict checkFit(const std::string& gguf, int64_t ctx, const planner::DeviceBudget& budget) {
    auto whole = engine::load_model(gguf);
    FitVerdict v;
    v.freeBytes = budget.free_bytes;
    planner::FitOptions fo;
    fo.n_ctx = ctx > 0 ? std::min<int64_t>(ctx, whole->hp.n_ctx_train) : whole->hp.n_ctx_train;
    v.nCtx = fo.n_ctx;
    try {
        const auto r = planner::fit(*whole, {budget}, fo);
        v.fits = true;
        v.needBytes = r.devices.front().total();
        v.message = QStringLiteral("fits: %1 of %2 free")
                        .arg(QString::fromStdString(library::human_bytes(v.needBytes)),
                             QString::fromStdString(library::human_bytes(v.freeBytes)));
    } catch (const Error& e) {
        v.fits = false;
        v.message = QString::fromUtf8(e.what());
    }
    return v;
}

planner::FitResult planSplit(const std::string& gguf, int64_t ctx,
                             const std::vector<planner::DeviceBudget>& devices) {
    auto whole = engine::load_model(gguf);
    planner::FitOptions fo;
    fo.max_ctx = ctx > 0 ? std::min<int64_t>(ctx, whole->hp.n_ctx_train) : 0;
    return planner::fit(*whole, devices, fo);
}

}  // namespace tandem::ui
