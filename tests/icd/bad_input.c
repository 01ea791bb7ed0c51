/* Bad input, thrown at random through the ICD loader: random sequences of calls, each
 * with at most one fault chosen at random (a released handle, a handle of another kind,
 * NULL, an out-of-range size, offset or index, bad flags, a bad wait list, ...), each
 * checked for the exact CL_INVALID_* code the specification gives. Between faults, valid
 * calls create, retain, release and use objects, and results are checked, so a fault that
 * corrupted anything shows up. Usage: bad_input SEED STEPS. Prints "ok N checks". */
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static unsigned pick(unsigned n) { return (unsigned)(next() % n); }

static long checks;
static int step;
#define EXPECT_CODE(call, want)                                                                 \
    do {                                                                                        \
        cl_int got_ = (call);                                                                   \
        checks++;                                                                               \
        if (got_ != (want)) {                                                                   \
            fprintf(stderr, "FAIL step %d line %d: %s = %d, expected %s (%d)\n", step, __LINE__, \
                    #call, got_, #want, (int)(want));                                           \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

enum Kind { CTX, QUEUE, MEM, PROG, KERN, EVENT, NKINDS };
typedef struct {
    void *h;
    int refs; /* 0: released */
} Obj;
#define MAXOBJ 256
static Obj objs[NKINDS][MAXOBJ];
static int nobj[NKINDS];
static const cl_int invalid_code[NKINDS] = {CL_INVALID_CONTEXT, CL_INVALID_COMMAND_QUEUE, CL_INVALID_MEM_OBJECT,
                                            CL_INVALID_PROGRAM, CL_INVALID_KERNEL, CL_INVALID_EVENT};

static void add(enum Kind k, void *h) {
    if (nobj[k] < MAXOBJ) objs[k][nobj[k]++] = (Obj){h, 1};
}
static Obj *live(enum Kind k) {
    int n = 0, idx[MAXOBJ];
    for (int i = 0; i < nobj[k]; i++)
        if (objs[k][i].refs > 0) idx[n++] = i;
    return n ? &objs[k][idx[pick(n)]] : NULL;
}
static Obj *released(enum Kind k) {
    int n = 0, idx[MAXOBJ];
    for (int i = 0; i < nobj[k]; i++)
        if (objs[k][i].refs == 0) idx[n++] = i;
    return n ? &objs[k][idx[pick(n)]] : NULL;
}

/* A handle for an argument of kind k: valid (returned 1) or a fault (returned 0). */
static int handle(enum Kind k, void **h, int allow_fault) {
    Obj *o = live(k);
    if (!allow_fault || pick(4) != 0) {
        if (o) {
            *h = o->h;
            return 1;
        }
    }
    switch (pick(3)) {
    case 0: {
        Obj *r = released(k);
        if (r) {
            *h = r->h;
            return 0;
        }
    } /* fall through */
    case 1: {
        Obj *w = live((enum Kind)((k + 1 + pick(NKINDS - 1)) % NKINDS));
        if (w) {
            *h = w->h;
            return 0;
        }
    } /* fall through */
    default:
        *h = NULL;
        return 0;
    }
}

static const char *SRC = "__kernel void inc(__global int *v, int by) { v[get_global_id(0)] += by; }\n";
static cl_platform_id platform;
static cl_device_id device;
static int expected[1024]; /* model of buffer 0's contents */

int main(int argc, char **argv) {
    rng = argc > 1 ? strtoull(argv[1], NULL, 10) * 2654435761u + 1 : 1;
    int steps = argc > 2 ? atoi(argv[2]) : 2000;
    cl_uint np = 0;
    cl_platform_id ps[16];
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS) return 2;
    for (cl_uint i = 0; i < np && i < 16; i++) {
        char n[64];
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof n, n, NULL);
        if (!strcmp(n, "Weft")) platform = ps[i];
    }
    if (!platform) return 2;
    cl_device_id ds[8];
    cl_uint nd;
    EXPECT_CODE(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 8, ds, &nd), CL_SUCCESS);
    device = ds[pick(nd)];
    cl_int err;
    /* The reference objects: never released, used to check nothing got corrupted. */
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    EXPECT_CODE(err, CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err);
    EXPECT_CODE(err, CL_SUCCESS);
    cl_mem ref = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof expected, expected, &err);
    EXPECT_CODE(err, CL_SUCCESS);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    EXPECT_CODE(err, CL_SUCCESS);
    EXPECT_CODE(clBuildProgram(prog, 0, NULL, NULL, NULL, NULL), CL_SUCCESS);
    cl_kernel kref = clCreateKernel(prog, "inc", &err);
    EXPECT_CODE(err, CL_SUCCESS);
    add(CTX, ctx), add(QUEUE, q), add(MEM, ref), add(PROG, prog), add(KERN, kref);
    objs[CTX][0].refs = objs[QUEUE][0].refs = objs[MEM][0].refs = objs[PROG][0].refs = objs[KERN][0].refs = 1000000;

    for (step = 0; step < steps; step++) {
        void *h, *h2;
        int ok, ok2;
        switch (pick(16)) {
        case 0: { /* retain or release any kind */
            enum Kind k = (enum Kind)pick(NKINDS);
            ok = handle(k, &h, 1);
            int rel = pick(2);
            if (ok && k != EVENT && h == objs[k][0].h) rel = 0; /* keep the reference objects */
            cl_int want = ok ? CL_SUCCESS : invalid_code[k];
            cl_int got;
            switch (k) {
            case CTX: got = rel ? clReleaseContext(h) : clRetainContext(h); break;
            case QUEUE: got = rel ? clReleaseCommandQueue(h) : clRetainCommandQueue(h); break;
            case MEM: got = rel ? clReleaseMemObject(h) : clRetainMemObject(h); break;
            case PROG: got = rel ? clReleaseProgram(h) : clRetainProgram(h); break;
            case KERN: got = rel ? clReleaseKernel(h) : clRetainKernel(h); break;
            default: got = rel ? clReleaseEvent(h) : clRetainEvent(h); break;
            }
            EXPECT_CODE(got, want);
            if (ok)
                for (int i = 0; i < nobj[k]; i++)
                    if (objs[k][i].h == h) objs[k][i].refs += rel ? -1 : 1;
            break;
        }
        case 1: { /* create a buffer: good, or with one bad flag/size/host_ptr */
            ok = handle(CTX, &h, 1);
            int fault = ok ? (int)pick(5) : 0;
            cl_mem_flags flags = CL_MEM_READ_WRITE;
            size_t size = 64 + pick(4096);
            void *host = NULL;
            static char hostbuf[8192];
            cl_int want = ok ? CL_SUCCESS : CL_INVALID_CONTEXT;
            if (fault == 1) flags = CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY, want = CL_INVALID_VALUE;
            if (fault == 2) size = 0, want = CL_INVALID_BUFFER_SIZE;
            if (fault == 3) flags |= CL_MEM_USE_HOST_PTR, want = CL_INVALID_HOST_PTR;
            if (fault == 4) host = hostbuf, want = CL_INVALID_HOST_PTR;
            if (fault == 0 && ok && pick(2)) flags |= CL_MEM_COPY_HOST_PTR, host = hostbuf;
            cl_mem m = clCreateBuffer(h, flags, size, host, &err);
            EXPECT_CODE(err, want);
            if (want == CL_SUCCESS) {
                if (m == NULL) exit(3);
                add(MEM, m);
            } else if (m != NULL) {
                fprintf(stderr, "FAIL: an object with an error\n");
                exit(1);
            }
            break;
        }
        case 2: { /* read or write with one fault */
            ok = handle(QUEUE, &h, 1);
            ok2 = handle(MEM, &h2, 1);
            size_t msize = 0;
            if (ok2) clGetMemObjectInfo(h2, CL_MEM_SIZE, sizeof msize, &msize, NULL);
            int fault = pick(6);
            size_t off = 0, size = msize < 64 ? msize : 64;
            static int buf[1024];
            void *ptr = buf;
            cl_uint nw = 0;
            cl_event *wl = NULL, bad = NULL;
            cl_int want;
            if (!ok) want = CL_INVALID_COMMAND_QUEUE;
            else if (!ok2) want = CL_INVALID_MEM_OBJECT;
            else if (fault == 1) nw = 1, wl = NULL, want = CL_INVALID_EVENT_WAIT_LIST;
            else if (fault == 2) nw = 1, wl = &bad, want = CL_INVALID_EVENT_WAIT_LIST;
            else if (fault == 3) off = msize, want = CL_INVALID_VALUE;
            else if (fault == 4) ptr = NULL, want = CL_INVALID_VALUE;
            else if (fault == 5) size = msize + 1, want = CL_INVALID_VALUE;
            else want = CL_SUCCESS;
            if (ok && ok2) {
                cl_context qc, mc;
                clGetCommandQueueInfo(h, CL_QUEUE_CONTEXT, sizeof qc, &qc, NULL);
                clGetMemObjectInfo(h2, CL_MEM_CONTEXT, sizeof mc, &mc, NULL);
                if (qc != mc && (want == CL_SUCCESS || fault >= 3)) want = CL_INVALID_CONTEXT;
            }
            cl_event ev = NULL;
            cl_int got = pick(2) ? clEnqueueReadBuffer(h, h2, CL_TRUE, off, size, ptr, nw, wl, &ev)
                                 : clEnqueueWriteBuffer(h, h2, CL_FALSE, off, size, ptr, nw, wl, &ev);
            if (want == CL_SUCCESS && h2 == ref) want = got; /* reference writes are modelled elsewhere */
            EXPECT_CODE(got, want);
            if (got == CL_SUCCESS) add(EVENT, ev);
            if (got == CL_SUCCESS && h2 == ref) {
                clFinish(h);
                clEnqueueReadBuffer(q, ref, CL_TRUE, 0, sizeof expected, expected, 0, NULL, NULL);
            }
            break;
        }
        case 3: { /* info queries with bad sizes or params */
            enum Kind k = (enum Kind)pick(NKINDS);
            ok = handle(k, &h, 1);
            char out[512];
            size_t ret;
            int small = pick(3) == 0;
            cl_uint params[NKINDS] = {CL_CONTEXT_REFERENCE_COUNT, CL_QUEUE_REFERENCE_COUNT, CL_MEM_SIZE,
                                      CL_PROGRAM_NUM_DEVICES, CL_KERNEL_NUM_ARGS, CL_EVENT_COMMAND_EXECUTION_STATUS};
            int badparam = pick(4) == 0;
            cl_uint param = badparam ? 0x7777 : params[k];
            size_t size = small ? 1 : sizeof out;
            cl_int want = !ok ? invalid_code[k] : (badparam || small) ? CL_INVALID_VALUE : CL_SUCCESS;
            cl_int got;
            switch (k) {
            case CTX: got = clGetContextInfo(h, param, size, out, &ret); break;
            case QUEUE: got = clGetCommandQueueInfo(h, param, size, out, &ret); break;
            case MEM: got = clGetMemObjectInfo(h, param, size, out, &ret); break;
            case PROG: got = clGetProgramInfo(h, param, size, out, &ret); break;
            case KERN: got = clGetKernelInfo(h, param, size, out, &ret); break;
            default: got = clGetEventInfo(h, param, size, out, &ret); break;
            }
            EXPECT_CODE(got, want);
            break;
        }
        case 4: { /* kernel arguments */
            ok = handle(KERN, &h, 1);
            int fault = pick(5);
            cl_uint idx = 0;
            size_t size = sizeof(cl_mem);
            void *mem = ref;
            const void *val = &mem;
            cl_int want = CL_SUCCESS;
            if (!ok) want = CL_INVALID_KERNEL;
            else if (fault == 1) idx = 2 + pick(100), want = CL_INVALID_ARG_INDEX;

            else if (fault == 2) size = 3, want = CL_INVALID_ARG_SIZE;
            else if (fault == 3) {
                Obj *r = released(MEM);
                if (r) mem = r->h, want = CL_INVALID_MEM_OBJECT;
            } else if (fault == 4) {
                int by = 1;
                idx = 1, size = 2, val = &by, want = CL_INVALID_ARG_SIZE;
            }
            if (ok && want == CL_SUCCESS && mem == ref) {
                cl_context kc;
                EXPECT_CODE(clGetKernelInfo(h, CL_KERNEL_CONTEXT, sizeof kc, &kc, NULL), CL_SUCCESS);
                if (kc != ctx) want = CL_INVALID_MEM_OBJECT; /* a buffer of another context */
            }
            EXPECT_CODE(clSetKernelArg(h, idx, size, val), want);
            break;
        }
        case 5: { /* NDRange faults (no launch) */
            ok = handle(QUEUE, &h, 1);
            ok2 = handle(KERN, &h2, 1);
            int fault = 1 + pick(4);
            cl_uint dim = 1;
            size_t g[3] = {16, 1, 1}, l[3] = {16, 1, 1};
            size_t *gp = g, *lp = NULL;
            cl_int want;
            if (!ok) want = CL_INVALID_COMMAND_QUEUE;
            else if (!ok2) want = CL_INVALID_KERNEL;
            else if (fault == 1) dim = pick(2) ? 0 : 4, want = CL_INVALID_WORK_DIMENSION;
            else if (fault == 2) l[0] = 3, lp = l, want = CL_INVALID_WORK_GROUP_SIZE; /* (a NULL global size is valid since 2.1) */
            else if (fault == 3) l[0] = 0, lp = l, want = CL_INVALID_WORK_GROUP_SIZE; /* (a zero global size is valid since 2.1) */
            else l[0] = 5, lp = l, want = CL_INVALID_WORK_GROUP_SIZE;
            if (ok && ok2) {
                cl_context qc, kc;
                clGetCommandQueueInfo(h, CL_QUEUE_CONTEXT, sizeof qc, &qc, NULL);
                clGetKernelInfo(h2, CL_KERNEL_CONTEXT, sizeof kc, &kc, NULL);
                if (qc != kc) want = CL_INVALID_CONTEXT;
            }
            EXPECT_CODE(clEnqueueNDRangeKernel(h, h2, dim, NULL, gp, lp, 0, NULL, NULL), want);
            break;
        }
        case 6: { /* a valid launch on the reference buffer, modelled */
            int by = 1 + (int)pick(5);
            EXPECT_CODE(clSetKernelArg(kref, 0, sizeof ref, &ref), CL_SUCCESS);
            EXPECT_CODE(clSetKernelArg(kref, 1, sizeof by, &by), CL_SUCCESS);
            size_t g = 1024;
            cl_event ev;
            EXPECT_CODE(clEnqueueNDRangeKernel(q, kref, 1, NULL, &g, NULL, 0, NULL, &ev), CL_SUCCESS);
            for (int i = 0; i < 1024; i++) expected[i] += by;
            add(EVENT, ev);
            break;
        }
        case 7: { /* new context, queue, program, kernel (sometimes with a bad name or source) */
            cl_context c = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
            EXPECT_CODE(err, CL_SUCCESS);
            add(CTX, c);
            cl_command_queue qq = clCreateCommandQueue(c, device, pick(2) ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0, &err);
            EXPECT_CODE(err, CL_SUCCESS);
            add(QUEUE, qq);
            int broken = pick(4) == 0;
            const char *src = broken ? "__kernel void inc(__global int *v) { v[0] = undefined_thing; }" : SRC;
            cl_program p = clCreateProgramWithSource(c, 1, &src, NULL, &err);
            EXPECT_CODE(err, CL_SUCCESS);
            add(PROG, p);
            EXPECT_CODE(clBuildProgram(p, 0, NULL, NULL, NULL, NULL), broken ? CL_BUILD_PROGRAM_FAILURE : CL_SUCCESS);
            cl_kernel k = clCreateKernel(p, broken ? "inc" : pick(3) ? "inc" : "nope", &err);
            if (broken) EXPECT_CODE(err, CL_INVALID_PROGRAM_EXECUTABLE);
            else if (k == NULL) EXPECT_CODE(err, CL_INVALID_KERNEL_NAME);
            else add(KERN, k);
            if (broken) {
                size_t n = 0;
                EXPECT_CODE(clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n), CL_SUCCESS);
                if (n < 2) exit(4);
            }
            break;
        }
        case 8: { /* wait lists and waits */
            ok = handle(EVENT, &h, 1);
            cl_int status = CL_COMPLETE;
            if (ok) EXPECT_CODE(clGetEventInfo(h, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL), CL_SUCCESS);
            /* A user event set to an error (and what waited on it) fails the wait. */
            cl_int want = !ok ? CL_INVALID_EVENT : status < 0 ? CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST : CL_SUCCESS;
            cl_int got = clWaitForEvents(1, (cl_event *)&h);
            if (ok && status > 0 && got == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) want = got; /* failed meanwhile */
            EXPECT_CODE(got, want);
            EXPECT_CODE(clWaitForEvents(0, NULL), CL_INVALID_VALUE);
            break;
        }
        case 9: { /* finish / flush any queue */
            ok = handle(QUEUE, &h, 1);
            EXPECT_CODE(pick(2) ? clFinish(h) : clFlush(h), ok ? CL_SUCCESS : CL_INVALID_COMMAND_QUEUE);
            break;
        }
        case 10: { /* copies with overlap or range faults */
            ok = handle(MEM, &h, 0);
            size_t msize = 0;
            clGetMemObjectInfo(h, CL_MEM_SIZE, sizeof msize, &msize, NULL);
            int fault = pick(3);
            if (h == ref) break;
            cl_context mc;
            clGetMemObjectInfo(h, CL_MEM_CONTEXT, sizeof mc, &mc, NULL);
            cl_command_queue qq = NULL;
            for (int i = 0; i < nobj[QUEUE]; i++) {
                cl_context qc;
                if (objs[QUEUE][i].refs > 0 && clGetCommandQueueInfo(objs[QUEUE][i].h, CL_QUEUE_CONTEXT, sizeof qc, &qc, NULL) == CL_SUCCESS && qc == mc)
                    qq = objs[QUEUE][i].h;
            }
            if (!qq) break;
            if (fault == 0) EXPECT_CODE(clEnqueueCopyBuffer(qq, h, h, 0, 8, 16, 0, NULL, NULL), CL_MEM_COPY_OVERLAP);
            if (fault == 1) EXPECT_CODE(clEnqueueCopyBuffer(qq, h, h, 0, msize - 8, 16, 0, NULL, NULL), CL_INVALID_VALUE);
            if (fault == 2) {
                int pat = 0;
                EXPECT_CODE(clEnqueueFillBuffer(qq, h, &pat, 3, 0, 12, 0, NULL, NULL), CL_INVALID_VALUE);
            }
            break;
        }
        case 11: { /* images and samplers: bad contexts, sizes and modes */
            ok = handle(CTX, &h, 1);
            cl_image_format f = {CL_RGBA, CL_FLOAT};
            int zero = pick(2);
            cl_mem im = clCreateImage2D(h, CL_MEM_READ_WRITE, &f, zero ? 0 : 4, 4, 0, NULL, &err);
            if (!ok || zero) {
                if (im != NULL) exit(5);
                EXPECT_CODE(err, ok ? CL_INVALID_IMAGE_SIZE : CL_INVALID_CONTEXT);
            } else {
                EXPECT_CODE(err, CL_SUCCESS);
                EXPECT_CODE(clReleaseMemObject(im), CL_SUCCESS);
            }
            cl_sampler s = clCreateSampler(h, CL_FALSE, CL_ADDRESS_REPEAT, CL_FILTER_NEAREST, &err);
            if (s != NULL) exit(5);
            EXPECT_CODE(err, ok ? CL_INVALID_VALUE : CL_INVALID_CONTEXT);
            break;
        }
        case 12: { /* user events: set twice, set to bad status */
            ok = handle(CTX, &h, 1);
            cl_event u = clCreateUserEvent(h, &err);
            EXPECT_CODE(err, ok ? CL_SUCCESS : CL_INVALID_CONTEXT);
            if (!ok) break;
            EXPECT_CODE(clSetUserEventStatus(u, 5), CL_INVALID_VALUE);
            EXPECT_CODE(clSetUserEventStatus(u, pick(2) ? CL_COMPLETE : -1), CL_SUCCESS);
            EXPECT_CODE(clSetUserEventStatus(u, CL_COMPLETE), CL_INVALID_OPERATION);
            add(EVENT, u);
            break;
        }
        case 13: { /* map/unmap with a wrong pointer */
            cl_int e2;
            void *p = clEnqueueMapBuffer(q, ref, CL_TRUE, CL_MAP_READ, 0, 64, 0, NULL, NULL, &e2);
            EXPECT_CODE(e2, CL_SUCCESS);
            EXPECT_CODE(clEnqueueUnmapMemObject(q, ref, (char *)p + 1, 0, NULL, NULL), CL_INVALID_VALUE);
            EXPECT_CODE(clEnqueueUnmapMemObject(q, ref, p, 0, NULL, NULL), CL_SUCCESS);
            p = clEnqueueMapBuffer(q, ref, CL_TRUE, 0x80, 0, 64, 0, NULL, NULL, &e2);
            if (p != NULL) exit(6);
            EXPECT_CODE(e2, CL_INVALID_VALUE);
            break;
        }
        case 14: { /* devices and contexts */
            EXPECT_CODE(clGetDeviceIDs(platform, 0, 1, ds, NULL), CL_INVALID_DEVICE_TYPE);
            EXPECT_CODE(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, ds, NULL), CL_INVALID_VALUE);
            cl_context_properties bad[] = {0x7777, 1, 0};
            cl_context c = clCreateContext(bad, 1, &device, NULL, NULL, &err);
            if (c != NULL) exit(7);
            EXPECT_CODE(err, CL_INVALID_PROPERTY);
            ok = handle(QUEUE, &h, 0); /* a queue is not a device */
            c = clCreateContext(NULL, 1, (cl_device_id *)&h, NULL, NULL, &err);
            if (c != NULL) exit(7);
            EXPECT_CODE(err, CL_INVALID_DEVICE);
            c = clCreateContext(NULL, 0, NULL, NULL, NULL, &err);
            EXPECT_CODE(err, CL_INVALID_VALUE);
            break;
        }
        default: { /* check the reference buffer against the model */
            int got[1024];
            EXPECT_CODE(clEnqueueReadBuffer(q, ref, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL), CL_SUCCESS);
            for (int i = 0; i < 1024; i++)
                if (got[i] != expected[i]) {
                    fprintf(stderr, "FAIL step %d: reference buffer [%d] = %d, expected %d\n", step, i, got[i], expected[i]);
                    exit(1);
                }
            checks++;
            break;
        }
        }
    }
    EXPECT_CODE(clFinish(q), CL_SUCCESS);
    printf("ok %ld checks\n", checks);
    return 0;
}
