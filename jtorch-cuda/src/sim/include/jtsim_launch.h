// What the simulated driver hands a kernel module's launcher (shared by driver.cpp and jtsim_kernel.h).
#pragma once

#include <stddef.h>

namespace jtsim {

struct LaunchConfig {
    unsigned int grid[3];
    unsigned int block[3];
    size_t dynamic_shared;
    void** stacks;       // one fiber stack per thread of a block (lowest address), kept by the stream's worker
    size_t stack_size;   // bytes of each
    char error[512];     // why a launch failed
};

}  // namespace jtsim
