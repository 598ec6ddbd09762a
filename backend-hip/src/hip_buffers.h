#pragma once
// Owning wrappers for the HIP backend's memory: device allocations and pinned host staging.
// Included by .hip files only (HIP runtime names; nvcc builds see them through hip_compat.h).
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cstdint>
#include <string>

#include "tandem/common/error.h"

namespace tandem::hip {

inline void check(hipError_t e, const char* what) {
    if (e != hipSuccess)
        throw Error(std::string("hip backend: ") + what + ": " + hipGetErrorString(e));
}

// One device allocation, freed with its owner.
class DeviceBuffer {
  public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(uint64_t n) : size_(n) {
        check(hipMalloc(&ptr_, n ? n : 1),
              ("allocating " + std::to_string(n) + " device bytes").c_str());
    }
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), size_(o.size_) {
        o.ptr_ = nullptr;
        o.size_ = 0;
    }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        if (this != &o) {
            release();
            ptr_ = o.ptr_;
            size_ = o.size_;
            o.ptr_ = nullptr;
            o.size_ = 0;
        }
        return *this;
    }
    ~DeviceBuffer() { release(); }
    uint8_t* data() const { return static_cast<uint8_t*>(ptr_); }
    uint64_t size() const { return size_; }

  private:
    void release() {
        if (ptr_) (void)hipFree(ptr_);
        ptr_ = nullptr;
        size_ = 0;
    }
    void* ptr_ = nullptr;
    uint64_t size_ = 0;
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

}  // namespace tandem::hip
