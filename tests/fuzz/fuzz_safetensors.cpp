// libFuzzer: safetensors header parsing (length prefix, JSON, dtypes, shapes, offsets). Any input
// must parse or throw tandem::Error.
#include <cstddef>
#include <cstdint>

#include "tandem/common/error.h"
#include "tandem/hf/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto tensors =
            tandem::hf::parse_safetensors_header(data, size, size, "fuzz.safetensors");
        for (const auto& t : tensors) {
            // The parser promises every tensor's bytes lie inside the file and match its shape.
            if (t.offset + t.nbytes > size) __builtin_trap();
            if (t.n_elements() * tandem::dtype_traits(t.dtype).block_bytes != t.nbytes)
                __builtin_trap();
        }
    } catch (const tandem::Error&) {
    }
    return 0;
}
