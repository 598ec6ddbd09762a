// The matrix-unit prefill checked against the f32 tiles before a backend uses it: the AMD forms
// of hip_mma.h have run on no GPU here, so a wrong lane layout or a driver fault must turn the
// path off, not give a wrong prefill.
#if !defined(TANDEM_HIP_ON_CUDA)
#include <hip/hip_runtime.h>
#endif
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "hip_buffers.h"
#include "hip_mma_check.h"
#include "hip_ops.h"

namespace tandem::hip {

namespace {

// f16 bits of v, which must be 0 or k / 64 for an integer 0 < |k| < 2048 (exact in f16).
uint16_t f16_exact(float v) {
    if (v == 0.0f) return 0;
    int e = 0;
    const float mant = std::frexp(std::fabs(v), &e);  // |v| = mant * 2^e, mant in [0.5, 1)
    const auto bits = uint16_t(((e + 14) << 10) | int((mant * 2.0f - 1.0f) * 1024.0f));
    return v < 0 ? uint16_t(bits | 0x8000u) : bits;
}

double nmse_of(const std::vector<float>& got, const std::vector<float>& ref) {
    double err = 0.0, sum = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
        err += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
        sum += double(ref[i]) * ref[i];
    }
    return sum > 0.0 ? err / sum : 1.0;
}

}  // namespace

std::string mma_prefill_check(hipStream_t s) {
    // Q8_0 [320 -> 160] x 70 tokens: a partial row tile, a partial token tile and an odd number
    // of 32-input groups (the last step half empty; the f32 tiles take rows of 64s).
    constexpr int64_t kIn = 320, kOut = 160, kTok = 70, kBlocks = kIn / 32,
                      kRowBytes = kBlocks * 34;
    std::vector<uint8_t> w(size_t(kOut * kRowBytes));
    std::vector<float> x(static_cast<size_t>(kTok * kIn)), bias(static_cast<size_t>(kOut));
    uint32_t seed = 12345u;
    auto next = [&seed] {
        seed = seed * 1664525u + 1013904223u;
        return seed >> 8;
    };
    // Scales exact in f16 (2^-7, 2^-6, 2^-5), so no host f16 conversion is needed.
    const uint16_t scales[3] = {0x2000, 0x2400, 0x2800};
    for (int64_t r = 0; r < kOut; ++r)
        for (int64_t b = 0; b < kBlocks; ++b) {
            uint8_t* blk = w.data() + r * kRowBytes + b * 34;
            const uint16_t d = scales[next() % 3];
            blk[0] = uint8_t(d & 0xffu);
            blk[1] = uint8_t(d >> 8);
            for (int i = 0; i < 32; ++i) blk[2 + i] = uint8_t(int(next() % 255) - 127);
        }
    for (auto& v : x) v = float(int(next() % 2001) - 1000) / 500.0f;
    for (auto& v : bias) v = float(int(next() % 201) - 100) / 100.0f;
    DeviceBuffer dw(w.size()), dx(x.size() * 4), db(bias.size() * 4), dy(size_t(kTok * kOut) * 8);
    float* y_mma = reinterpret_cast<float*>(dy.data());
    float* y_tiles = y_mma + kTok * kOut;
    check(hipMemcpy(dw.data(), w.data(), w.size(), hipMemcpyHostToDevice), "mma check upload");
    check(hipMemcpy(dx.data(), x.data(), x.size() * 4, hipMemcpyHostToDevice), "mma check upload");
    check(hipMemcpy(db.data(), bias.data(), bias.size() * 4, hipMemcpyHostToDevice),
          "mma check upload");
    const auto* xs = reinterpret_cast<const float*>(dx.data());
    const auto* bs = reinterpret_cast<const float*>(db.data());
    if (!launch_mat_mul_tiled(DType::Q8_0, dw.data(), kIn, kOut, xs, kTok, bs, y_tiles, s))
        return "the f32 tiles refused the check's shape";
    // Both tile widths (64 tokens, and 128: one part-filled tile).
    for (const bool wide : {false, true}) {
        MmaInputs in;
        in.wide = wide;
        if (!launch_mat_mul_mma(DType::Q8_0, dw.data(), kIn, kOut, xs, kTok, bs, y_mma, s, in))
            return "the kernel refused the check's shape";
        if (const hipError_t e = hipStreamSynchronize(s); e != hipSuccess)
            return std::string("the check's launch failed: ") + hipGetErrorString(e);
        std::vector<float> got(size_t(2 * kTok * kOut));
        check(hipMemcpy(got.data(), dy.data(), got.size() * 4, hipMemcpyDeviceToHost),
              "mma check download");
        const auto half = got.begin() + kTok * kOut;
        const double nmse =
            nmse_of(std::vector<float>(got.begin(), half), std::vector<float>(half, got.end()));
        if (!(nmse < 1e-5)) {
            char msg[112];
            std::snprintf(msg, sizeof msg,
                          "NMSE %.3g against the f32 tiles (bound 1e-5, %d-token tiles)", nmse,
                          wide ? 128 : 64);
            return msg;
        }
    }
    return {};
}

std::string mma_attention_check(hipStream_t s) {
    struct Case {
        int64_t n_head, n_kv_head, hd, T, n_past, window;
        float softcap;
    };
    // Prefill (the flash tiles' kernel), then decode steps (the split kernel's, with room for
    // the splits): a GQA group over two blocks of 16 heads, a window, softcap, three tokens.
    const Case cases[] = {{8, 2, 64, 70, 10, 0, 0.0f},
                          {4, 1, 128, 40, 50, 30, 20.0f},
                          {8, 2, 64, 1, 300, 0, 0.0f},
                          {20, 1, 128, 3, 700, 500, 20.0f}};
    uint32_t seed = 777u;
    auto next = [&seed] {
        seed = seed * 1664525u + 1013904223u;
        return seed >> 8;
    };
    for (const Case& c : cases) {
        const int64_t positions = c.n_past + c.T, width = c.n_kv_head * c.hd;
        std::vector<float> q(size_t(c.T * c.n_head * c.hd));
        std::vector<uint16_t> kv(size_t(2 * positions * width));
        for (auto& v : q) v = float(int(next() % 2001) - 1000) / 250.0f;
        for (auto& v : kv) v = f16_exact(float(int(next() % 255) - 127) / 64.0f);
        const int32_t n_past = int32_t(c.n_past);
        const uint64_t split = attention_scratch_floats(c.T, c.n_head, c.hd);
        DeviceBuffer dq(q.size() * 4), dkv(kv.size() * 2), dnp(4), dy(q.size() * 8),
            dsc(split ? split * 4 : 4);
        check(hipMemset(dsc.data(), 0, split * 4), "mma check");  // the ticket counters
        check(hipMemcpy(dq.data(), q.data(), q.size() * 4, hipMemcpyHostToDevice), "mma check");
        check(hipMemcpy(dkv.data(), kv.data(), kv.size() * 2, hipMemcpyHostToDevice), "mma check");
        check(hipMemcpy(dnp.data(), &n_past, 4, hipMemcpyHostToDevice), "mma check");
        const auto* qp = reinterpret_cast<const float*>(dq.data());
        const auto* np = reinterpret_cast<const int32_t*>(dnp.data());
        const void* kc = dkv.data();
        const void* vc = dkv.data() + positions * width * 2;
        auto* y = reinterpret_cast<float*>(dy.data());
        const float scale = 1.0f / std::sqrt(float(c.hd));
        for (int mma = 1; mma >= 0; --mma)
            launch_attention(qp, c.T, np, c.n_head, c.n_kv_head, c.hd, c.window, scale, c.softcap,
                             kc, vc, true, reinterpret_cast<float*>(dsc.data()), split,
                             y + (mma ? 0 : q.size()), s, nullptr, mma != 0);
        if (const hipError_t e = hipStreamSynchronize(s); e != hipSuccess)
            return std::string("the check's launch failed: ") + hipGetErrorString(e);
        std::vector<float> got(q.size()), ref(q.size());
        check(hipMemcpy(got.data(), y, q.size() * 4, hipMemcpyDeviceToHost), "mma check");
        check(hipMemcpy(ref.data(), y + q.size(), q.size() * 4, hipMemcpyDeviceToHost),
              "mma check");
        if (const double e = nmse_of(got, ref); !(e < 1e-5)) {
            char msg[128];
            std::snprintf(msg, sizeof msg, "head_dim %lld, %lld tokens: NMSE %.3g against f32",
                          static_cast<long long>(c.hd), static_cast<long long>(c.T), e);
            return msg;
        }
    }
    return {};
}

}  // namespace tandem::hip
