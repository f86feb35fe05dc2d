// Known-answer test of the Philox4x32-10 in jtorch_cuda.cuh (host side of the same __host__ __device__
// function the kernels call). Vectors: Random123's kat_vectors for philox4x32 with 10 rounds.
// Built and run by scripts/check-kernels; exit status = number of mismatches.
#include "jtorch_cuda.cuh"
#include <cstdio>
int main() {
    struct { jt::U32x4 ctr; jt_u32 k0, k1; jt::U32x4 expect; } v[] = {
        {{0, 0, 0, 0}, 0, 0, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, 0xffffffffu, 0xffffffffu, {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, 0xa4093822u, 0x299f31d0u, {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    int bad = 0;
    for (auto& t : v) {
        jt::U32x4 r = jt::philox4x32_10(t.ctr, t.k0, t.k1);
        bool ok = r.x == t.expect.x && r.y == t.expect.y && r.z == t.expect.z && r.w == t.expect.w;
        printf("%08x %08x %08x %08x %s\n", r.x, r.y, r.z, r.w, ok ? "ok" : "MISMATCH");
        bad += !ok;
    }
    return bad;
}
