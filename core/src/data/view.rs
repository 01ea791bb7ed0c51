//! Typed views of a replica that task code reads and writes.
//!
//! **Owns**: turning a replica's address and layout into slices, matrices and blocks for
//! the duration of a task or an application acquisition, with a borrow flag per buffer so
//! that safe code cannot obtain two aliasing mutable views of one buffer.
//! **Invariant**: a `View` only exists while its replica is acquired (pinned, valid, and
//! protected by dependencies from conflicting tasks); views of distinct tiles of one
//! matrix never overlap (matrix views hand out columns, not one slice over the padding).
#![allow(unsafe_code)]

use super::interface::{Shape, Strides};
use crate::task::AccessMode;
use bytemuck::Pod;
use std::cell::Cell;
use std::marker::PhantomData;

/// One buffer of a running task (or of an application acquisition).
pub struct View {
    ptr: *mut u8,
    shape: Shape,
    strides: Strides,
    mode: AccessMode,
    /// 0: not borrowed, 1: borrowed shared, 2: borrowed mutably.
    borrow: Cell<u8>,
}

impl View {
    /// # Safety
    /// `ptr` must address a replica laid out as `shape`/`strides` that stays valid, and that
    /// no one else writes (or, for writable modes, reads), for the lifetime of the view.
    pub(crate) unsafe fn new(ptr: *mut u8, shape: Shape, strides: Strides, mode: AccessMode) -> View {
        View { ptr, shape, strides, mode, borrow: Cell::new(0) }
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }
    pub fn strides(&self) -> Strides {
        self.strides
    }
    pub fn mode(&self) -> AccessMode {
        self.mode
    }
    /// Raw address, for C callers and kernels that manage aliasing themselves.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    fn take(&self, mutable: bool) {
        let b = self.borrow.get();
        if mutable {
            assert!(self.mode != AccessMode::R, "buffer accessed in mode R cannot be borrowed mutably");
            assert!(b == 0, "buffer is already borrowed; take each buffer's view once");
            self.borrow.set(2);
        } else {
            assert!(b != 2, "buffer is already borrowed mutably");
            self.borrow.set(1);
        }
    }

    fn check_elem<T>(&self) {
        assert_eq!(
            std::mem::size_of::<T>(),
            self.shape.elem(),
            "element type of size {} does not match the handle's element size {}",
            std::mem::size_of::<T>(),
            self.shape.elem()
        );
        assert_eq!(self.ptr as usize % std::mem::align_of::<T>(), 0, "buffer is not aligned for the element type");
    }

    fn contiguous_len<T>(&self) -> usize {
        match self.shape {
            Shape::Vector { nx, .. } => nx,
            Shape::Variable { size } | Shape::Bytes { size } => size / std::mem::size_of::<T>().max(1),
            Shape::Matrix { nx, ny, .. } if self.strides.ldy == nx => nx * ny,
            Shape::Block { nx, ny, nz, .. } if self.strides.ldy == nx && self.strides.ldz == nx * ny => nx * ny * nz,
            _ => panic!("buffer of shape {:?} is not contiguous; use matrix()/block()", self.shape),
        }
    }

    /// The whole buffer as a slice (vectors, variables, raw bytes, packed matrices/blocks).
    pub fn slice<T: Pod>(&self) -> &[T] {
        if !matches!(self.shape, Shape::Variable { .. } | Shape::Bytes { .. }) {
            self.check_elem::<T>();
        } else {
            assert_eq!(self.ptr as usize % std::mem::align_of::<T>(), 0, "buffer is not aligned for the type");
        }
        let n = self.contiguous_len::<T>();
        self.take(false);
        // SAFETY: the replica holds `n` initialised Pod elements, aligned (checked), and no
        // mutable view of it exists (borrow flag); see the type's invariant.
        unsafe { std::slice::from_raw_parts(self.ptr as *const T, n) }
    }

    /// The whole buffer as a mutable slice.
    #[allow(clippy::mut_from_ref)]
    pub fn slice_mut<T: Pod>(&self) -> &mut [T] {
        if !matches!(self.shape, Shape::Variable { .. } | Shape::Bytes { .. }) {
            self.check_elem::<T>();
        } else {
            assert_eq!(self.ptr as usize % std::mem::align_of::<T>(), 0, "buffer is not aligned for the type");
        }
        let n = self.contiguous_len::<T>();
        self.take(true);
        // SAFETY: as in `slice`, and the borrow flag makes this the only view of the buffer.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut T, n) }
    }

    /// A variable's value.
    pub fn value<T: Pod>(&self) -> T {
        assert!(std::mem::size_of::<T>() <= self.shape.size(), "type larger than the variable");
        // SAFETY: the replica holds at least size_of::<T>() initialised bytes.
        unsafe { std::ptr::read_unaligned(self.ptr as *const T) }
    }

    /// Overwrite a variable's value.
    pub fn set_value<T: Pod>(&self, v: T) {
        assert!(std::mem::size_of::<T>() <= self.shape.size(), "type larger than the variable");
        assert!(self.mode != AccessMode::R, "variable accessed in mode R is read-only");
        assert!(self.borrow.get() == 0, "buffer is borrowed");
        // SAFETY: writable replica of at least size_of::<T>() bytes, not borrowed.
        unsafe { std::ptr::write_unaligned(self.ptr as *mut T, v) }
    }

    /// Copy the data out, packed (rows of `nx` elements back to back, whatever the
    /// replica's strides), into `out`, which must hold exactly `shape().size()` bytes: what
    /// a front end sends over a network (weft-mpi) or saves.
    pub fn pack_into(&self, out: &mut [u8]) {
        assert_eq!(out.len(), self.shape.size(), "pack_into: the destination must hold the data's size");
        self.take(false);
        let (row, rows) = self.rows();
        for (r, off) in rows.enumerate() {
            // SAFETY: `off + row` stays within the replica's span (the shape was validated
            // against these strides at registration), which holds initialised bytes that no
            // writer touches while this view exists (the type's invariant).
            let src = unsafe { std::slice::from_raw_parts(self.ptr.add(off), row) };
            out[r * row..(r + 1) * row].copy_from_slice(src);
        }
        self.borrow.set(0);
    }

    /// Overwrite the data from packed bytes (`pack_into`'s layout), exactly `shape().size()`
    /// of them; the padding between rows is left alone.
    pub fn unpack_from(&self, src: &[u8]) {
        assert_eq!(src.len(), self.shape.size(), "unpack_from: the source must hold the data's size");
        assert!(self.mode != AccessMode::R, "buffer accessed in mode R is read-only");
        self.take(true);
        let (row, rows) = self.rows();
        for (r, off) in rows.enumerate() {
            // SAFETY: as in `pack_into`, and the mode is writable and the borrow flag makes
            // this the only view of the buffer.
            let dst = unsafe { std::slice::from_raw_parts_mut(self.ptr.add(off), row) };
            dst.copy_from_slice(&src[r * row..(r + 1) * row]);
        }
        self.borrow.set(0);
    }

    /// Bytes per row, and the byte offset of each row in the replica.
    fn rows(&self) -> (usize, impl Iterator<Item = usize>) {
        let [nx, ny, nz] = self.shape.dims();
        let e = self.shape.elem();
        let Strides { ldy, ldz } = self.strides;
        (nx * e, (0..nz).flat_map(move |k| (0..ny).map(move |j| (k * ldz + j * ldy) * e)))
    }

    pub fn matrix<T: Pod>(&self) -> MatrixRef<'_, T> {
        let [nx, ny, _] = self.shape.dims();
        self.check_elem::<T>();
        self.take(false);
        MatrixRef { ptr: self.ptr as *const T, nx, ny, ld: self.strides.ldy, _m: PhantomData }
    }

    pub fn matrix_mut<T: Pod>(&self) -> MatrixMut<'_, T> {
        let [nx, ny, _] = self.shape.dims();
        self.check_elem::<T>();
        self.take(true);
        MatrixMut { ptr: self.ptr as *mut T, nx, ny, ld: self.strides.ldy, _m: PhantomData }
    }

    pub fn block<T: Pod>(&self) -> BlockRef<'_, T> {
        let [nx, ny, nz] = self.shape.dims();
        self.check_elem::<T>();
        self.take(false);
        BlockRef { ptr: self.ptr as *const T, dims: [nx, ny, nz], ld: [self.strides.ldy, self.strides.ldz], _m: PhantomData }
    }

    pub fn block_mut<T: Pod>(&self) -> BlockMut<'_, T> {
        let [nx, ny, nz] = self.shape.dims();
        self.check_elem::<T>();
        self.take(true);
        BlockMut { ptr: self.ptr as *mut T, dims: [nx, ny, nz], ld: [self.strides.ldy, self.strides.ldz], _m: PhantomData }
    }
}

/// A read-only matrix: `nx` contiguous elements per column, columns `ld` apart.
pub struct MatrixRef<'a, T> {
    ptr: *const T,
    pub nx: usize,
    pub ny: usize,
    pub ld: usize,
    _m: PhantomData<&'a T>,
}

impl<T: Pod> MatrixRef<'_, T> {
    pub fn col(&self, j: usize) -> &[T] {
        assert!(j < self.ny, "column {j} out of {}", self.ny);
        // SAFETY: column j holds nx elements inside the replica (see View's invariant).
        unsafe { std::slice::from_raw_parts(self.ptr.add(j * self.ld), self.nx) }
    }
    pub fn get(&self, i: usize, j: usize) -> T {
        self.col(j)[i]
    }
}

/// A mutable matrix view.
pub struct MatrixMut<'a, T> {
    ptr: *mut T,
    pub nx: usize,
    pub ny: usize,
    pub ld: usize,
    _m: PhantomData<&'a mut T>,
}

impl<T: Pod> MatrixMut<'_, T> {
    pub fn col(&self, j: usize) -> &[T] {
        assert!(j < self.ny, "column {j} out of {}", self.ny);
        // SAFETY: as MatrixRef::col; `&self` excludes a concurrent `col_mut`.
        unsafe { std::slice::from_raw_parts(self.ptr.add(j * self.ld), self.nx) }
    }
    pub fn col_mut(&mut self, j: usize) -> &mut [T] {
        assert!(j < self.ny, "column {j} out of {}", self.ny);
        // SAFETY: column j is inside the replica, and `&mut self` makes this the only view of it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(j * self.ld), self.nx) }
    }
    pub fn get(&self, i: usize, j: usize) -> T {
        self.col(j)[i]
    }
    pub fn set(&mut self, i: usize, j: usize, v: T) {
        self.col_mut(j)[i] = v;
    }
}

/// A read-only 3-D block.
pub struct BlockRef<'a, T> {
    ptr: *const T,
    pub dims: [usize; 3],
    pub ld: [usize; 2],
    _m: PhantomData<&'a T>,
}

impl<T: Pod> BlockRef<'_, T> {
    pub fn row(&self, j: usize, k: usize) -> &[T] {
        assert!(j < self.dims[1] && k < self.dims[2], "row ({j},{k}) out of bounds");
        // SAFETY: row (j,k) holds dims[0] elements inside the replica.
        unsafe { std::slice::from_raw_parts(self.ptr.add(j * self.ld[0] + k * self.ld[1]), self.dims[0]) }
    }
    pub fn get(&self, i: usize, j: usize, k: usize) -> T {
        self.row(j, k)[i]
    }
}

/// A mutable 3-D block.
pub struct BlockMut<'a, T> {
    ptr: *mut T,
    pub dims: [usize; 3],
    pub ld: [usize; 2],
    _m: PhantomData<&'a mut T>,
}

impl<T: Pod> BlockMut<'_, T> {
    pub fn row_mut(&mut self, j: usize, k: usize) -> &mut [T] {
        assert!(j < self.dims[1] && k < self.dims[2], "row ({j},{k}) out of bounds");
        // SAFETY: row (j,k) is inside the replica and `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(j * self.ld[0] + k * self.ld[1]), self.dims[0]) }
    }
    pub fn get(&mut self, i: usize, j: usize, k: usize) -> T {
        self.row_mut(j, k)[i]
    }
    pub fn set(&mut self, i: usize, j: usize, k: usize, v: T) {
        self.row_mut(j, k)[i] = v;
    }
}
