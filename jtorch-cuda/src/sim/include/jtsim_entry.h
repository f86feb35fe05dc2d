// JTSIM_ENTRY(name): a kernel's launcher, which the simulated NVRTC appends for every extern "C" __global__
// function of a source after the source (kept apart from jtsim_kernel.h so that it can follow a source
// that is already preprocessed).
#pragma once

// ---- entries ------------------------------------------------------------------------------------------

// For kernel NAME, exports:
//   size_t jtsim_args_size_NAME()                       bytes of its packed arguments
//   void   jtsim_pack_NAME(void** params, void* out)    copies the launch's arguments (cuLaunchKernel's array)
//   void   jtsim_unpack_NAME(void* packed)              destroys a packed copy
//   int    jtsim_launch_NAME(LaunchConfig*, const void* packed)   runs the grid: 0 or a CUresult
#define JTSIM_ENTRY(NAME)                                                                                     \
    namespace jtsim_entry_##NAME {                                                                            \
    using E = decltype(jtsim::entry_of(&NAME));                                                               \
    static void body(const void* packed) { std::apply(NAME, *static_cast<const E::Args*>(packed)); }          \
    }                                                                                                         \
    extern "C" __attribute__((visibility("default"))) size_t jtsim_args_size_##NAME() {                       \
        return sizeof(jtsim_entry_##NAME::E::Args);                                                           \
    }                                                                                                         \
    extern "C" __attribute__((visibility("default"))) void jtsim_pack_##NAME(void** params, void* out) {      \
        jtsim_entry_##NAME::E::pack(params, out,                                                              \
                                    std::make_index_sequence<std::tuple_size<jtsim_entry_##NAME::E::Args>::value>{}); \
    }                                                                                                         \
    extern "C" __attribute__((visibility("default"))) void jtsim_unpack_##NAME(void* packed) {                \
        using Args = jtsim_entry_##NAME::E::Args;                                                             \
        static_cast<Args*>(packed)->~Args();                                                                  \
    }                                                                                                         \
    extern "C" __attribute__((visibility("default"))) int jtsim_launch_##NAME(jtsim::LaunchConfig* config,    \
                                                                              const void* packed) {           \
        return jtsim::run_grid(config, #NAME, &jtsim_entry_##NAME::body, packed);                             \
    }
