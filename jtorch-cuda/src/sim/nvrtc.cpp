// The simulated NVRTC (libnvrtc.so): compiles CUDA C++ for the host with g++ and the kernel runtime
// (include/jtsim_kernel.h), for the simulated driver to load.
//
// nvrtcCompileProgram writes the source and its named headers to a temporary folder, preprocesses it
// with the kernel runtime to find the extern "C" __global__ functions (the entries cuModuleGetFunction can
// name, as on CUDA) and to rewrite dynamic shared memory, and compiles that followed by JTSIM_ENTRY(name)
// for each into a shared object. "PTX" and
// "CUBIN" are both that image (a short header, then the shared object): the simulated driver loads
// either, and refuses real PTX or CUBIN. A compile error returns NVRTC_ERROR_COMPILATION with g++'s
// messages as the program log. JTSIM_ASAN=1 compiles with AddressSanitizer (the process must then
// have it preloaded); JTSIM_CXX names the compiler (g++).
//
// The version is 0.1, not a real NVRTC's: jtorch's kernel cache keys images by NVRTC version, so a
// simulated image is never taken for a real one in a shared cache.

#include <ctype.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

#define EXPORT extern "C" __attribute__((visibility("default")))

typedef int nvrtcResult;
enum {
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_OUT_OF_MEMORY = 1,
    NVRTC_ERROR_PROGRAM_CREATION_FAILURE = 2,
    NVRTC_ERROR_INVALID_INPUT = 3,
    NVRTC_ERROR_INVALID_PROGRAM = 4,
    NVRTC_ERROR_INVALID_OPTION = 5,
    NVRTC_ERROR_COMPILATION = 6,
    NVRTC_ERROR_BUILTIN_OPERATION_FAILURE = 7,
    NVRTC_ERROR_INTERNAL_ERROR = 11,
};

namespace {

struct Program {
    std::string source, name;
    std::vector<std::pair<std::string, std::string>> headers;   // include name, text
    std::string log;
    std::string image;
    bool compiled = false;
};

struct ImageHeader {
    char magic[8];
    uint64_t size;
};

// The compute capability the simulated device reports (JTSIM_CC, 9.0), the one architecture compiled for.
int simulated_arch() {
    int major = 9, minor = 0;
    if (const char* s = getenv("JTSIM_CC")) {
        int a = 0, b = 0;
        if (sscanf(s, "%d.%d", &a, &b) >= 1 && a > 0) major = a, minor = b;
    }
    return major * 10 + minor;
}

// The folder this library was loaded from: the kernel runtime header is in its include/.
std::string own_folder() {
    Dl_info info;
    if (dladdr((void*)&simulated_arch, &info) == 0 || info.dli_fname == nullptr) return ".";
    std::string path = info.dli_fname;
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool write_file(const std::string& path, const std::string& text) {
    // Include names may have folders (e.g. "detail/x.cuh").
    for (size_t i = 1; i < path.size(); i++) {
        if (path[i] == '/') mkdir(path.substr(0, i).c_str(), 0700);
    }
    std::ofstream out(path, std::ios::binary);
    out << text;
    return (bool)out;
}

bool read_file(const std::string& path, std::string* text) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream s;
    s << in.rdbuf();
    *text = s.str();
    return true;
}

// Runs argv with stdout and stderr into `output`; returns the exit status (-1 when it could not start).
int run(const std::vector<std::string>& argv, const std::string& output) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    // The compiler runs without LD_PRELOAD: under AddressSanitizer (JTSIM_ASAN) the JVM preloads libasan,
    // which would instrument g++ itself.
    std::vector<char*> env;
    for (char** e = environ; *e != nullptr; e++) {
        if (strncmp(*e, "LD_PRELOAD=", 11) != 0) env.push_back(*e);
    }
    env.push_back(nullptr);
    pid_t pid;
    int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool identifier_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The extern "C" __global__ functions of a preprocessed source: "__global__" expands to the marker below,
// preceded by `extern "C"` and followed by `void name(`.
std::vector<std::string> entry_names(const std::string& text) {
    static const std::string marker = "__attribute__((used, noinline))";
    std::vector<std::string> names;
    for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) {
        size_t before = at;
        while (before > 0 && isspace((unsigned char)text[before - 1])) before--;
        if (before < 3 || text.compare(before - 3, 3, "\"C\"") != 0) continue;
        size_t p = at + marker.size();
        while (p < text.size() && isspace((unsigned char)text[p])) p++;
        if (text.compare(p, 4, "void") != 0 || p + 4 >= text.size() || identifier_char(text[p + 4])) continue;
        p += 4;
        while (p < text.size() && isspace((unsigned char)text[p])) p++;
        size_t start = p;
        while (p < text.size() && identifier_char(text[p])) p++;
        std::string name = text.substr(start, p - start);
        while (p < text.size() && isspace((unsigned char)text[p])) p++;
        if (!name.empty() && p < text.size() && text[p] == '(') {
            bool seen = false;
            for (const std::string& n : names) seen = seen || n == name;
            if (!seen) names.push_back(name);
        }
    }
    return names;
}

// `extern __shared__ T name[];` (dynamic shared memory) reads `extern static thread_local T name[];` once the
// kernel runtime's __shared__ is expanded, which C++ rejects: it becomes a pointer to the worker's dynamic
// shared buffer, `static thread_local T* const name = (T*)jtsim::dynamic_shared();`, valid at namespace and
// at function scope. Attributes (__align__) stay on the declaration and are left out of the cast.
std::string rewrite_dynamic_shared(const std::string& text) {
    static const std::string marker = "extern static thread_local";
    std::string out;
    size_t from = 0;
    for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, from)) {
        size_t end = text.find(';', at), open = text.rfind('[', end);
        size_t name_end = open;
        while (name_end > at && isspace((unsigned char)text[name_end - 1])) name_end--;
        size_t name_start = name_end;
        while (name_start > at && identifier_char(text[name_start - 1])) name_start--;
        if (end == std::string::npos || open == std::string::npos || open < at || name_start == name_end) {
            out += text.substr(from, at + marker.size() - from);  // not a declaration this knows: left to g++
            from = at + marker.size();
            continue;
        }
        std::string type = text.substr(at + marker.size(), name_start - at - marker.size());
        std::string name = text.substr(name_start, name_end - name_start), plain;
        for (size_t i = 0; i < type.size();) {  // the type without __attribute__((...)) for the cast
            if (type.compare(i, 13, "__attribute__") == 0) {
                int depth = 0;
                size_t j = i + 13;
                for (; j < type.size(); j++) {
                    if (type[j] == '(') depth++;
                    if (type[j] == ')' && --depth == 0) break;
                }
                i = j + 1;
            } else {
                plain += type[i++];
            }
        }
        out += text.substr(from, at - from) + "static thread_local " + type + "* const " + name + " = (" + plain +
               "*)jtsim::dynamic_shared();";
        from = end + 1;
    }
    return out + text.substr(from);
}

bool starts_with(const std::string& s, const char* prefix) {
    return s.compare(0, strlen(prefix), prefix) == 0;
}

// NVRTC's options mapped to g++'s; false (and the log line NVRTC would write) for an unknown one.
bool map_options(int count, const char* const* options, std::vector<std::string>* flags, std::string* log) {
    std::string standard = "-std=c++17";
    // NVRTC contracts a * b + c into one fused multiply-add unless -fmad=false; so does g++ where the host
    // has FMA instructions (the _rn intrinsics stay separate operations either way).
    bool fmad = __builtin_cpu_supports("fma");
    int arch = simulated_arch();
    for (int i = 0; i < count; i++) {
        std::string o = options[i] ? options[i] : "";
        std::string value;
        if (starts_with(o, "--gpu-architecture=") || starts_with(o, "-arch=")) {
            value = o.substr(o.find('=') + 1);
        } else if ((o == "--gpu-architecture" || o == "-arch") && i + 1 < count) {
            value = options[++i];
        }
        if (!value.empty()) {
            int n = 0;
            if ((sscanf(value.c_str(), "sm_%d", &n) != 1 && sscanf(value.c_str(), "compute_%d", &n) != 1) || n != arch) {
                *log += "nvrtc: error: invalid value for --gpu-architecture (-arch): " + value +
                        " (the simulated device is compute capability " + std::to_string(arch / 10) + "." +
                        std::to_string(arch % 10) + ")\n";
                return false;
            }
            continue;
        }
        if (o == "-fmad=false" || o == "--fmad=false") {
            fmad = false;
        } else if (starts_with(o, "-D") || starts_with(o, "-I")) {
            flags->push_back(o);
        } else if (starts_with(o, "--define-macro=")) {
            flags->push_back("-D" + o.substr(15));
        } else if (starts_with(o, "--include-path=")) {
            flags->push_back("-I" + o.substr(15));
        } else if (starts_with(o, "-std=") || starts_with(o, "--std=")) {
            standard = "-std=" + o.substr(o.find('=') + 1);
        } else if (o == "-default-device" || o == "--device-as-default-execution-space" || o == "-lineinfo" ||
                   o == "--generate-line-info" || o == "-G" || o == "--device-debug" || o == "--use_fast_math" ||
                   o == "-use_fast_math" || starts_with(o, "-fmad=") || starts_with(o, "--fmad=") || starts_with(o, "-ftz=") ||
                   starts_with(o, "--ftz=") || starts_with(o, "-prec-div=") || starts_with(o, "--prec-div=") ||
                   starts_with(o, "-prec-sqrt=") || starts_with(o, "--prec-sqrt=") || starts_with(o, "-dopt") ||
                   starts_with(o, "--dopt") || starts_with(o, "-rdc=") || starts_with(o, "--relocatable-device-code=") ||
                   o == "--extra-device-vectorization" || o == "-extra-device-vectorization" || starts_with(o, "-maxrregcount") ||
                   starts_with(o, "--maxrregcount") || o == "-w" || o == "--disable-warnings") {
            // Code-generation choices of the GPU compiler: nothing to do on the host.
        } else {
            *log += "nvrtc: error: unrecognized option " + o + "\n";
            return false;
        }
    }
    flags->insert(flags->begin(), standard);
    if (fmad) {
        flags->push_back("-mfma");
        flags->push_back("-ffp-contract=fast");
    } else {
        flags->push_back("-ffp-contract=off");
    }
    return true;
}

std::string compile(Program* p, const std::vector<std::string>& flags, nvrtcResult* result) {
    char folder_template[] = "/tmp/jtsim-nvrtc-XXXXXX";
    char* made = mkdtemp(folder_template);
    if (made == nullptr) {
        *result = NVRTC_ERROR_INTERNAL_ERROR;
        return "nvrtc: error: cannot make a temporary folder\n";
    }
    std::string folder = made, runtime = own_folder() + "/include";
    std::string name = p->name.empty() ? "default_program" : p->name;
    for (char& c : name) {
        if (c == '/') c = '_';
    }
    std::string source = folder + "/" + name, log_file = folder + "/log.txt";
    bool ok = write_file(source, p->source);
    for (auto& h : p->headers) ok = ok && write_file(folder + "/" + h.first, h.second);
    std::string cxx = getenv("JTSIM_CXX") ? getenv("JTSIM_CXX") : "g++";
    bool asan = getenv("JTSIM_ASAN") != nullptr && strcmp(getenv("JTSIM_ASAN"), "0") != 0;
    std::vector<std::string> common = {cxx, "-x", "c++", "-include", runtime + "/jtsim_kernel.h", "-I" + folder, "-I" + runtime};
    common.insert(common.end(), flags.begin(), flags.end());
    std::string log, text;
    *result = NVRTC_ERROR_COMPILATION;
    if (ok) {
        std::vector<std::string> pre = common;
        pre.insert(pre.end(), {"-E", "-w", source, "-o", folder + "/preprocessed.i"});
        if (run(pre, log_file) == 0 && read_file(folder + "/preprocessed.i", &text)) {
            // The preprocessed source (runtime included, dynamic shared memory rewritten), then the entries.
            std::string unit = rewrite_dynamic_shared(text) + "\n#include \"jtsim_entry.h\"\n";
            for (const std::string& entry : entry_names(text)) unit += "JTSIM_ENTRY(" + entry + ")\n";
            write_file(folder + "/entries.cpp", unit);
            // AddressSanitizer at -O1: g++ takes 10x longer at -O2 with it (the kernels' names come from the
            // symbol table, so no -g either).
            std::vector<std::string> build = {cxx, "-x", "c++", "-I" + runtime};
            build.insert(build.end(), flags.begin(), flags.end());
            build.insert(build.end(), {asan ? "-O1" : "-O2", "-fPIC", "-shared", "-fno-strict-aliasing", "-w",
                                       folder + "/entries.cpp", "-o", folder + "/module.so"});
            if (asan) build.insert(build.end(), {"-fsanitize=address", "-fno-omit-frame-pointer"});
            std::string so;
            if (run(build, log_file) == 0 && read_file(folder + "/module.so", &so)) {
                ImageHeader header;
                memcpy(header.magic, "JTSIMSO", 8);
                header.size = so.size();
                p->image.assign((const char*)&header, sizeof header);
                p->image += so;
                *result = NVRTC_SUCCESS;
            }
        }
        read_file(log_file, &log);
    } else {
        *result = NVRTC_ERROR_INTERNAL_ERROR;
        log = "nvrtc: error: cannot write the program to " + folder + "\n";
    }
    std::vector<std::string> cleanup = {"rm", "-rf", folder};
    run(cleanup, "/dev/null");
    return log;
}

Program* program(void* handle) {
    return static_cast<Program*>(handle);
}

}  // namespace

typedef void* nvrtcProgram;

EXPORT const char* nvrtcGetErrorString(nvrtcResult result) {
    switch (result) {
        case NVRTC_SUCCESS: return "NVRTC_SUCCESS";
        case NVRTC_ERROR_OUT_OF_MEMORY: return "NVRTC_ERROR_OUT_OF_MEMORY";
        case NVRTC_ERROR_PROGRAM_CREATION_FAILURE: return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
        case NVRTC_ERROR_INVALID_INPUT: return "NVRTC_ERROR_INVALID_INPUT";
        case NVRTC_ERROR_INVALID_PROGRAM: return "NVRTC_ERROR_INVALID_PROGRAM";
        case NVRTC_ERROR_INVALID_OPTION: return "NVRTC_ERROR_INVALID_OPTION";
        case NVRTC_ERROR_COMPILATION: return "NVRTC_ERROR_COMPILATION";
        case NVRTC_ERROR_BUILTIN_OPERATION_FAILURE: return "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE";
        case NVRTC_ERROR_INTERNAL_ERROR: return "NVRTC_ERROR_INTERNAL_ERROR";
        default: return "NVRTC_ERROR unknown";
    }
}

EXPORT nvrtcResult nvrtcVersion(int* major, int* minor) {
    if (major == nullptr || minor == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    *major = 0;
    *minor = 1;
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcGetNumSupportedArchs(int* count) {
    if (count == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    *count = 1;
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcGetSupportedArchs(int* archs) {
    if (archs == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    archs[0] = simulated_arch();
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcCreateProgram(nvrtcProgram* out, const char* source, const char* name, int header_count,
                                      const char* const* headers, const char* const* include_names) {
    if (out == nullptr || source == nullptr || header_count < 0) return NVRTC_ERROR_INVALID_INPUT;
    if (header_count > 0 && (headers == nullptr || include_names == nullptr)) return NVRTC_ERROR_INVALID_INPUT;
    Program* p = new Program();
    p->source = source;
    p->name = name ? name : "";
    for (int i = 0; i < header_count; i++) {
        if (headers[i] == nullptr || include_names[i] == nullptr) {
            delete p;
            return NVRTC_ERROR_INVALID_INPUT;
        }
        p->headers.emplace_back(include_names[i], headers[i]);
    }
    *out = p;
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcDestroyProgram(nvrtcProgram* handle) {
    if (handle == nullptr || *handle == nullptr) return NVRTC_ERROR_INVALID_PROGRAM;
    delete program(*handle);
    *handle = nullptr;
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcCompileProgram(nvrtcProgram handle, int option_count, const char* const* options) {
    if (handle == nullptr) return NVRTC_ERROR_INVALID_PROGRAM;
    if (option_count < 0 || (option_count > 0 && options == nullptr)) return NVRTC_ERROR_INVALID_INPUT;
    Program* p = program(handle);
    p->log.clear();
    p->image.clear();
    p->compiled = false;
    std::vector<std::string> flags;
    if (!map_options(option_count, options, &flags, &p->log)) return NVRTC_ERROR_INVALID_OPTION;
    nvrtcResult result = NVRTC_SUCCESS;
    p->log = compile(p, flags, &result);
    p->compiled = result == NVRTC_SUCCESS;
    return result;
}

EXPORT nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram handle, size_t* size) {
    if (handle == nullptr) return NVRTC_ERROR_INVALID_PROGRAM;
    if (size == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    *size = program(handle)->log.size() + 1;
    return NVRTC_SUCCESS;
}

EXPORT nvrtcResult nvrtcGetProgramLog(nvrtcProgram handle, char* log) {
    if (handle == nullptr) return NVRTC_ERROR_INVALID_PROGRAM;
    if (log == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    const std::string& text = program(handle)->log;
    memcpy(log, text.c_str(), text.size() + 1);
    return NVRTC_SUCCESS;
}

static nvrtcResult image_size(nvrtcProgram handle, size_t* size, size_t extra) {
    if (handle == nullptr) return NVRTC_ERROR_INVALID_PROGRAM;
    if (size == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    if (!program(handle)->compiled) return NVRTC_ERROR_INVALID_PROGRAM;
    *size = program(handle)->image.size() + extra;
    return NVRTC_SUCCESS;
}

static nvrtcResult image_copy(nvrtcProgram handle, char* out, size_t extra) {
    if (handle == nullptr) return NVRTC_ERROR_INVALID_PROGRAM;
    if (out == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    if (!program(handle)->compiled) return NVRTC_ERROR_INVALID_PROGRAM;
    const std::string& image = program(handle)->image;
    memcpy(out, image.data(), image.size());
    if (extra) out[image.size()] = 0;
    return NVRTC_SUCCESS;
}

// PTX is text with its terminating zero; CUBIN bytes are exact. Both are the simulator's image here.
EXPORT nvrtcResult nvrtcGetPTXSize(nvrtcProgram handle, size_t* size) { return image_size(handle, size, 1); }
EXPORT nvrtcResult nvrtcGetPTX(nvrtcProgram handle, char* ptx) { return image_copy(handle, ptx, 1); }
EXPORT nvrtcResult nvrtcGetCUBINSize(nvrtcProgram handle, size_t* size) { return image_size(handle, size, 0); }
EXPORT nvrtcResult nvrtcGetCUBIN(nvrtcProgram handle, char* cubin) { return image_copy(handle, cubin, 0); }
