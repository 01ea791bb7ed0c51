//! Translations between Weft's vocabulary and CUDA's: driver errors into [`DeviceError`],
//! and a [`Rect`] into the memcpy calls that move it. Pure logic: no call into CUDA, so
//! the unit tests run on any machine.
//!
//! **Invariants** of `copy_plan`: every `Piece` it returns is one the driver accepts:
//! * `Rows` (`cuMemcpy2DAsync`): both pitches at least the width and at most `max_pitch`
//!   (`CU_DEVICE_ATTRIBUTE_MAX_PITCH`);
//! * `Slices` (`cuMemcpy3DAsync`): as `Rows`, and on each side the slice pitch is a whole
//!   number of rows (`*_rows` rows of `*_pitch` bytes), at least `height` of them;
//! * anything else is split: per slice, then per row (`Linear`).
//!
//! Together the pieces touch exactly the bytes of the rectangle, each once.

use cudarc::driver::{DriverError, sys::CUresult};

use crate::{DeviceError, Rect};

/// A driver status as `CUDA_ERROR_OUT_OF_MEMORY (2)`, without calling the driver.
pub fn error_name(e: CUresult) -> String {
    format!("{e:?} ({})", e as u32)
}

/// Codes meaning "not enough memory" rather than "something broke".
pub(crate) fn is_out_of_memory(e: DriverError) -> bool {
    e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY
}

/// A failed call as a [`DeviceError`]: nothing core could have foreseen, so `Lost`.
pub(crate) fn lost(call: &str, e: DriverError) -> DeviceError {
    DeviceError::Lost(format!("{call}: {}", error_name(e.0)))
}

/// One memcpy of a [`copy_plan`]. Offsets (`src`, `dst`) are bytes from each endpoint's
/// own address (which already includes the endpoint's offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    /// `len` contiguous bytes: `cuMemcpy{HtoD,DtoH,DtoD}Async`.
    Linear { src: usize, dst: usize, len: usize },
    /// `height` rows of `width` bytes: `cuMemcpy2DAsync`.
    Rows { src: usize, dst: usize, width: usize, height: usize, src_pitch: usize, dst_pitch: usize },
    /// `depth` slices of `height` rows of `width` bytes; a slice spans `*_rows` rows of
    /// `*_pitch` bytes on its side: `cuMemcpy3DAsync`.
    Slices {
        src: usize,
        dst: usize,
        width: usize,
        height: usize,
        depth: usize,
        src_pitch: usize,
        src_rows: usize,
        dst_pitch: usize,
        dst_rows: usize,
    },
}

fn contiguous(region: [usize; 3], pitch: [usize; 2]) -> bool {
    (region[1] <= 1 || pitch[0] == region[0]) && (region[2] <= 1 || pitch[1] == region[0] * region[1])
}

/// Bytes one side of `rect` spans, from its first byte to its last (0 for an empty rect).
pub(crate) fn extent(region: [usize; 3], pitch: [usize; 2]) -> usize {
    let [w, h, d] = region;
    if w == 0 || h == 0 || d == 0 {
        return 0;
    }
    (d - 1) * pitch[1] + (h - 1) * pitch[0] + w
}

/// The memcpys that move `rect` (source pitches `src_pitch`, destination `dst_pitch`),
/// for a device whose largest accepted pitch is `max_pitch`.
pub(crate) fn copy_plan(rect: &Rect, max_pitch: usize) -> Vec<Piece> {
    let [w, mut h, mut d] = rect.region;
    let (mut sp, mut dp) = (rect.src_pitch, rect.dst_pitch);
    if w == 0 || h == 0 || d == 0 {
        return Vec::new();
    }
    if contiguous(rect.region, sp) && contiguous(rect.region, dp) {
        return vec![Piece::Linear { src: 0, dst: 0, len: rect.bytes() }];
    }
    if h == 1 {
        // One row per slice: the slices are the rows, the slice pitch their pitch.
        (h, d) = (d, 1);
        sp = [sp[1], sp[1]];
        dp = [dp[1], dp[1]];
    }
    let fits = |p: usize| p <= max_pitch;
    let rows = |src: usize, dst: usize| -> Vec<Piece> {
        if fits(sp[0]) && fits(dp[0]) {
            debug_assert!(sp[0] >= w && dp[0] >= w, "invariant: core passes rows that do not overlap");
            vec![Piece::Rows { src, dst, width: w, height: h, src_pitch: sp[0], dst_pitch: dp[0] }]
        } else {
            (0..h).map(|y| Piece::Linear { src: src + y * sp[0], dst: dst + y * dp[0], len: w }).collect()
        }
    };
    if d == 1 {
        return rows(0, 0);
    }
    let whole_rows = |p: [usize; 2]| p[1].is_multiple_of(p[0]) && p[1] / p[0] >= h;
    if fits(sp[0]) && fits(dp[0]) && whole_rows(sp) && whole_rows(dp) {
        return vec![Piece::Slices {
            src: 0,
            dst: 0,
            width: w,
            height: h,
            depth: d,
            src_pitch: sp[0],
            src_rows: sp[1] / sp[0],
            dst_pitch: dp[0],
            dst_rows: dp[1] / dp[0],
        }];
    }
    // A slice pitch that is not a whole number of rows: one 2-D copy per slice.
    (0..d).flat_map(|z| rows(z * sp[1], z * dp[1])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = i32::MAX as usize;

    /// Run `plan` on host memory, as the driver would, to check it moves exactly `rect`.
    fn apply(plan: &[Piece], src: &[u8], dst: &mut [u8]) {
        let mut copy = |s: usize, d: usize, n: usize| dst[d..d + n].copy_from_slice(&src[s..s + n]);
        for p in plan {
            match *p {
                Piece::Linear { src, dst, len } => copy(src, dst, len),
                Piece::Rows { src, dst, width, height, src_pitch, dst_pitch } => {
                    for y in 0..height {
                        copy(src + y * src_pitch, dst + y * dst_pitch, width);
                    }
                }
                Piece::Slices { src, dst, width, height, depth, src_pitch, src_rows, dst_pitch, dst_rows } => {
                    for z in 0..depth {
                        for y in 0..height {
                            copy(src + (z * src_rows + y) * src_pitch, dst + (z * dst_rows + y) * dst_pitch, width);
                        }
                    }
                }
            }
        }
    }

    /// The plan for `rect` moves the same bytes as `copy_rect_host`.
    fn check(rect: Rect, max_pitch: usize) -> Vec<Piece> {
        let plan = copy_plan(&rect, max_pitch);
        let src: Vec<u8> = (0..extent(rect.region, rect.src_pitch)).map(|i| (i % 251) as u8 + 1).collect();
        let mut want = vec![0u8; extent(rect.region, rect.dst_pitch)];
        let mut got = want.clone();
        // SAFETY: both vectors span the rectangle on their side.
        unsafe { crate::copy_rect_host(src.as_ptr(), want.as_mut_ptr(), rect) };
        apply(&plan, &src, &mut got);
        assert_eq!(got, want, "plan {plan:?} for {rect:?}");
        plan
    }

    #[test]
    fn names_errors_without_the_driver() {
        assert_eq!(error_name(CUresult::CUDA_ERROR_OUT_OF_MEMORY), "CUDA_ERROR_OUT_OF_MEMORY (2)");
        assert!(is_out_of_memory(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY)));
        assert!(!is_out_of_memory(DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS)));
        assert_eq!(
            lost("cuX", DriverError(CUresult::CUDA_ERROR_INVALID_VALUE)),
            DeviceError::Lost("cuX: CUDA_ERROR_INVALID_VALUE (1)".into())
        );
    }

    #[test]
    fn contiguous_rects_are_one_linear_copy() {
        assert_eq!(check(Rect::linear(100), MAX), [Piece::Linear { src: 0, dst: 0, len: 100 }]);
        let packed = Rect { region: [4, 3, 2], src_pitch: [4, 12], dst_pitch: [4, 12] };
        assert_eq!(check(packed, MAX), [Piece::Linear { src: 0, dst: 0, len: 24 }]);
        // Pitches of unused dimensions do not matter.
        let one_row = Rect { region: [5, 1, 1], src_pitch: [99, 7], dst_pitch: [0, 0] };
        assert_eq!(check(one_row, MAX), [Piece::Linear { src: 0, dst: 0, len: 5 }]);
        assert!(copy_plan(&Rect { region: [0, 3, 3], src_pitch: [1, 1], dst_pitch: [1, 1] }, MAX).is_empty());
    }

    #[test]
    fn strided_matrices_are_one_2d_copy() {
        let r = Rect { region: [3, 2, 1], src_pitch: [4, 8], dst_pitch: [3, 999] };
        assert_eq!(check(r, MAX), [Piece::Rows { src: 0, dst: 0, width: 3, height: 2, src_pitch: 4, dst_pitch: 3 }]);
        // One row per slice: the slice pitch becomes the row pitch.
        let r = Rect { region: [2, 1, 3], src_pitch: [2, 5], dst_pitch: [2, 2] };
        assert_eq!(check(r, MAX), [Piece::Rows { src: 0, dst: 0, width: 2, height: 3, src_pitch: 5, dst_pitch: 2 }]);
    }

    #[test]
    fn blocks_with_whole_row_slices_are_one_3d_copy() {
        // Source: 5-byte rows, 4 rows a slice (only 2 used); destination packed.
        let r = Rect { region: [3, 2, 3], src_pitch: [5, 20], dst_pitch: [3, 6] };
        let plan = check(r, MAX);
        assert_eq!(
            plan,
            [Piece::Slices { src: 0, dst: 0, width: 3, height: 2, depth: 3, src_pitch: 5, src_rows: 4, dst_pitch: 3, dst_rows: 2 }]
        );
    }

    #[test]
    fn odd_slice_pitches_split_per_slice() {
        let r = Rect { region: [2, 2, 3], src_pitch: [3, 7], dst_pitch: [2, 4] };
        let plan = check(r, MAX);
        assert_eq!(plan.len(), 3);
        assert_eq!(plan[2], Piece::Rows { src: 14, dst: 8, width: 2, height: 2, src_pitch: 3, dst_pitch: 2 });
    }

    #[test]
    fn pitches_beyond_the_device_limit_split_per_row() {
        let r = Rect { region: [3, 2, 1], src_pitch: [100, 200], dst_pitch: [3, 6] };
        let plan = check(r, 64);
        assert_eq!(plan, [Piece::Linear { src: 0, dst: 0, len: 3 }, Piece::Linear { src: 100, dst: 3, len: 3 }]);
        let r = Rect { region: [3, 2, 2], src_pitch: [100, 200], dst_pitch: [3, 6] };
        assert_eq!(check(r, 64).len(), 4);
    }

    #[test]
    fn extents_span_first_to_last_byte() {
        assert_eq!(extent([3, 2, 2], [5, 20]), 20 + 5 + 3);
        assert_eq!(extent([3, 1, 1], [0, 0]), 3);
        assert_eq!(extent([3, 0, 1], [5, 5]), 0);
    }
}
