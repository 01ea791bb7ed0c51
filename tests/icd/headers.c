/* clCompileProgram's embedded headers on a machine other users share, on each Weft device:
 * an include name that would leave the header directory (empty, absolute, with a `..`
 * component) is refused with CL_INVALID_VALUE and leaves the program untouched; a header
 * in a subdirectory ("inc/sub/deep.h") works, both in the vendor's compile and in a link
 * built from sources, which writes the headers out under TMPDIR; that directory is
 * private and randomly named, so links planted under the names an older Weft used
 * (weft-cl-headers-<pid>-<n>) redirect nothing, and it is gone after the build, whether
 * the build succeeded or failed. Prints "device N: headers ok" per device, then "all ok". */
#define _DEFAULT_SOURCE /* mkdtemp, setenv, symlink */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* Traps planted per run: more than the headers directories one run of this program makes. */
enum { TRAPS = 64 };

static const char *DEEP = "inline int deep(void) { return 40; }\n";
static const char *DOTS = "inline int dots(void) { return 2; }\n";
static const char *MAIN =
    "#include \"inc/sub/deep.h\"\n"
    "#include \"two..dots.h\"\n"
    "static int helper(void) { return deep() + dots(); }\n"
    "__kernel void answer(__global int *out) { out[get_global_id(0)] = helper(); }\n";
/* Its own static `helper` of another type: pasted together with MAIN, the build fails. */
static const char *CLASH = "static int helper(int x) { return x; }\nint clash(int x) { return helper(x); }\n";

static cl_program from_source(cl_context ctx, const char *src) {
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    return p;
}

/* Entries of directory `path`, without "." and "..". */
static int entries(const char *path) {
    DIR *d = opendir(path);
    EXPECT(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    }
    closedir(d);
    return n;
}

static void run_on(cl_device_id dev, int index, const char *tmp, const char *victim) {
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_program deep = from_source(ctx, DEEP);
    cl_program dots = from_source(ctx, DOTS);
    cl_program main_prg = from_source(ctx, MAIN);

    /* Names that leave the directory they would be written to. */
    const char *bad[] = {"../escape.h", "/tmp/escape.h", "", "inc/../../escape.h", "inc/", "..", "."};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *names[] = {"inc/sub/deep.h", bad[i]};
        cl_program hs[] = {deep, dots};
        cl_int got = clCompileProgram(main_prg, 1, &dev, "", 2, hs, names, NULL, NULL);
        if (got != CL_INVALID_VALUE) {
            fprintf(stderr, "FAIL header name \"%s\": %d, expected CL_INVALID_VALUE\n", bad[i], got);
            exit(1);
        }
        cl_build_status bs;
        CHECK(clGetProgramBuildInfo(main_prg, dev, CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs, NULL));
        EXPECT(bs == CL_BUILD_NONE);
    }

    /* A header in a subdirectory, and a name with two dots that is no `..`. */
    const char *names[] = {"inc/sub/deep.h", "two..dots.h"};
    cl_program hs[] = {deep, dots};
    CHECK(clCompileProgram(main_prg, 1, &dev, "", 2, hs, names, NULL, NULL));

    /* A library is linked from the sources, with the headers written under TMPDIR. */
    cl_program lib = clLinkProgram(ctx, 1, &dev, "-create-library", 1, &main_prg, NULL, NULL, &err);
    CHECK(err);
    EXPECT(lib != NULL);
    cl_build_status bs;
    CHECK(clGetProgramBuildInfo(lib, dev, CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs, NULL));
    EXPECT(bs == CL_BUILD_SUCCESS);
    EXPECT(entries(tmp) == TRAPS); /* the headers directory is gone */
    EXPECT(entries(victim) == 0);  /* and nothing went through a planted link */

    /* A build from sources that fails still removes the directory. */
    cl_program clash = from_source(ctx, CLASH);
    CHECK(clCompileProgram(clash, 1, &dev, "", 0, NULL, NULL, NULL, NULL));
    cl_program pair[] = {clash, main_prg};
    cl_program none = clLinkProgram(ctx, 1, &dev, "-create-library", 2, pair, NULL, NULL, &err);
    EXPECT(none == NULL && err == CL_LINK_PROGRAM_FAILURE);
    EXPECT(entries(tmp) == TRAPS);
    EXPECT(entries(victim) == 0);
    printf("device %d: headers ok\n", index);

    cl_program ps[] = {deep, dots, main_prg, lib, clash};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) CHECK(clReleaseProgram(ps[i]));
    CHECK(clReleaseContext(ctx));
}

int main(void) {
    /* A TMPDIR of our own, with a link to `victim` under each name an older Weft used. */
    const char *base = getenv("TMPDIR");
    char tmp[4096], victim[4096];
    snprintf(tmp, sizeof tmp, "%s/weft-headers-test-XXXXXX", base ? base : "/tmp");
    snprintf(victim, sizeof victim, "%s/weft-headers-victim-XXXXXX", base ? base : "/tmp");
    EXPECT(mkdtemp(tmp) != NULL && mkdtemp(victim) != NULL);
    for (int n = 0; n < TRAPS; n++) {
        char trap[4200];
        snprintf(trap, sizeof trap, "%s/weft-cl-headers-%ld-%d", tmp, (long)getpid(), n);
        EXPECT(symlink(victim, trap) == 0);
    }
    EXPECT(setenv("TMPDIR", tmp, 1) == 0);

    cl_device_id ds[16];
    cl_uint nd = weft_devices(weft_platform(), ds, 16);
    for (cl_uint i = 0; i < nd; i++) run_on(ds[i], (int)i, tmp, victim);

    for (int n = 0; n < TRAPS; n++) {
        char trap[4200];
        snprintf(trap, sizeof trap, "%s/weft-cl-headers-%ld-%d", tmp, (long)getpid(), n);
        unlink(trap);
    }
    rmdir(tmp);
    rmdir(victim);
    printf("all ok\n");
    return 0;
}
