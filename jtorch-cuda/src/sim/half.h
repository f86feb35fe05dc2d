// IEEE conversions between float and the 16-bit floats (binary16 "half" and bfloat16), exact, for the
// simulated libraries: round to nearest, ties to even; overflow to infinity; subnormals kept; a NaN stays a
// quiet NaN with its sign and top payload bits.
#pragma once

#include <stdint.h>
#include <string.h>

namespace jtsim16 {

inline uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

inline float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

inline float half_to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return float_of(sign | 0x7f800000 | (man << 13));   // inf, NaN (payload kept)
    if (exp != 0) return float_of(sign | ((exp + 112) << 23) | (man << 13));  // rebias 15 -> 127
    float magnitude = float(man) * 5.9604644775390625e-8f;               // subnormal or zero: man * 2^-24, exact
    return sign ? -magnitude : magnitude;
}

inline uint16_t float_to_half(float f) {
    uint32_t x = bits_of(f), sign = (x >> 16) & 0x8000, a = x & 0x7fffffff;
    if (a > 0x7f800000) return uint16_t(sign | 0x7e00 | ((a >> 13) & 0x3ff));
    if (a >= 0x477ff000) return uint16_t(sign | 0x7c00);                  // >= 65520 (65504 + half an ulp)
    if (a >= 0x38800000) {                                                // normal: >= 2^-14
        uint32_t v = a - (112u << 23);                                    // rebias 127 -> 15
        v += 0xfff + ((v >> 13) & 1);                                     // may carry into the exponent
        return uint16_t(sign | (v >> 13));
    }
    if (a <= 0x33000000) return uint16_t(sign);                           // <= 2^-25 (a tie to 0 at 2^-25)
    uint32_t man = (a & 0x7fffff) | 0x800000, shift = 126 - (a >> 23);    // in units of 2^-24: 14..24
    uint32_t q = man >> shift, rest = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1))) ++q;                    // may reach 0x400, the least normal
    return uint16_t(sign | q);
}

inline float bf16_to_float(uint16_t b) {
    return float_of(uint32_t(b) << 16);
}

inline uint16_t float_to_bf16(float f) {
    uint32_t x = bits_of(f);
    if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);
    return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);  // ties to even; overflow carries into infinity
}

}  // namespace jtsim16
