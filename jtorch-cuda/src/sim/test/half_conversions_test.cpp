// The kernels' 16-bit float conversions as compiled for the host (jtorch_cuda.cuh without __CUDA_ARCH__, what
// the simulator runs) against the simulated libraries' own (../half.h), written separately: every half, and
// every float for float -> half and float -> bfloat16. NaN must stay NaN (the payload rules differ: the
// kernels give the GPU's canonical 0x7fff).
#include <stdio.h>
#include <string.h>

#include "../half.h"

#include "../include/jtsim_kernel.h"  // what the simulated NVRTC puts before every kernel source
#include "jtorch_cuda.cuh"

static bool is_nan16(unsigned short h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
static bool is_nan_bf16(unsigned short b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

int main() {
    long failures = 0;
    for (unsigned int h = 0; h < 65536; h++) {
        float a = jt::half_to_float(jt::half{(unsigned short)h}), b = jtsim16::half_to_float((uint16_t)h);
        if (memcmp(&a, &b, 4) != 0 && !(a != a && b != b)) {
            if (failures++ < 5) printf("half %04x: kernels %a, libraries %a\n", h, a, b);
        }
    }
    for (unsigned long long u = 0; u < (1ull << 32); u++) {
        float f;
        unsigned int bits = (unsigned int)u;
        memcpy(&f, &bits, 4);
        unsigned short a = jt::float_to_half(f).bits, b = jtsim16::float_to_half(f);
        if (a != b && !(is_nan16(a) && is_nan16(b))) {
            if (failures++ < 10) printf("float %08x -> half: kernels %04x, libraries %04x\n", bits, a, b);
        }
        unsigned short c = jt::float_to_bfloat16(f).bits, d = jtsim16::float_to_bf16(f);
        if (c != d && !(is_nan_bf16(c) && is_nan_bf16(d))) {
            if (failures++ < 10) printf("float %08x -> bfloat16: kernels %04x, libraries %04x\n", bits, c, d);
        }
    }
    printf(failures == 0 ? "half conversions: all 2^32 floats and 2^16 halves agree\n" : "half conversions: %ld disagreements\n", failures);
    return failures == 0 ? 0 : 1;
}
