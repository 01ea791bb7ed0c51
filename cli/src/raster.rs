//! PNG pictures: plot.rs's drawing on a pixel buffer of ours ([`Raster`], a plotters
//! backend: shapes through plotters' pixel-based defaults, text set with ab_glyph in a
//! system font), encoded by the `png` crate.
//!
//! **Owns**: choosing the picture's format from the output's name, finding a font, the
//! pixel buffer and the encoding. **Does not own**: what is drawn (plot.rs).
//!
//! Without any system font the PNG is still written, its text left out, after one warning
//! on stderr.

use ab_glyph::{Font, FontVec, PxScale, ScaleFont};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendTextStyle, DrawingBackend, DrawingErrorKind};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What the output's name asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

impl Format {
    /// `.svg` or `.png` (any case); any other name is refused rather than written in a
    /// format its name does not say.
    pub fn of(path: &Path) -> Result<Format, String> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("svg") => Ok(Format::Svg),
            Some("png") => Ok(Format::Png),
            _ => Err(format!("{}: only SVG and PNG pictures are written (name the file .svg or .png)", path.display())),
        }
    }
}

/// Fonts tried first for the pictures' text (plotters asks for `sans-serif`), by path;
/// then any TrueType or OpenType file under the font directories.
const SANS: [&str; 9] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
];
const FONT_DIRS: [&str; 3] = ["/usr/share/fonts", "/usr/local/share/fonts", "/System/Library/Fonts"];

/// The font of the pictures' text, looked up once; `None` (and one warning) if the system
/// has none.
fn font() -> Option<&'static FontVec> {
    static FONT: OnceLock<Option<FontVec>> = OnceLock::new();
    FONT.get_or_init(|| {
        let load = |p: &Path| std::fs::read(p).ok().and_then(|b| FontVec::try_from_vec(b).ok());
        let found = SANS.iter().find_map(|p| load(Path::new(p))).or_else(|| {
            let mut files = Vec::new();
            for d in FONT_DIRS {
                font_files(Path::new(d), 4, &mut files);
            }
            files.sort();
            files.iter().find_map(|p| load(p))
        });
        if found.is_none() {
            eprintln!("weft: no system font found: the PNG is drawn without its text (install e.g. fonts-dejavu-core)");
        }
        found
    })
    .as_ref()
}

/// TrueType and OpenType files under `dir`, `depth` levels down at most.
fn font_files(dir: &Path, depth: u32, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() && depth > 0 {
            font_files(&p, depth - 1, out);
        } else if p.extension().and_then(|x| x.to_str()).is_some_and(|x| x.eq_ignore_ascii_case("ttf") || x.eq_ignore_ascii_case("otf")) {
            out.push(p);
        }
    }
}

/// A white RGB pixel buffer for a `w` × `h` picture, to draw on with [`Raster`].
pub fn buffer((w, h): (u32, u32)) -> Vec<u8> {
    vec![255; w as usize * h as usize * 3]
}

/// Write the `w` × `h` RGB pixels `px` to `path` as PNG.
pub fn write_png(px: &[u8], (w, h): (u32, u32), path: &Path) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let f = std::fs::File::create(path).map_err(|e| fail(&e))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(f), w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut wr = enc.write_header().map_err(|e| fail(&e))?;
    wr.write_image_data(px).map_err(|e| fail(&e))?;
    wr.finish().map_err(|e| fail(&e))
}

/// A backend drawing on an RGB pixel buffer (from [`buffer`]).
pub struct Raster<'a> {
    size: (u32, u32),
    px: &'a mut [u8],
    font: Option<&'static FontVec>,
}

impl<'a> Raster<'a> {
    pub fn new(px: &'a mut [u8], size: (u32, u32)) -> Raster<'a> {
        debug_assert_eq!(px.len(), size.0 as usize * size.1 as usize * 3);
        Raster { size, px, font: font() }
    }

    /// The font scale that makes `size` (plotters' font size: the em, as SVG's `font-size`)
    /// ab_glyph's pixel height (ascent to descent).
    fn scale(f: &FontVec, size: f64) -> PxScale {
        let em = f.units_per_em().unwrap_or(1000.0);
        PxScale::from(size as f32 * f.height_unscaled() / em)
    }

    /// Width and height of `text` set at `size`, pixels.
    fn measure(f: &FontVec, size: f64, text: &str) -> (f32, f32) {
        let sf = f.as_scaled(Raster::scale(f, size));
        let mut w = 0.0;
        let mut prev = None;
        for c in text.chars() {
            let g = sf.glyph_id(c);
            if let Some(p) = prev {
                w += sf.kern(p, g);
            }
            w += sf.h_advance(g);
            prev = Some(g);
        }
        (w, sf.ascent() - sf.descent())
    }
}

impl DrawingBackend for Raster<'_> {
    type ErrorType = std::convert::Infallible;

    fn get_size(&self) -> (u32, u32) {
        self.size
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        Ok(())
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        Ok(())
    }

    fn draw_pixel(&mut self, (x, y): BackendCoord, c: BackendColor) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let (w, h) = self.size;
        if x < 0 || y < 0 || x >= w as i32 || y >= h as i32 {
            return Ok(());
        }
        let i = (y as usize * w as usize + x as usize) * 3;
        let a = c.alpha.clamp(0.0, 1.0);
        for (k, v) in [c.rgb.0, c.rgb.1, c.rgb.2].into_iter().enumerate() {
            let d = self.px[i + k] as f64;
            self.px[i + k] = (d + (v as f64 - d) * a).round() as u8;
        }
        Ok(())
    }

    fn estimate_text_size<S: BackendTextStyle>(&self, text: &str, style: &S) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        Ok(match self.font {
            Some(f) => {
                let (w, h) = Raster::measure(f, style.size(), text);
                (w.ceil() as u32, h.ceil() as u32)
            }
            // No font, no text: an estimate for the layout.
            None => ((style.size() * 0.6 * text.chars().count() as f64) as u32, style.size() as u32),
        })
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let Some(f) = self.font else { return Ok(()) };
        let colour = style.color();
        if colour.alpha == 0.0 {
            return Ok(());
        }
        let (w, h) = Raster::measure(f, style.size(), text);
        // The anchor, in the text's own (unrotated) frame, its top left at (0, 0).
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => -w / 2.0,
            HPos::Right => -w,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => -h / 2.0,
            VPos::Bottom => -h,
        };
        let sf = f.as_scaled(Raster::scale(f, style.size()));
        let trans = style.transform();
        let (mut caret, mut prev) = (0.0f32, None);
        for c in text.chars() {
            let id = sf.glyph_id(c);
            if let Some(p) = prev {
                caret += sf.kern(p, id);
            }
            let g = id.with_scale_and_position(sf.scale(), ab_glyph::point(caret + dx, sf.ascent() + dy));
            caret += sf.h_advance(id);
            prev = Some(id);
            let Some(o) = f.outline_glyph(g) else { continue };
            let b = o.px_bounds();
            let mut pixels = Vec::new();
            o.draw(|gx, gy, cover| {
                if cover > 0.0 {
                    pixels.push((b.min.x as i32 + gx as i32, b.min.y as i32 + gy as i32, cover));
                }
            });
            for (x, y, cover) in pixels {
                let (x, y) = trans.transform(x, y);
                self.draw_pixel((pos.0 + x, pos.1 + y), BackendColor { alpha: colour.alpha * cover as f64, rgb: colour.rgb })?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_name() {
        assert_eq!(Format::of(Path::new("a.SVG")), Ok(Format::Svg));
        assert_eq!(Format::of(Path::new("dir/a.png")), Ok(Format::Png));
        assert!(Format::of(Path::new("a.jpg")).unwrap_err().contains("only SVG and PNG"));
        assert!(Format::of(Path::new("noext")).is_err());
    }

    #[test]
    fn pixels_blend_and_stay_in_bounds() {
        let mut px = vec![255; 6];
        let mut r = Raster { size: (2, 1), px: &mut px, font: None };
        r.draw_pixel((0, 0), BackendColor { alpha: 1.0, rgb: (10, 20, 30) }).unwrap();
        r.draw_pixel((1, 0), BackendColor { alpha: 0.5, rgb: (55, 255, 155) }).unwrap();
        r.draw_pixel((2, 0), BackendColor { alpha: 1.0, rgb: (0, 0, 0) }).unwrap();
        r.draw_pixel((-1, 0), BackendColor { alpha: 1.0, rgb: (0, 0, 0) }).unwrap();
        assert_eq!(px, [10, 20, 30, 155, 255, 205]);
    }
}
