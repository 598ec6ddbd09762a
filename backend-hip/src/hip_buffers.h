#pragma once
// Owning wrappers for the HIP backend's memory: device allocations and pinned host staging.
// Included by .hip files only (HIP runtime names; nvcc builds see them through hip_compat.h).
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "tandem/common/error.h"

namespace tandem::hip {

inline void check(hipError_t e, const char* what) {
    if (e != hipSuccess)
        throw Error(std::string("hip backend: ") + what + ": " + hipGetErrorString(e));
}

// Where a DeviceBuffer's memory may come from. On an APU, ROCm has given hipMalloc only the VRAM
// carve-out on many releases (a 512 MiB carve-out of a 128 GB Strix Halo is common), while the
// rest of the same DRAM, GTT, is reachable as pinned host memory mapped for the GPU. The backend's
// memory budget counts both (hip_apu_memory.h), so what hipMalloc refuses is taken from there,
// coarse-grained: the GPU may cache it in L2 (fine-grained host memory is mapped uncached on
// RDNA3), and nothing on the host reads it while a step runs.
enum class BufferHome { Device, DeviceThenHost, Host };

// The device bytes a backend's buffers hold, against an optional limit
// (TANDEM_HIP_DEVICE_LIMIT_MIB, which stands in for a small carve-out on GPUs that have none): past
// it hipMalloc is not asked, as if it were out of memory.
struct DeviceLedger {
    uint64_t limit = 0;  // 0: none
    uint64_t used = 0;
};

// Pinned host memory mapped for the device, by its host and device addresses (freed with
// hipHostFree(host)). Coherent: a running kernel sees the host's stores (a flag it polls); else
// coarse-grained, which the GPU may cache (DeviceBuffer's host memory). Throws, allocating
// nothing, with `what` where the allocation fails and `map_what` where the mapping does.
struct MappedHost {
    void* host = nullptr;
    void* device = nullptr;
};

inline MappedHost alloc_mapped_host(uint64_t bytes, bool coherent, const std::string& what,
                                    const char* map_what) {
#if defined(TANDEM_HIP_ON_CUDA)
    (void)coherent;  // CUDA's mapped host memory is coherent
    const unsigned flags = cudaHostAllocMapped;
#else
    const unsigned flags =
        hipHostMallocMapped | (coherent ? hipHostMallocCoherent : hipHostMallocNonCoherent);
#endif
    MappedHost m;
    check(hipHostMalloc(&m.host, bytes, flags), what.c_str());
    const hipError_t e = hipHostGetDevicePointer(&m.device, m.host, 0);
    if (e != hipSuccess) {
        (void)hipHostFree(m.host);
        check(e, map_what);
    }
    return m;
}

// One allocation the device reads and writes, freed with its owner.
class DeviceBuffer {
  public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(uint64_t n, BufferHome home = BufferHome::Device,
                          std::shared_ptr<DeviceLedger> ledger = nullptr)
        : size_(n), ledger_(std::move(ledger)) {
        const uint64_t bytes = n ? n : 1;
        hipError_t e = hipErrorOutOfMemory;
        if (home != BufferHome::Host) {
            if (!ledger_ || !ledger_->limit || ledger_->used + bytes <= ledger_->limit)
                e = hipMalloc(&ptr_, bytes);
            if (e == hipSuccess) {
                if (ledger_) ledger_->used += bytes;
                return;
            }
            ptr_ = nullptr;
            (void)hipGetLastError();
            if (home == BufferHome::Device || e != hipErrorOutOfMemory)
                check(e, ("allocating " + std::to_string(n) + " device bytes").c_str());
        }
        ledger_.reset();  // host memory is not the device's
        const MappedHost m = alloc_mapped_host(
            bytes, false,
            "allocating " + std::to_string(n) + " bytes of host memory for the device" +
                (home == BufferHome::Host ? "" : " (device memory is full)"),
            "mapping host memory for the device");
        host_ = m.host;
        ptr_ = m.device;
    }
    DeviceBuffer(DeviceBuffer&& o) noexcept { take(o); }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        if (this != &o) {
            release();
            take(o);
        }
        return *this;
    }
    ~DeviceBuffer() { release(); }
    uint8_t* data() const { return static_cast<uint8_t*>(ptr_); }
    uint64_t size() const { return size_; }
    bool in_host_memory() const { return host_ != nullptr; }

  private:
    void take(DeviceBuffer& o) {
        ptr_ = o.ptr_, host_ = o.host_, size_ = o.size_, ledger_ = std::move(o.ledger_);
        o.ptr_ = o.host_ = nullptr;
        o.size_ = 0;
    }
    void release() {
        if (host_) {
            (void)hipHostFree(host_);
        } else if (ptr_) {
            (void)hipFree(ptr_);
            if (ledger_) ledger_->used -= size_ ? size_ : 1;
        }
        ptr_ = host_ = nullptr;
        size_ = 0;
        ledger_.reset();
    }
    void* ptr_ = nullptr;   // what the device reads
    void* host_ = nullptr;  // the host allocation behind it, where it is host memory
    uint64_t size_ = 0;
    std::shared_ptr<DeviceLedger> ledger_;
};

// Pinned host memory for staging step inputs and outputs (async copies need it). Grown, never
// shrunk; growing frees the old buffer, so callers grow only while no copy is in flight.
class PinnedBuffer {
  public:
    PinnedBuffer() = default;
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;
    ~PinnedBuffer() {
        if (ptr_) (void)hipHostFree(ptr_);
    }
    uint8_t* reserve(uint64_t n) {
        if (n <= size_ && ptr_) return data();
        if (ptr_) (void)hipHostFree(ptr_);
        ptr_ = nullptr;
        size_ = 0;
        check(hipHostMalloc(&ptr_, n ? n : 1, hipHostMallocDefault), "allocating pinned staging");
        size_ = n;
        return data();
    }
    uint8_t* data() const { return static_cast<uint8_t*>(ptr_); }
    uint64_t size() const { return size_; }

  private:
    void* ptr_ = nullptr;
    uint64_t size_ = 0;
};

// An int the host writes and a kernel polls: pinned host memory mapped for the device,
// coherent, so a running kernel sees the host's store (the profiler's hold, launch_hold).
class MappedFlag {
  public:
    MappedFlag() {
        const MappedHost m = alloc_mapped_host(sizeof(int), true, "allocating the profiler's flag",
                                               "mapping the profiler's flag");
        host_ = static_cast<int*>(m.host);
        device_ = static_cast<int*>(m.device);
        set(0);
    }
    MappedFlag(const MappedFlag&) = delete;
    MappedFlag& operator=(const MappedFlag&) = delete;
    ~MappedFlag() { (void)hipHostFree(host_); }
    void set(int v) {
        *static_cast<volatile int*>(host_) = v;
        std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    const int* device() const { return device_; }

  private:
    int* host_ = nullptr;
    int* device_ = nullptr;
};

}  // namespace tandem::hip
