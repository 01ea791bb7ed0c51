/* Separate compilation on the Weft platform, on each of its devices: clCompileProgram with
 * an embedded header, clLinkProgram of two compiled objects (a kernel calling a function
 * defined in the other one, each with its own static helper), the linked kernel run and
 * its result checked; a compile error
 * is reported by clCompileProgram itself (CL_COMPILE_PROGRAM_FAILURE, build status
 * CL_BUILD_ERROR, the compiler's log), a compiled object is no executable, and a library
 * link that cannot write its headers out fails, tells its callback once and leaves no
 * program behind. Prints
 * "device N: compile/link ok" per device, then "all ok". */
#define _POSIX_C_SOURCE 200809L /* setenv, strdup */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char *HEADER = "inline int offset(void) { return 40; }\n";
/* Each object has its own file-local `helper`, of different types: only a real link keeps
 * them apart (a build of the two sources pasted together fails on the redefinition). */
static const char *SINK =
    "static int helper(int x) { return 2 * x; }\n"
    "int twice(int x) { return helper(x); }\n";
static const char *MAIN =
    "#include \"offset.h\"\n"
    "int twice(int x);\n"
    "static int helper(void) { return offset(); }\n"
    "__kernel void experiment(__global int *out) {\n"
    "    int i = get_global_id(0);\n"
    "    out[i] = twice(i) + helper();\n"
    "}\n";
static const char *VSINK = "void value_sink(float x) { }\n";
static const char *PI_H = "inline float get_pi() { return 3.1415f; }\n";
static const char *NULLARY =
    "#include \"pi.h\"\n"
    "void value_sink(float x);\n"
    "__kernel void experiment0() { value_sink(get_pi() + get_global_id(0)); }\n";
static const char *BROKEN = "__kernel void broken(__global int *out) { out[0] = not_declared_anywhere; }\n";

/* A program of `ctx` from one source string (the test fails if it cannot be made). */
static cl_program from_source(cl_context ctx, const char *src) {
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    return p;
}

static int link_calls;
static cl_program link_seen;
static void CL_CALLBACK on_link(cl_program p, void *user) {
    (void)user;
    link_calls++;
    link_seen = p;
}

/* A program made from `p`'s binary (one device), whose binary type must be `type`. */
static cl_program reload(cl_context ctx, cl_device_id dev, cl_program p, cl_program_binary_type type) {
    size_t size = 0;
    CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL));
    EXPECT(size > 0);
    unsigned char *bin = malloc(size);
    EXPECT(bin != NULL);
    CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL));
    cl_int err, status;
    const unsigned char *cbin = bin;
    cl_program r = clCreateProgramWithBinary(ctx, 1, &dev, &size, &cbin, &status, &err);
    CHECK(err);
    CHECK(status);
    free(bin);
    cl_program_binary_type bt;
    CHECK(clGetProgramBuildInfo(r, dev, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL));
    EXPECT(bt == type);
    return r;
}

static void run_on(cl_device_id dev, int index) {
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);

    cl_program header = from_source(ctx, HEADER);
    cl_program sink = from_source(ctx, SINK);
    cl_program main_prg = from_source(ctx, MAIN);
    CHECK(clCompileProgram(sink, 1, &dev, "", 0, NULL, NULL, NULL, NULL));
    const char *names[] = {"offset.h"};
    CHECK(clCompileProgram(main_prg, 1, &dev, "", 1, &header, names, NULL, NULL));
    cl_program_binary_type bt;
    CHECK(clGetProgramBuildInfo(main_prg, dev, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL));
    EXPECT(bt == CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT);
    /* A compiled object has no kernels to make. */
    cl_kernel none = clCreateKernel(main_prg, "experiment", &err);
    EXPECT(none == NULL && err == CL_INVALID_PROGRAM_EXECUTABLE);

    cl_program inputs[] = {sink, main_prg};
    cl_program linked = clLinkProgram(ctx, 1, &dev, "", 2, inputs, NULL, NULL, &err);
    CHECK(err);
    cl_build_status bs;
    CHECK(clGetProgramBuildInfo(linked, dev, CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs, NULL));
    EXPECT(bs == CL_BUILD_SUCCESS);
    char kernels[256];
    CHECK(clGetProgramInfo(linked, CL_PROGRAM_KERNEL_NAMES, sizeof kernels, kernels, NULL));
    EXPECT(strcmp(kernels, "experiment") == 0);
    cl_kernel k = clCreateKernel(linked, "experiment", &err);
    CHECK(err);
    enum { N = 256 };
    cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, N * sizeof(int), NULL, &err);
    CHECK(err);
    CHECK(clSetKernelArg(k, 0, sizeof out, &out));
    size_t g = N;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    int got[N];
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(got[i] == 2 * i + 40);

    /* pyopencl's test_compile_link: a kernel without arguments calling a function of the
     * other object, with a header that was itself compiled first. NVIDIA's linker fails on
     * such objects compiled with -cl-kernel-arg-info (which Weft adds); Weft then links
     * objects compiled without it. */
    cl_program vsink = from_source(ctx, VSINK);
    cl_program pi_h = from_source(ctx, PI_H);
    cl_program nullary = from_source(ctx, NULLARY);
    CHECK(clCompileProgram(vsink, 1, &dev, "", 0, NULL, NULL, NULL, NULL));
    CHECK(clCompileProgram(pi_h, 1, &dev, "", 0, NULL, NULL, NULL, NULL));
    const char *pi_name[] = {"pi.h"};
    CHECK(clCompileProgram(nullary, 1, &dev, "", 1, &pi_h, pi_name, NULL, NULL));
    cl_program pair[] = {vsink, nullary};
    cl_program linked0 = clLinkProgram(ctx, 1, &dev, "", 2, pair, NULL, NULL, &err);
    CHECK(err);
    cl_kernel k0 = clCreateKernel(linked0, "experiment0", &err);
    CHECK(err);
    size_t g0 = 1024, l0 = 64;
    CHECK(clEnqueueNDRangeKernel(q, k0, 1, NULL, &g0, &l0, 0, NULL, NULL));
    CHECK(clFinish(q));
    CHECK(clReleaseKernel(k0));
    cl_program ps0[] = {vsink, pi_h, nullary, linked0};
    for (size_t i = 0; i < sizeof ps0 / sizeof *ps0; i++) CHECK(clReleaseProgram(ps0[i]));

    /* A compile error surfaces at the compile, with the compiler's log. */
    cl_program broken = from_source(ctx, BROKEN);
    EXPECT_CODE(CL_COMPILE_PROGRAM_FAILURE, clCompileProgram(broken, 1, &dev, "", 0, NULL, NULL, NULL, NULL));
    CHECK(clGetProgramBuildInfo(broken, dev, CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs, NULL));
    EXPECT(bs == CL_BUILD_ERROR);
    char log[4096] = "";
    CHECK(clGetProgramBuildInfo(broken, dev, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL));
    EXPECT(strstr(log, "not_declared_anywhere") != NULL);

    /* A library is linked by the vendor's linker from its inputs' objects (headers given
     * to the vendor as programs): nothing is written under TMPDIR, so an unusable TMPDIR
     * changes nothing, and the callback is called once, with the library. */
    const char *tmp = getenv("TMPDIR");
    char *saved = tmp ? strdup(tmp) : NULL;
    setenv("TMPDIR", "/proc/weft-no-such-dir", 1);
    link_calls = 0;
    cl_program lib = clLinkProgram(ctx, 1, &dev, "-create-library", 1, &main_prg, on_link, NULL, &err);
    if (saved) {
        setenv("TMPDIR", saved, 1);
        free(saved);
    } else {
        unsetenv("TMPDIR");
    }
    CHECK(err);
    EXPECT(link_calls == 1 && link_seen == lib);
    CHECK(clGetProgramBuildInfo(lib, dev, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL));
    EXPECT(bt == CL_PROGRAM_BINARY_TYPE_LIBRARY);
    /* A library has no kernels to make. */
    EXPECT(clCreateKernel(lib, "experiment", &err) == NULL && err == CL_INVALID_PROGRAM_EXECUTABLE);
    CHECK(clReleaseProgram(lib));

    /* Serialized objects and libraries (the CTS's execute_after_serialize_reload_*): the
     * binary of a compiled object makes a compiled object again, ready to link; that of a
     * library, a library; the linked program's kernel gives the same results. */
    cl_program reloaded_sink = reload(ctx, dev, sink, CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT);
    cl_program reloaded_main = reload(ctx, dev, main_prg, CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT);
    cl_program lib2 = clLinkProgram(ctx, 1, &dev, "-create-library", 1, &reloaded_sink, NULL, NULL, &err);
    CHECK(err);
    CHECK(clGetProgramBuildInfo(lib2, dev, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL));
    EXPECT(bt == CL_PROGRAM_BINARY_TYPE_LIBRARY);
    cl_program reloaded_lib = reload(ctx, dev, lib2, CL_PROGRAM_BINARY_TYPE_LIBRARY);
    cl_program both[] = {reloaded_lib, reloaded_main};
    cl_program relinked = clLinkProgram(ctx, 1, &dev, "", 2, both, NULL, NULL, &err);
    CHECK(err);
    CHECK(clGetProgramBuildInfo(relinked, dev, CL_PROGRAM_BINARY_TYPE, sizeof bt, &bt, NULL));
    EXPECT(bt == CL_PROGRAM_BINARY_TYPE_EXECUTABLE);
    cl_kernel k2 = clCreateKernel(relinked, "experiment", &err);
    CHECK(err);
    CHECK(clSetKernelArg(k2, 0, sizeof out, &out));
    CHECK(clEnqueueNDRangeKernel(q, k2, 1, NULL, &g, NULL, 0, NULL, NULL));
    memset(got, 0, sizeof got);
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(got[i] == 2 * i + 40);
    CHECK(clReleaseKernel(k2));
    /* An executable's binary makes an executable (before the build it still needs). */
    cl_program reloaded_exe = reload(ctx, dev, relinked, CL_PROGRAM_BINARY_TYPE_EXECUTABLE);
    cl_program progs[] = {reloaded_sink, reloaded_main, lib2, reloaded_lib, relinked, reloaded_exe};
    for (size_t i = 0; i < sizeof progs / sizeof *progs; i++) CHECK(clReleaseProgram(progs[i]));
    printf("device %d: compile/link ok\n", index);

    CHECK(clReleaseMemObject(out));
    CHECK(clReleaseKernel(k));
    cl_program ps[] = {header, sink, main_prg, linked, broken};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) CHECK(clReleaseProgram(ps[i]));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
}

int main(void) {
    cl_device_id ds[16];
    cl_uint nd = weft_devices(weft_platform(), ds, 16);
    for (cl_uint i = 0; i < nd; i++) run_on(ds[i], (int)i);
    printf("all ok\n");
    return 0;
}
