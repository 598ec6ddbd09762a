#!/bin/sh
# Builds the optional ggml oracle for test-quant's GgmlOracle tests: ggml's reference quantisers
# (ggml-quants.c) from the llama-cpp-python sdist on PyPI, compiled on their own with stubs for
# the few ggml functions they reference. Prints the export line to use.
#   tests/quant/build_ggml_oracle.sh [WORKDIR]   (default /tmp/tandem-ggml-oracle)
set -eu
dir=${1:-/tmp/tandem-ggml-oracle}
py=${TANDEM_PYTHON:-$HOME/.cache/tandem/pyenv/bin/python}
mkdir -p "$dir"
cd "$dir"
if [ ! -d src ]; then
    "$py" -m pip download --quiet --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d .
    tar xzf llama_cpp_python-*.tar.gz
    mv llama_cpp_python-*/vendor/llama.cpp/ggml src
fi
cat > stubs.c <<'STUBS'
#include <stdio.h>
#include <stdlib.h>
/* Only reached by code paths the oracle tests do not use. */
void ggml_abort(const char* file, int line, const char* fmt, ...) {
    (void)fmt;
    fprintf(stderr, "ggml_abort %s:%d\n", file, line);
    abort();
}
size_t ggml_row_size(int t, long n) { (void)t; (void)n; abort(); }
const char* ggml_type_name(int t) { (void)t; return "?"; }
size_t ggml_type_size(int t) { (void)t; abort(); }
STUBS
# -ffp-contract=off: the reference quantisers must round every float operation on its own.
cc -O2 -ffp-contract=off -fPIC -shared -std=gnu11 -Isrc/include -Isrc/src src/src/ggml-quants.c \
    stubs.c -lm -o libggml-quants-ref.so
echo "export TANDEM_GGML_QUANTS_LIB=$dir/libggml-quants-ref.so"
