// Simulated cuBLAS (libcublas.so.13): only what jtorch binds from it, the version query. The
// matmuls go through the simulated cuBLASLt.
extern "C" {

// libraryPropertyType: MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2; cuBLAS 13.1.0 as cuBLASLt.
int cublasGetProperty(int type, int* value) {
    static const int parts[3] = {13, 1, 0};
    if (value == nullptr || type < 0 || type > 2) return 7;  // CUBLAS_STATUS_INVALID_VALUE
    *value = parts[type];
    return 0;  // CUBLAS_STATUS_SUCCESS
}

}  // extern "C"
