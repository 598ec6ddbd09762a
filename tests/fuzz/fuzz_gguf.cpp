// libFuzzer: GGUF header, metadata and tensor table parsing. Any input must parse or throw
// tandem::Error; any other exception, crash, leak or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>

#include "tandem/common/error.h"
#include "tandem/gguf/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto f = tandem::gguf::File::parse(data, size, "fuzz.gguf");
        // Touch what a loader reads next, so bad values surface here rather than later.
        uint64_t sum = f.data_offset() + f.alignment();
        for (const auto& t : f.tensors()) {
            sum += t.n_elements() + t.n_rows() + t.nbytes;
            if (f.data_offset() + t.offset + t.nbytes > size) __builtin_trap();  // checked promise
            if (f.tensor(t.name) != &t) __builtin_trap();
        }
        for (const auto& [k, v] : f.metadata()) {
            sum += k.size();
            if (v.is_array()) sum += v.as_array().items.size();
        }
        (void)f.get_u64("general.alignment", 0);
        (void)f.get_string("general.architecture", "");
        if (sum == 1) return 0;
    } catch (const tandem::Error&) {
    }
    return 0;
}
