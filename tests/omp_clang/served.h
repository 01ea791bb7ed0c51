/* Shared by the clang-built test programs: CHECK, and served_by_weft(), which fails unless
 * the program's __kmpc_* calls go to Weft (libweft.so) rather than LLVM's libomp. */
/* Each program defines _GNU_SOURCE before its first include (dlvsym, dladdr). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../omp/check.h"

/* The program's own reference: the compiler's calls import __kmpc_fork_call@VERSION. */
#ifdef __cplusplus
extern "C"
#endif
void __kmpc_fork_call(void *loc, int argc, void *microtask, ...);

static void served_by_weft(void) {
    /* The definition the program's __kmpc_fork_call reference is bound to lives in the
     * object that defines Weft's C API. */
    Dl_info fork, weft;
    void *w = dlsym(RTLD_DEFAULT, "weft_init");
    CHECK(w && dladdr((void *)&__kmpc_fork_call, &fork) && dladdr(w, &weft));
    CHECK(fork.dli_fbase == weft.dli_fbase);
    /* As libomp.so.5's stand-in, LLVM's libomp is not even loaded. */
    if (getenv("LD_PRELOAD")) return;
    FILE *m = fopen("/proc/self/maps", "r");
    char line[4096];
    CHECK(m);
    while (fgets(line, sizeof line, m)) CHECK(!strstr(line, "libomp"));
    fclose(m);
}
