#include "tandem/backend/registry.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "tandem/backend/backend.h"
#include "tandem/common/log.h"

namespace tandem {

std::shared_ptr<BackendFactory> make_cpu_backend_factory();  // cpu/cpu_backend.cpp

namespace {

std::filesystem::path executable_dir() {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::path(".") : exe.parent_path();
}

std::vector<std::filesystem::path> plugin_dirs() {
    std::vector<std::filesystem::path> dirs;
    if (const char* env = std::getenv("TANDEM_PLUGIN_DIR"); env && *env) dirs.emplace_back(env);
    auto exe = executable_dir();
    dirs.push_back(exe);
    dirs.push_back(exe / ".." / "lib" / "tandem");
    return dirs;
}

}  // namespace

BackendRegistry& BackendRegistry::instance() {
    static BackendRegistry registry;
    return registry;
}

BackendRegistry::BackendRegistry() {
    add(make_cpu_backend_factory());
    load_plugins();
}

void BackendRegistry::add(std::shared_ptr<BackendFactory> factory) {
    BackendStatus st;
    st.name = factory->name();
    st.available = true;
    st.devices = factory->devices();
    status_.push_back(std::move(st));
    factories_.push_back(std::move(factory));
}

void BackendRegistry::add_unavailable(const std::string& name, const std::string& reason) {
    BackendStatus st;
    st.name = name;
    st.reason = reason;
    status_.push_back(std::move(st));
    log_info(name + " backend skipped: " + reason);
}

void BackendRegistry::load_plugins() {
    for (const char* name : {"vulkan", "hip"}) {
        if (const char* off = std::getenv("TANDEM_DISABLE_BACKENDS");
            off && std::string(off).find(name) != std::string::npos) {
            add_unavailable(name, "disabled by TANDEM_DISABLE_BACKENDS");
            continue;
        }
        std::string file = std::string("libtandem-backend-") + name + ".so";
        std::filesystem::path found;
        for (const auto& dir : plugin_dirs()) {
            std::error_code ec;
            if (std::filesystem::exists(dir / file, ec)) {
                found = dir / file;
                break;
            }
        }
        if (found.empty()) {
            status_.push_back({name, false, "not built into this installation", {}});
            log_debug(std::string(name) + " backend: plugin " + file + " not found");
            continue;
        }
        void* handle = dlopen(found.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char* e = dlerror();
            add_unavailable(name, e ? e : "dlopen failed");
            continue;
        }
        auto entry = reinterpret_cast<BackendPluginEntry>(dlsym(handle, kBackendPluginSymbol));
        if (!entry) {
            add_unavailable(name, found.string() + " has no " + kBackendPluginSymbol);
            continue;
        }
        std::string err;
        BackendFactory* f = nullptr;
        try {
            f = entry(&err);
        } catch (const std::exception& e) {
            err = e.what();
        }
        if (!f) {
            add_unavailable(name, err.empty() ? "no usable device" : err);
            continue;
        }
        // The plugin stays loaded for the life of the process (its factory lives in it).
        add(std::shared_ptr<BackendFactory>(f));
    }
}

BackendFactory* BackendRegistry::factory(const std::string& name) const {
    for (const auto& f : factories_)
        if (f->name() == name) return f.get();
    return nullptr;
}

std::vector<DeviceInfo> BackendRegistry::all_devices() const {
    std::vector<DeviceInfo> all;
    for (const auto& st : status_) all.insert(all.end(), st.devices.begin(), st.devices.end());
    return all;
}

}  // namespace tandem
