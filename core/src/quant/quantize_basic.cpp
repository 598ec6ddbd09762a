// Reference quantisers of the 32-element types and the activation formats. The arithmetic order
// follows ggml's reference code (float, no FMA) so the output matches it bit for bit.
#include <cmath>
#include <cstring>

#include "blocks.h"
#include "dequantize.h"
#include "tandem/quant/fp16.h"

namespace tandem::quant::scalar {

int nearest_int(float v) {
    // Adding 1.5 * 2^23 pushes the rounded integer into the low mantissa bits.
    const float shifted = v + 12582912.f;
    int32_t bits;
    std::memcpy(&bits, &shifted, 4);
    return (bits & 0x007fffff) - 0x00400000;
}

void quant_f16(const float* x, void* dst, int64_t n) {
    auto* d = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_fp16(x[i]);
}

void quant_bf16(const float* x, void* dst, int64_t n) {
    auto* d = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_bf16(x[i]);
}

namespace {

// The element of largest magnitude, sign kept (the first one on ties).
float signed_absmax(const float* x, int n) {
    float amax = 0.f, max = 0.f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

void min_max(const float* x, int n, float& min, float& max) {
    min = x[0];
    max = x[0];
    for (int j = 1; j < n; ++j) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
}

int clamp_trunc(float v, int hi) {
    const int q = static_cast<int>(v);  // truncation, as ggml's (int8_t) cast
    return q < 0 ? 0 : (q > hi ? hi : q);
}

}  // namespace

void quant_q4_0(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ4_0*>(dst);
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        const float d = signed_absmax(x, QK) / -8;
        const float id = d != 0.f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        for (int j = 0; j < QK / 2; ++j) {
            const int q0 = clamp_trunc(x[j] * id + 8.5f, 15);
            const int q1 = clamp_trunc(x[j + 16] * id + 8.5f, 15);
            y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

void quant_q4_1(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ4_1*>(dst);
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        float min, max;
        min_max(x, QK, min, max);
        const float d = (max - min) / 15;
        const float id = d != 0.f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        y[i].m = fp32_to_fp16(min);
        for (int j = 0; j < QK / 2; ++j) {
            const int q0 = clamp_trunc((x[j] - min) * id + 0.5f, 15);
            const int q1 = clamp_trunc((x[j + 16] - min) * id + 0.5f, 15);
            y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
        }
    }
}

void quant_q5_0(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ5_0*>(dst);
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        const float d = signed_absmax(x, QK) / -16;
        const float id = d != 0.f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < QK / 2; ++j) {
            const int q0 = clamp_trunc(x[j] * id + 16.5f, 31);
            const int q1 = clamp_trunc(x[j + 16] * id + 16.5f, 31);
            y[i].qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
            qh |= static_cast<uint32_t>(q0 >> 4) << j;
            qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
        }
        std::memcpy(y[i].qh, &qh, 4);
    }
}

void quant_q5_1(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ5_1*>(dst);
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        float min, max;
        min_max(x, QK, min, max);
        const float d = (max - min) / 31;
        const float id = d != 0.f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        y[i].m = fp32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < QK / 2; ++j) {
            const int q0 = clamp_trunc((x[j] - min) * id + 0.5f, 31);
            const int q1 = clamp_trunc((x[j + 16] - min) * id + 0.5f, 31);
            y[i].qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
            qh |= static_cast<uint32_t>(q0 >> 4) << j;
            qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
        }
        std::memcpy(y[i].qh, &qh, 4);
    }
}

void quant_q8_0(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_0*>(dst);
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        float amax = 0.f;
        for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.f;
        const float id = d != 0.f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        for (int j = 0; j < QK; ++j) y[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
    }
}

void quant_q8_1(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_1*>(dst);
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        float amax = 0.f;
        for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.f;
        const float id = d != 0.f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < QK; ++j) {
            y[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
            sum += y[i].qs[j];
        }
        y[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
    }
}

void quant_q8_k(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_K*>(dst);
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        const float max = signed_absmax(x, QK_K);
        if (max == 0.f) {
            std::memset(&y[i], 0, sizeof(BlockQ8_K));
            continue;
        }
        // The largest-magnitude element maps to -127 so that every q fits in [-127, 127].
        const float iscale = -127.f / max;
        for (int j = 0; j < QK_K; ++j) {
            const int v = nearest_int(iscale * x[j]);
            y[i].qs[j] = static_cast<int8_t>(v > 127 ? 127 : v);
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * j + l];
            y[i].bsums[j] = static_cast<int16_t>(sum);
        }
        y[i].d = 1 / iscale;
    }
}

}  // namespace tandem::quant::scalar
