/* Images and samplers through the ICD loader, on every Weft device: supported formats,
 * clCreateImage (1-D array, 2-D, 3-D) and the 1.1 forms, clGetImageInfo (every query
 * pyopencl reads, with PoCL's answers), write/read, copy, fill, image<->buffer copies,
 * map, a kernel reading an image through a sampler, a kernel writing an image read on
 * another device, and bad inputs (each must return its CL_INVALID_* code). Prints one
 * line per device; exits non-zero on the first failure. Run by tests/icd.rs. */
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char *SRC =
    "__kernel void sample(__global float *out, __read_only image2d_t img, sampler_t s, int w) {\n"
    "  int x = get_global_id(0), y = get_global_id(1);\n"
    "  out[y * w + x] = read_imagef(img, s, (int2)(x, y)).x;\n"
    "}\n"
    "__kernel void paint(__write_only image2d_t img) {\n"
    "  int x = get_global_id(0), y = get_global_id(1);\n"
    "  write_imagef(img, (int2)(x, y), (float4)(x + 100 * y, 0, 0, 1));\n"
    "}\n"
    "__kernel void add_one(__global float *v) { v[get_global_id(0)] += 1.0f; }\n"
    "__kernel void sample4(__global float4 *out, __read_only image2d_t img, sampler_t s, int w) {\n"
    "  int x = get_global_id(0), y = get_global_id(1);\n"
    "  out[y * w + x] = read_imagef(img, s, (int2)(x, y));\n"
    "}\n"
    "__kernel void paint2(__write_only image2d_t img) {\n"
    "  int x = get_global_id(0), y = get_global_id(1);\n"
    "  write_imagef(img, (int2)(x, y), (float4)(x, y, 5, 5));\n"
    "}\n";

enum { W = 16, H = 8 };

static void run_on(cl_device_id dev, cl_device_id other, int index) {
    cl_int err;
    cl_bool images;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_IMAGE_SUPPORT, sizeof images, &images, NULL));
    EXPECT(images == CL_TRUE);
    size_t max2d;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_IMAGE2D_MAX_WIDTH, sizeof max2d, &max2d, NULL));
    EXPECT(max2d >= 2048);
    cl_device_id devs[2] = {dev, other};
    cl_uint ndev = other ? 2 : 1;
    cl_context ctx = clCreateContext(NULL, ndev, devs, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);

    /* Formats. */
    cl_uint nfmt = 0;
    CHECK(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &nfmt));
    EXPECT(nfmt > 0);
    cl_image_format *fmts = malloc(nfmt * sizeof *fmts);
    CHECK(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, nfmt, fmts, NULL));
    int has_rf = 0;
    for (cl_uint i = 0; i < nfmt; i++)
        has_rf |= fmts[i].image_channel_order == CL_R && fmts[i].image_channel_data_type == CL_FLOAT;
    EXPECT(has_rf);
    free(fmts);

    /* A 2-D float image: info, write, read back a sub-rectangle. */
    cl_image_format rf = {CL_R, CL_FLOAT};
    cl_image_desc d2 = {0};
    d2.image_type = CL_MEM_OBJECT_IMAGE2D;
    d2.image_width = W;
    d2.image_height = H;
    float host[W * H], back[W * H];
    for (int i = 0; i < W * H; i++) host[i] = (float)i;
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &rf, &d2, host, &err);
    CHECK(err);
    size_t v;
    CHECK(clGetImageInfo(img, CL_IMAGE_WIDTH, sizeof v, &v, NULL));
    EXPECT(v == W);
    CHECK(clGetImageInfo(img, CL_IMAGE_ELEMENT_SIZE, sizeof v, &v, NULL));
    EXPECT(v == 4);
    CHECK(clGetImageInfo(img, CL_IMAGE_ROW_PITCH, sizeof v, &v, NULL));
    EXPECT(v == W * 4);
    cl_image_format got;
    CHECK(clGetImageInfo(img, CL_IMAGE_FORMAT, sizeof got, &got, NULL));
    EXPECT(got.image_channel_order == CL_R && got.image_channel_data_type == CL_FLOAT);
    cl_mem_object_type mt;
    CHECK(clGetMemObjectInfo(img, CL_MEM_TYPE, sizeof mt, &mt, NULL));
    EXPECT(mt == CL_MEM_OBJECT_IMAGE2D);
    /* The rest of what pyopencl's test_get_info reads of a 2-D image, with PoCL's answers
     * (sizes included: pyopencl decodes each by its type). */
    size_t got_size;
    CHECK(clGetImageInfo(img, CL_IMAGE_HEIGHT, sizeof v, &v, &got_size));
    EXPECT(v == H && got_size == sizeof v);
    CHECK(clGetImageInfo(img, CL_IMAGE_DEPTH, sizeof v, &v, NULL));
    EXPECT(v == 0);
    CHECK(clGetImageInfo(img, CL_IMAGE_ARRAY_SIZE, sizeof v, &v, NULL));
    EXPECT(v == 0);
    CHECK(clGetImageInfo(img, CL_IMAGE_SLICE_PITCH, sizeof v, &v, NULL));
    EXPECT(v == 0);
    cl_mem none = img;
    CHECK(clGetImageInfo(img, CL_IMAGE_BUFFER, sizeof none, &none, &got_size));
    EXPECT(none == NULL && got_size == sizeof none);
    cl_uint levels = 7;
    CHECK(clGetImageInfo(img, CL_IMAGE_NUM_MIP_LEVELS, sizeof levels, &levels, &got_size));
    EXPECT(levels == 0 && got_size == sizeof levels);
    levels = 7;
    CHECK(clGetImageInfo(img, CL_IMAGE_NUM_SAMPLES, sizeof levels, &levels, &got_size));
    EXPECT(levels == 0 && got_size == sizeof levels);
    none = img;
    CHECK(clGetMemObjectInfo(img, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof none, &none, &got_size));
    EXPECT(none == NULL && got_size == sizeof none);
    CHECK(clGetMemObjectInfo(img, CL_MEM_OFFSET, sizeof v, &v, NULL));
    EXPECT(v == 0);
    CHECK(clGetMemObjectInfo(img, CL_MEM_SIZE, sizeof v, &v, NULL));
    EXPECT(v == W * H * 4);
    cl_bool svm = CL_TRUE;
    CHECK(clGetMemObjectInfo(img, 0x1109 /* CL_MEM_USES_SVM_POINTER */, sizeof svm, &svm, &got_size));
    EXPECT(svm == CL_FALSE && got_size == sizeof svm);
    size_t origin[3] = {2, 1, 0}, region[3] = {4, 3, 1};
    float part[12];
    CHECK(clEnqueueReadImage(q, img, CL_TRUE, origin, region, 0, 0, part, 0, NULL, NULL));
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++) EXPECT(part[y * 4 + x] == (float)((y + 1) * W + x + 2));

    /* A kernel samples it (on this device), into a buffer. */
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 0, NULL, NULL, NULL, NULL));
    cl_kernel ks = clCreateKernel(prog, "sample", &err);
    CHECK(err);
    cl_sampler s = clCreateSampler(ctx, CL_FALSE, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST, &err);
    CHECK(err);
    cl_addressing_mode am;
    CHECK(clGetSamplerInfo(s, CL_SAMPLER_ADDRESSING_MODE, sizeof am, &am, NULL));
    EXPECT(am == CL_ADDRESS_CLAMP_TO_EDGE);
    cl_mem out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof back, NULL, &err);
    CHECK(err);
    int w = W;
    CHECK(clSetKernelArg(ks, 0, sizeof out, &out));
    CHECK(clSetKernelArg(ks, 1, sizeof img, &img));
    CHECK(clSetKernelArg(ks, 2, sizeof s, &s));
    CHECK(clSetKernelArg(ks, 3, sizeof w, &w));
    size_t gws[2] = {W, H};
    CHECK(clEnqueueNDRangeKernel(q, ks, 2, NULL, gws, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL));
    for (int i = 0; i < W * H; i++) EXPECT(back[i] == host[i]);

    /* A kernel paints a second image (on the other device when there is one); the first
     * device samples it. */
    cl_mem img2 = clCreateImage2D(ctx, CL_MEM_READ_WRITE, &rf, W, H, 0, NULL, &err);
    CHECK(err);
    cl_command_queue q2 = other ? clCreateCommandQueue(ctx, other, 0, &err) : q;
    CHECK(err);
    cl_kernel kp = clCreateKernel(prog, "paint", &err);
    CHECK(err);
    CHECK(clSetKernelArg(kp, 0, sizeof img2, &img2));
    cl_event painted;
    CHECK(clEnqueueNDRangeKernel(q2, kp, 2, NULL, gws, NULL, 0, NULL, &painted));
    CHECK(clSetKernelArg(ks, 1, sizeof img2, &img2));
    CHECK(clEnqueueNDRangeKernel(q, ks, 2, NULL, gws, NULL, 1, &painted, NULL));
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) EXPECT(back[y * W + x] == (float)(x + 100 * y));
    CHECK(clReleaseEvent(painted));

    /* Copy, fill, image <-> buffer, map. */
    CHECK(clEnqueueCopyImage(q, img, img2, origin, origin, region, 0, NULL, NULL));
    float red[4] = {7.5f, 0, 0, 0};
    size_t zero[3] = {0, 0, 0}, one_row[3] = {W, 1, 1};
    CHECK(clEnqueueFillImage(q, img2, red, zero, one_row, 0, NULL, NULL));
    CHECK(clEnqueueCopyImageToBuffer(q, img2, out, zero, (size_t[3]){W, H, 1}, 0, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float want = y == 0 ? 7.5f : (y >= 1 && y < 4 && x >= 2 && x < 6) ? host[y * W + x] : (float)(x + 100 * y);
            EXPECT(back[y * W + x] == want);
        }
    cl_kernel k1 = clCreateKernel(prog, "add_one", &err);
    CHECK(err);
    CHECK(clSetKernelArg(k1, 0, sizeof out, &out));
    size_t n = W * H;
    CHECK(clEnqueueNDRangeKernel(q2, k1, 1, NULL, &n, NULL, 0, NULL, NULL));
    CHECK(clFinish(q2));
    CHECK(clEnqueueCopyBufferToImage(q, out, img, 0, zero, (size_t[3]){W, H, 1}, 0, NULL, NULL));
    size_t row_pitch = 0;
    float *m = clEnqueueMapImage(q, img, CL_TRUE, CL_MAP_READ, zero, (size_t[3]){W, H, 1}, &row_pitch, NULL, 0, NULL, NULL, &err);
    CHECK(err);
    EXPECT(row_pitch >= W * sizeof(float));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) EXPECT(m[y * (row_pitch / 4) + x] == back[y * W + x] + 1.0f);
    CHECK(clEnqueueUnmapMemObject(q, img, m, 0, NULL, NULL));

    /* 3-D and 1-D array images: write and read back. */
    cl_image_format rgba8 = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_mem img3 = clCreateImage3D(ctx, CL_MEM_READ_WRITE, &rgba8, 4, 3, 2, 0, 0, NULL, &err);
    CHECK(err);
    unsigned char b3[4 * 3 * 2 * 4], r3[sizeof b3];
    for (size_t i = 0; i < sizeof b3; i++) b3[i] = (unsigned char)(i * 7);
    CHECK(clEnqueueWriteImage(q, img3, CL_FALSE, zero, (size_t[3]){4, 3, 2}, 0, 0, b3, 0, NULL, NULL));
    CHECK(clEnqueueReadImage(q, img3, CL_TRUE, zero, (size_t[3]){4, 3, 2}, 0, 0, r3, 0, NULL, NULL));
    EXPECT(memcmp(b3, r3, sizeof b3) == 0);
    cl_image_desc d1a = {0};
    d1a.image_type = CL_MEM_OBJECT_IMAGE1D_ARRAY;
    d1a.image_width = 8;
    d1a.image_array_size = 3;
    cl_mem img1a = clCreateImage(ctx, CL_MEM_READ_WRITE, &rf, &d1a, NULL, &err);
    CHECK(err);
    CHECK(clGetImageInfo(img1a, CL_IMAGE_ARRAY_SIZE, sizeof v, &v, NULL));
    EXPECT(v == 3);
    CHECK(clEnqueueWriteImage(q, img1a, CL_TRUE, zero, (size_t[3]){8, 3, 1}, 0, 0, host, 0, NULL, NULL));
    CHECK(clEnqueueReadImage(q, img1a, CL_TRUE, zero, (size_t[3]){8, 3, 1}, 0, 0, back, 0, NULL, NULL));
    EXPECT(memcmp(host, back, 24 * sizeof(float)) == 0);

    /* A two-channel image (held as four channels where the devices lack the format):
     * sampled as (r, g, 0, 1); painted by a kernel on the other device, read on the host. */
    cl_image_format rg = {CL_RG, CL_FLOAT};
    float rgh[W * H * 2], rgb[W * H * 2], out4[W * H * 4];
    for (int i = 0; i < W * H * 2; i++) rgh[i] = (float)i * 0.5f;
    cl_mem imrg = clCreateImage(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &rg, &d2, rgh, &err);
    CHECK(err);
    cl_mem out4b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof out4, NULL, &err);
    CHECK(err);
    cl_kernel k4 = clCreateKernel(prog, "sample4", &err);
    CHECK(err);
    CHECK(clSetKernelArg(k4, 0, sizeof out4b, &out4b));
    CHECK(clSetKernelArg(k4, 1, sizeof imrg, &imrg));
    CHECK(clSetKernelArg(k4, 2, sizeof s, &s));
    CHECK(clSetKernelArg(k4, 3, sizeof w, &w));
    CHECK(clEnqueueNDRangeKernel(q, k4, 2, NULL, gws, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, out4b, CL_TRUE, 0, sizeof out4, out4, 0, NULL, NULL));
    for (int i = 0; i < W * H; i++)
        EXPECT(out4[4 * i] == rgh[2 * i] && out4[4 * i + 1] == rgh[2 * i + 1] && out4[4 * i + 2] == 0.0f && out4[4 * i + 3] == 1.0f);
    cl_kernel k2 = clCreateKernel(prog, "paint2", &err);
    CHECK(err);
    CHECK(clSetKernelArg(k2, 0, sizeof imrg, &imrg));
    CHECK(clEnqueueNDRangeKernel(q2, k2, 2, NULL, gws, NULL, 0, NULL, NULL));
    CHECK(clFinish(q2));
    CHECK(clEnqueueReadImage(q, imrg, CL_TRUE, zero, (size_t[3]){W, H, 1}, 0, 0, rgb, 0, NULL, NULL));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) EXPECT(rgb[2 * (y * W + x)] == (float)x && rgb[2 * (y * W + x) + 1] == (float)y);
    clReleaseKernel(k2);
    clReleaseKernel(k4);
    clReleaseMemObject(out4b);
    clReleaseMemObject(imrg);

    /* Bad inputs. */
    EXPECT(clCreateImage(ctx, CL_MEM_READ_WRITE, NULL, &d2, NULL, &err) == NULL);
    EXPECT(err == CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    cl_image_format bogus = {0x1234, CL_FLOAT};
    EXPECT(clCreateImage(ctx, CL_MEM_READ_WRITE, &bogus, &d2, NULL, &err) == NULL);
    EXPECT(err == CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    EXPECT(clCreateImage(ctx, CL_MEM_READ_WRITE, &rf, NULL, NULL, &err) == NULL);
    EXPECT(err == CL_INVALID_IMAGE_DESCRIPTOR);
    cl_image_desc bad = d2;
    bad.image_width = 0;
    EXPECT(clCreateImage(ctx, CL_MEM_READ_WRITE, &rf, &bad, NULL, &err) == NULL);
    EXPECT(err == CL_INVALID_IMAGE_DESCRIPTOR);
    bad = d2;
    bad.image_width = max2d + 1;
    EXPECT(clCreateImage(ctx, CL_MEM_READ_WRITE, &rf, &bad, NULL, &err) == NULL);
    EXPECT(err == CL_INVALID_IMAGE_SIZE);
    bad = d2;
    bad.image_row_pitch = 4;
    EXPECT(clCreateImage(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &rf, &bad, host, &err) == NULL);
    EXPECT(err == CL_INVALID_IMAGE_DESCRIPTOR);
    EXPECT(clCreateImage(ctx, CL_MEM_READ_WRITE, &rf, &d2, host, &err) == NULL);
    EXPECT(err == CL_INVALID_HOST_PTR);
    EXPECT_CODE(CL_INVALID_MEM_OBJECT, clEnqueueReadImage(q, out, CL_TRUE, zero, region, 0, 0, part, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_MEM_OBJECT, clEnqueueReadBuffer(q, img, CL_TRUE, 0, 4, part, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_MEM_OBJECT, clGetImageInfo(out, CL_IMAGE_WIDTH, sizeof v, &v, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clEnqueueReadImage(q, img, CL_TRUE, (size_t[3]){W - 1, 0, 0}, region, 0, 0, part, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clEnqueueReadImage(q, img, CL_TRUE, zero, (size_t[3]){1, 1, 2}, 0, 0, part, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clEnqueueReadImage(q, img, CL_TRUE, NULL, region, 0, 0, part, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clEnqueueFillImage(q, img, NULL, zero, region, 0, NULL, NULL));
    EXPECT_CODE(CL_IMAGE_FORMAT_MISMATCH, clEnqueueCopyImage(q, img, img3, zero, zero, (size_t[3]){1, 1, 1}, 0, NULL, NULL));
    EXPECT_CODE(CL_MEM_COPY_OVERLAP, clEnqueueCopyImage(q, img, img, zero, (size_t[3]){1, 1, 0}, region, 0, NULL, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clEnqueueCopyImageToBuffer(q, img, out, zero, (size_t[3]){W, H, 1}, 4, 0, NULL, NULL));
    EXPECT(clEnqueueMapImage(q, img, CL_TRUE, CL_MAP_READ, zero, region, NULL, NULL, 0, NULL, NULL, &err) == NULL);
    EXPECT(err == CL_INVALID_VALUE);
    EXPECT(clCreateSampler(ctx, CL_FALSE, CL_ADDRESS_REPEAT, CL_FILTER_NEAREST, &err) == NULL);
    EXPECT(err == CL_INVALID_VALUE);
    EXPECT(clCreateSampler(ctx, CL_TRUE, CL_ADDRESS_CLAMP, 0x9999, &err) == NULL);
    EXPECT(err == CL_INVALID_VALUE);
    EXPECT_CODE(CL_INVALID_SAMPLER, clGetSamplerInfo((cl_sampler)out, CL_SAMPLER_FILTER_MODE, sizeof am, &am, NULL));
    EXPECT_CODE(CL_INVALID_SAMPLER, clRetainSampler(NULL));
    EXPECT_CODE(CL_INVALID_SAMPLER, clSetKernelArg(ks, 2, sizeof out, &out));
    EXPECT_CODE(CL_INVALID_ARG_SIZE, clSetKernelArg(ks, 2, 4, &s));
    EXPECT_CODE(CL_INVALID_MEM_OBJECT, clSetKernelArg(ks, 1, sizeof out, &out));
    EXPECT_CODE(CL_INVALID_MEM_OBJECT, clSetKernelArg(ks, 0, sizeof img, &img));
    EXPECT_CODE(CL_INVALID_MEM_OBJECT, clGetImageInfo(NULL, CL_IMAGE_WIDTH, sizeof v, &v, NULL));
    EXPECT_CODE(CL_INVALID_VALUE, clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, 0x42, 0, NULL, &nfmt));
    EXPECT_CODE(CL_INVALID_CONTEXT, clGetSupportedImageFormats(NULL, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &nfmt));

    clReleaseKernel(k1);
    clReleaseKernel(kp);
    clReleaseKernel(ks);
    clReleaseProgram(prog);
    clReleaseSampler(s);
    clReleaseMemObject(img1a);
    clReleaseMemObject(img3);
    clReleaseMemObject(img2);
    clReleaseMemObject(img);
    clReleaseMemObject(out);
    if (q2 != q) clReleaseCommandQueue(q2);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    printf("device %d: images ok\n", index);
}

/* 1-D image buffers: a view of a buffer's pixels. A kernel reads the image while the
 * buffer holds the data written through it; clEnqueueWriteImage writes it and the buffer
 * shows it; clEnqueueReadImage and CL_IMAGE_BUFFER; an image over a WRITE_ONLY buffer
 * cannot be READ_WRITE. (No kernel writes one: PoCL 3.1 crashes on write_imageui to a
 * 1-D image buffer, with or without Weft.) */
static const char *BUF_SRC =
    "__kernel void twice(__global uint *out, __read_only image1d_buffer_t img) {\n"
    "  int x = get_global_id(0); out[x] = 2 * read_imageui(img, x).x;\n"
    "}\n"
    ;

static void image_buffers(cl_device_id dev, int index) {
    enum { N = 256 };
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    cl_uint data[N + 16];
    for (int i = 0; i < N + 16; i++) data[i] = (cl_uint)i;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof data, data, &err);
    CHECK(err);
    cl_image_format fmt = {CL_R, CL_UNSIGNED_INT32};
    cl_image_desc desc = {0};
    desc.image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER;
    desc.image_width = N;
    desc.buffer = buf;
    cl_mem img = clCreateImage(ctx, 0, &fmt, &desc, NULL, &err);
    CHECK(err);
    cl_mem got_buf = NULL;
    CHECK(clGetImageInfo(img, CL_IMAGE_BUFFER, sizeof got_buf, &got_buf, NULL));
    EXPECT(got_buf == buf);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &BUF_SRC, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, &dev, NULL, NULL, NULL));
    cl_kernel twice = clCreateKernel(prog, "twice", &err);
    CHECK(err);
    cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, N * sizeof(cl_uint), NULL, &err);
    CHECK(err);
    size_t g = N;
    /* Written through the buffer, read through the image. */
    cl_uint v = 1000;
    CHECK(clEnqueueWriteBuffer(q, buf, CL_FALSE, 3 * sizeof v, sizeof v, &v, 0, NULL, NULL));
    CHECK(clSetKernelArg(twice, 0, sizeof out, &out));
    CHECK(clSetKernelArg(twice, 1, sizeof img, &img));
    CHECK(clEnqueueNDRangeKernel(q, twice, 1, NULL, &g, NULL, 0, NULL, NULL));
    cl_uint res[N];
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof res, res, 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(res[i] == 2 * (i == 3 ? 1000u : (cl_uint)i));
    /* Written through the image, read through the buffer and the image; the bytes past
     * the image keep theirs. */
    cl_uint marks[N];
    for (int i = 0; i < N; i++) marks[i] = (cl_uint)i + 7;
    size_t zero[3] = {0, 0, 0}, all[3] = {N, 1, 1};
    CHECK(clEnqueueWriteImage(q, img, CL_FALSE, zero, all, 0, 0, marks, 0, NULL, NULL));
    cl_uint back[N + 16];
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(back[i] == (cl_uint)i + 7);
    for (int i = N; i < N + 16; i++) EXPECT(back[i] == (cl_uint)i);
    size_t origin[3] = {4, 0, 0}, region[3] = {8, 1, 1};
    cl_uint part[8];
    CHECK(clEnqueueReadImage(q, img, CL_TRUE, origin, region, 0, 0, part, 0, NULL, NULL));
    for (int i = 0; i < 8; i++) EXPECT(part[i] == (cl_uint)(i + 4) + 7);
    /* Access flags follow the buffer's. */
    cl_mem wo = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof data, NULL, &err);
    CHECK(err);
    desc.buffer = wo;
    EXPECT(clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err) == NULL && err == CL_INVALID_VALUE);
    desc.buffer = buf;
    desc.image_width = N + 17;
    EXPECT(clCreateImage(ctx, 0, &fmt, &desc, NULL, &err) == NULL && err == CL_INVALID_IMAGE_SIZE);
    CHECK(clReleaseMemObject(wo));
    CHECK(clReleaseMemObject(out));
    CHECK(clReleaseKernel(twice));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseMemObject(img));
    CHECK(clReleaseMemObject(buf));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    printf("device %d: image buffers ok\n", index);
}

int main(void) {
    cl_platform_id weft = weft_platform();
    cl_device_id devs[8];
    cl_uint nd = weft_devices(weft, devs, 8);
    for (cl_uint i = 0; i < nd; i++) run_on(devs[i], NULL, (int)i);
    for (cl_uint i = 0; i < nd; i++) image_buffers(devs[i], (int)i);
    /* The first real device with the second: kernels on both, one context. */
    if (nd >= 3) run_on(devs[1], devs[2], 12);
    printf("all ok\n");
    return 0;
}
