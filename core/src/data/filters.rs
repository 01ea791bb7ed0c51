//! Filters: partitioning a handle into children (tiles), recursively.
//!
//! Children alias disjoint sub-ranges of the parent's home memory. Parts are sized as
//! StarPU sizes them: `n / parts` each, the first `n % parts` parts one element larger.

use super::interface::{Shape, Strides};

/// How to split a handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filter {
    /// Split a vector into `parts` contiguous blocks.
    VectorBlock { parts: usize },
    /// Split a matrix along `nx` (contiguous dimension) into `parts` blocks of rows.
    MatrixRows { parts: usize },
    /// Split a matrix along `ny` into `parts` blocks of columns.
    MatrixCols { parts: usize },
    /// Split a matrix into `px × py` tiles; child `i + px*j` is the tile at (i, j).
    MatrixTiles { px: usize, py: usize },
    /// Split a 3-D block along `nz` into `parts` slabs.
    BlockSlabs { parts: usize },
}

/// Start and length of part `i` of `n` split into `parts`.
pub fn part(n: usize, parts: usize, i: usize) -> (usize, usize) {
    let base = n / parts;
    let extra = n % parts;
    let len = base + usize::from(i < extra);
    let start = i * base + i.min(extra);
    (start, len)
}

/// Shapes and home byte offsets of the children `filter` makes of `shape` laid out with `home`.
pub(crate) fn split(shape: Shape, home: Strides, filter: Filter) -> Result<Vec<(Shape, usize)>, String> {
    let check = |n: usize, parts: usize, what: &str| {
        if parts == 0 || parts > n { Err(format!("cannot split {n} {what} into {parts} parts")) } else { Ok(()) }
    };
    match (filter, shape) {
        (Filter::VectorBlock { parts }, Shape::Vector { nx, elem }) => {
            check(nx, parts, "elements")?;
            Ok((0..parts)
                .map(|i| {
                    let (s, l) = part(nx, parts, i);
                    (Shape::Vector { nx: l, elem }, s * elem)
                })
                .collect())
        }
        (Filter::MatrixRows { parts }, Shape::Matrix { .. }) => split(shape, home, Filter::MatrixTiles { px: parts, py: 1 }),
        (Filter::MatrixCols { parts }, Shape::Matrix { .. }) => split(shape, home, Filter::MatrixTiles { px: 1, py: parts }),
        (Filter::MatrixTiles { px, py }, Shape::Matrix { nx, ny, elem }) => {
            check(nx, px, "rows")?;
            check(ny, py, "columns")?;
            let mut v = Vec::with_capacity(px * py);
            for j in 0..py {
                for i in 0..px {
                    let (x0, xl) = part(nx, px, i);
                    let (y0, yl) = part(ny, py, j);
                    v.push((Shape::Matrix { nx: xl, ny: yl, elem }, (x0 + y0 * home.ldy) * elem));
                }
            }
            Ok(v)
        }
        (Filter::BlockSlabs { parts }, Shape::Block { nx, ny, nz, elem }) => {
            check(nz, parts, "slices")?;
            Ok((0..parts)
                .map(|k| {
                    let (z0, zl) = part(nz, parts, k);
                    (Shape::Block { nx, ny, nz: zl, elem }, z0 * home.ldz * elem)
                })
                .collect())
        }
        (f, s) => Err(format!("filter {f:?} does not apply to {s:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_range_like_starpu() {
        let v: Vec<_> = (0..3).map(|i| part(10, 3, i)).collect();
        assert_eq!(v, [(0, 4), (4, 3), (7, 3)]);
    }

    #[test]
    fn vector_blocks_have_byte_offsets() {
        let c = split(Shape::Vector { nx: 10, elem: 4 }, Strides { ldy: 10, ldz: 10 }, Filter::VectorBlock { parts: 3 }).unwrap();
        assert_eq!(c[1], (Shape::Vector { nx: 3, elem: 4 }, 16));
    }

    #[test]
    fn matrix_tiles_use_the_parent_leading_dimension() {
        let m = Shape::Matrix { nx: 4, ny: 4, elem: 8 };
        let c = split(m, Strides { ldy: 6, ldz: 24 }, Filter::MatrixTiles { px: 2, py: 2 }).unwrap();
        assert_eq!(c.len(), 4);
        // tile (1, 1) starts at row 2 of column 2
        assert_eq!(c[3], (Shape::Matrix { nx: 2, ny: 2, elem: 8 }, (2 + 2 * 6) * 8));
        let rows = split(m, m.packed(), Filter::MatrixRows { parts: 2 }).unwrap();
        assert_eq!(rows[1], (Shape::Matrix { nx: 2, ny: 4, elem: 8 }, 16));
    }

    #[test]
    fn block_slabs_and_bad_filters() {
        let b = Shape::Block { nx: 2, ny: 2, nz: 4, elem: 1 };
        let c = split(b, b.packed(), Filter::BlockSlabs { parts: 2 }).unwrap();
        assert_eq!(c[1].1, 8);
        assert!(split(b, b.packed(), Filter::VectorBlock { parts: 2 }).is_err());
        assert!(split(Shape::Vector { nx: 2, elem: 1 }, Strides { ldy: 2, ldz: 2 }, Filter::VectorBlock { parts: 3 }).is_err());
    }
}
