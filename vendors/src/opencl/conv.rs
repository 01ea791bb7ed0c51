//! Translations between Weft's vocabulary and OpenCL's: error names, errors into
//! [`DeviceError`], and a [`Rect`] into the calls that move it.
//!
//! **Invariants**: every shape `rect_plan` returns is accepted by the `*BufferRect` calls
//! (pitches at least the region, slice pitch a multiple of row pitch); a rectangle that
//! cannot be expressed as one call is split per slice.

use super::result::{ClError, RectArgs, WEFT_BAD_VENDOR};
use super::sys::*;
use crate::{DeviceError, Rect};

/// The name of an OpenCL error code (or of Weft's [`WEFT_BAD_VENDOR`]).
pub fn error_name(code: cl_int) -> &'static str {
    macro_rules! names {
        ($($c:ident),* $(,)?) => {
            match code {
                $($c => stringify!($c),)*
                WEFT_BAD_VENDOR => "WEFT_BAD_VENDOR (the vendor broke the ICD contract)",
                _ => "unknown OpenCL error",
            }
        };
    }
    names!(
        CL_SUCCESS,
        CL_DEVICE_NOT_FOUND,
        CL_DEVICE_NOT_AVAILABLE,
        CL_COMPILER_NOT_AVAILABLE,
        CL_MEM_OBJECT_ALLOCATION_FAILURE,
        CL_OUT_OF_RESOURCES,
        CL_OUT_OF_HOST_MEMORY,
        CL_PROFILING_INFO_NOT_AVAILABLE,
        CL_MEM_COPY_OVERLAP,
        CL_IMAGE_FORMAT_MISMATCH,
        CL_IMAGE_FORMAT_NOT_SUPPORTED,
        CL_BUILD_PROGRAM_FAILURE,
        CL_MAP_FAILURE,
        CL_MISALIGNED_SUB_BUFFER_OFFSET,
        CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
        CL_COMPILE_PROGRAM_FAILURE,
        CL_LINKER_NOT_AVAILABLE,
        CL_LINK_PROGRAM_FAILURE,
        CL_DEVICE_PARTITION_FAILED,
        CL_KERNEL_ARG_INFO_NOT_AVAILABLE,
        CL_INVALID_VALUE,
        CL_INVALID_DEVICE_TYPE,
        CL_INVALID_PLATFORM,
        CL_INVALID_DEVICE,
        CL_INVALID_CONTEXT,
        CL_INVALID_QUEUE_PROPERTIES,
        CL_INVALID_COMMAND_QUEUE,
        CL_INVALID_HOST_PTR,
        CL_INVALID_MEM_OBJECT,
        CL_INVALID_IMAGE_FORMAT_DESCRIPTOR,
        CL_INVALID_IMAGE_SIZE,
        CL_INVALID_SAMPLER,
        CL_INVALID_BINARY,
        CL_INVALID_BUILD_OPTIONS,
        CL_INVALID_PROGRAM,
        CL_INVALID_PROGRAM_EXECUTABLE,
        CL_INVALID_KERNEL_NAME,
        CL_INVALID_KERNEL_DEFINITION,
        CL_INVALID_KERNEL,
        CL_INVALID_ARG_INDEX,
        CL_INVALID_ARG_VALUE,
        CL_INVALID_ARG_SIZE,
        CL_INVALID_KERNEL_ARGS,
        CL_INVALID_WORK_DIMENSION,
        CL_INVALID_WORK_GROUP_SIZE,
        CL_INVALID_WORK_ITEM_SIZE,
        CL_INVALID_GLOBAL_OFFSET,
        CL_INVALID_EVENT_WAIT_LIST,
        CL_INVALID_EVENT,
        CL_INVALID_OPERATION,
        CL_INVALID_GL_OBJECT,
        CL_INVALID_BUFFER_SIZE,
        CL_INVALID_MIP_LEVEL,
        CL_INVALID_GLOBAL_WORK_SIZE,
        CL_INVALID_PROPERTY,
        CL_INVALID_IMAGE_DESCRIPTOR,
        CL_INVALID_COMPILER_OPTIONS,
        CL_INVALID_LINKER_OPTIONS,
        CL_INVALID_DEVICE_PARTITION_COUNT,
        CL_INVALID_PIPE_SIZE,
        CL_INVALID_DEVICE_QUEUE,
        CL_INVALID_SPEC_ID,
        CL_MAX_SIZE_RESTRICTION_EXCEEDED,
        CL_PLATFORM_NOT_FOUND_KHR,
    )
}

/// Codes meaning "not enough memory" rather than "something broke".
pub(crate) fn is_out_of_memory(e: ClError) -> bool {
    matches!(e.0, CL_MEM_OBJECT_ALLOCATION_FAILURE | CL_OUT_OF_RESOURCES | CL_OUT_OF_HOST_MEMORY | CL_INVALID_BUFFER_SIZE)
}

/// A failed call as a [`DeviceError`]: nothing core could have foreseen, so `Lost`.
pub(crate) fn lost(call: &str, e: ClError) -> DeviceError {
    DeviceError::Lost(format!("{call}: {e}"))
}

/// How one [`Rect`] is moved.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RectPlan {
    /// Contiguous on both sides: one plain read/write/copy of this many bytes.
    Linear(usize),
    /// One `*BufferRect` call per entry. Origins are relative to the endpoints' own
    /// offsets: `a` is the source side, `b` the destination side.
    Rects(Vec<RectArgs>),
}

fn contiguous(region: [usize; 3], pitch: [usize; 2]) -> bool {
    (region[1] <= 1 || pitch[0] == region[0]) && (region[2] <= 1 || pitch[1] == region[0] * region[1])
}

/// Pitches the OpenCL calls accept for this region, equivalent to `pitch` for every byte
/// the region touches; `None` if the slices must be split.
fn normalize(region: [usize; 3], pitch: [usize; 2]) -> Option<[usize; 2]> {
    let [w, h, d] = region;
    let row = if h <= 1 { w } else { pitch[0] };
    if d <= 1 {
        return Some([row, row * h]);
    }
    if h <= 1 {
        // One row per slice: the row pitch is free, make it the slice pitch.
        return Some([pitch[1], pitch[1]]);
    }
    pitch[1].is_multiple_of(row).then_some([row, pitch[1]])
}

/// The calls that move `rect` (source pitches `src_pitch`, destination `dst_pitch`).
pub(crate) fn rect_plan(rect: &Rect) -> RectPlan {
    let region = rect.region;
    if contiguous(region, rect.src_pitch) && contiguous(region, rect.dst_pitch) {
        return RectPlan::Linear(rect.bytes());
    }
    if let (Some(a_pitch), Some(b_pitch)) = (normalize(region, rect.src_pitch), normalize(region, rect.dst_pitch)) {
        return RectPlan::Rects(vec![RectArgs { a_origin: [0; 3], b_origin: [0; 3], region, a_pitch, b_pitch }]);
    }
    // Slice pitch not a multiple of the row pitch: one 2-D call per slice.
    let slice = [region[0], region[1], 1];
    let rects = (0..region[2])
        .map(|z| RectArgs {
            a_origin: [z * rect.src_pitch[1], 0, 0],
            b_origin: [z * rect.dst_pitch[1], 0, 0],
            region: slice,
            a_pitch: normalize(slice, rect.src_pitch).expect("2-D always normalizes"),
            b_pitch: normalize(slice, rect.dst_pitch).expect("2-D always normalizes"),
        })
        .collect();
    RectPlan::Rects(rects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_errors() {
        assert_eq!(ClError(-30).to_string(), "CL_INVALID_VALUE (-30)");
        assert_eq!(error_name(-11), "CL_BUILD_PROGRAM_FAILURE");
        assert_eq!(error_name(-12345), "unknown OpenCL error");
    }

    #[test]
    fn linear_rects_are_one_plain_copy() {
        assert_eq!(rect_plan(&Rect::linear(100)), RectPlan::Linear(100));
        // Packed rows on both sides.
        let r = Rect { region: [4, 3, 2], src_pitch: [4, 12], dst_pitch: [4, 12] };
        assert_eq!(rect_plan(&r), RectPlan::Linear(24));
    }

    #[test]
    fn strided_rects_get_valid_pitches() {
        let r = Rect { region: [3, 2, 1], src_pitch: [4, 8], dst_pitch: [3, 999] };
        let RectPlan::Rects(v) = rect_plan(&r) else { panic!("expected a rect") };
        assert_eq!(v, [RectArgs { a_origin: [0; 3], b_origin: [0; 3], region: [3, 2, 1], a_pitch: [4, 8], b_pitch: [3, 6] }]);
        // One row per slice: row pitch follows the slice pitch.
        let r = Rect { region: [2, 1, 3], src_pitch: [2, 5], dst_pitch: [2, 2] };
        let RectPlan::Rects(v) = rect_plan(&r) else { panic!("expected a rect") };
        assert_eq!(v[0].a_pitch, [5, 5]);
        assert_eq!(v[0].b_pitch, [2, 2]);
    }

    #[test]
    fn odd_slice_pitches_split_per_slice() {
        let r = Rect { region: [2, 2, 3], src_pitch: [3, 7], dst_pitch: [2, 4] };
        let RectPlan::Rects(v) = rect_plan(&r) else { panic!("expected rects") };
        assert_eq!(v.len(), 3);
        assert_eq!(v[2].a_origin, [14, 0, 0]);
        assert_eq!(v[2].b_origin, [8, 0, 0]);
        assert_eq!(v[2].region, [2, 2, 1]);
    }
}
