//! Data interfaces: the shape of a handle's data, and how one replica lays it out.
//!
//! **Owns**: shapes (vector, matrix with leading dimension, 3-D block, variable, raw bytes),
//! per-replica strides, byte sizes, and the strided rectangle a copy between two replicas
//! moves. **Does not own**: where replicas are or whether they are valid (`coherence`).
//!
//! Matrices follow StarPU: `nx` elements are contiguous, `ny` columns of them are `ld`
//! elements apart. Blocks add `nz` slices `ldz` elements apart.

use weft_vendors::Rect;

/// The shape of a data handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Vector { nx: usize, elem: usize },
    Matrix { nx: usize, ny: usize, elem: usize },
    Block { nx: usize, ny: usize, nz: usize, elem: usize },
    Variable { size: usize },
    Bytes { size: usize },
}

/// How one replica lays a shape out: element strides between rows (`ldy`) and slices (`ldz`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strides {
    pub ldy: usize,
    pub ldz: usize,
}

impl Shape {
    /// Element size in bytes (1 for variables and raw bytes, counted as bytes).
    pub fn elem(&self) -> usize {
        match *self {
            Shape::Vector { elem, .. } | Shape::Matrix { elem, .. } | Shape::Block { elem, .. } => elem,
            Shape::Variable { .. } | Shape::Bytes { .. } => 1,
        }
    }

    /// `[nx, ny, nz]` in elements.
    pub fn dims(&self) -> [usize; 3] {
        match *self {
            Shape::Vector { nx, .. } => [nx, 1, 1],
            Shape::Matrix { nx, ny, .. } => [nx, ny, 1],
            Shape::Block { nx, ny, nz, .. } => [nx, ny, nz],
            Shape::Variable { size } | Shape::Bytes { size } => [size, 1, 1],
        }
    }

    /// Bytes of payload (excluding padding between rows).
    pub fn size(&self) -> usize {
        self.dims().iter().product::<usize>() * self.elem()
    }

    /// Strides of a packed replica.
    pub fn packed(&self) -> Strides {
        let [nx, ny, _] = self.dims();
        Strides { ldy: nx, ldz: nx * ny }
    }

    /// Bytes spanned by a replica with these strides (from the first to one past the last byte).
    pub fn span(&self, s: Strides) -> usize {
        let [nx, ny, nz] = self.dims();
        if nx == 0 || ny == 0 || nz == 0 {
            return 0;
        }
        ((nz - 1) * s.ldz + (ny - 1) * s.ldy + nx) * self.elem()
    }

    /// The rectangle that copies this shape between replicas with strides `src` and `dst`.
    pub fn rect(&self, src: Strides, dst: Strides) -> Rect {
        let [nx, ny, nz] = self.dims();
        let e = self.elem();
        Rect { region: [nx * e, ny, nz], src_pitch: [src.ldy * e, src.ldz * e], dst_pitch: [dst.ldy * e, dst.ldz * e] }
    }

    /// Check the shape and strides describe a valid, non-empty layout.
    pub fn validate(&self, s: Strides) -> Result<(), String> {
        let [nx, ny, nz] = self.dims();
        if nx == 0 || ny == 0 || nz == 0 || self.elem() == 0 {
            return Err(format!("zero-size data ({self:?})"));
        }
        if s.ldy < nx {
            return Err(format!("leading dimension {} is smaller than nx {nx}", s.ldy));
        }
        if nz > 1 && s.ldz < s.ldy * ny {
            return Err(format!("slice stride {} is smaller than ld*ny {}", s.ldz, s.ldy * ny));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_span_and_rect_follow_the_leading_dimension() {
        let m = Shape::Matrix { nx: 3, ny: 2, elem: 4 };
        let s = Strides { ldy: 5, ldz: 10 };
        assert_eq!(m.size(), 24);
        assert_eq!(m.span(s), (5 + 3) * 4);
        let r = m.rect(s, m.packed());
        assert_eq!(r.region, [12, 2, 1]);
        assert_eq!(r.src_pitch[0], 20);
        assert_eq!(r.dst_pitch[0], 12);
    }

    #[test]
    fn invalid_layouts_are_rejected() {
        assert!(Shape::Vector { nx: 0, elem: 4 }.validate(Strides { ldy: 0, ldz: 0 }).is_err());
        let m = Shape::Matrix { nx: 4, ny: 2, elem: 8 };
        assert!(m.validate(Strides { ldy: 3, ldz: 6 }).is_err());
        assert!(m.validate(m.packed()).is_ok());
    }
}
