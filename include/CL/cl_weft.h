/* Weft's OpenCL extensions. Written by hand (include/weft.h is cbindgen's; this one
 * mirrors icd/src/api/cl.rs, and tests/icd/placement.c compiles against it and fails if a
 * value disagrees). Include after <CL/cl.h>. See docs/opencl.md, "cl_weft_placement". */
#ifndef CL_WEFT_H
#define CL_WEFT_H

#include <CL/cl.h>

/* cl_weft_placement (version 1.0.0), reported by every device of the Weft platform and by
 * the platform: which real device ran a command.
 *
 * clGetEventInfo(event, CL_EVENT_DEVICE_WEFT, sizeof(cl_device_id), &device, NULL)
 * returns the device, as the Weft platform lists it (the real devices after the unified
 * one), whose vendor ran the command: for a kernel enqueued on the unified device, the
 * device the scheduler placed it on. NULL for a command that ran on no device (host-side
 * commands such as buffer reads, writes, copies and fills, markers, barriers, user events)
 * or that has not been launched on one yet. Its profiling times (clGetEventProfilingInfo)
 * are then that device's own, translated into the platform's clock. */
#define cl_weft_placement 1
#define CL_WEFT_PLACEMENT_EXTENSION_NAME "cl_weft_placement"
#define CL_WEFT_PLACEMENT_EXTENSION_VERSION CL_MAKE_VERSION(1, 0, 0)

#define CL_EVENT_DEVICE_WEFT 0x57EF0001

#endif
