//! The pictures: a trace's Gantt chart and a performance model's plot, drawn by plotters
//! as SVG (its SVG backend; text is left to the viewer's fonts, so no font is read) or as
//! PNG (raster.rs's pixel buffer, text in a system font).

use crate::raster::{self, Format, Raster};
use crate::trace::{Kind, Trace};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use weft_core::perfmodel::ModelHandle;

/// Distinct colours for codelets and architectures (Tableau 10, then a few more).
const PALETTE: [RGBColor; 14] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
    RGBColor(0, 0, 128),
    RGBColor(128, 128, 0),
    RGBColor(0, 128, 128),
    RGBColor(128, 0, 0),
];

fn err<E: std::fmt::Display>(path: &Path) -> impl FnOnce(E) -> String + '_ {
    move |e| format!("{}: cannot draw: {e}", path.display())
}

const ROW_PX: u32 = 22;

/// `weft trace gantt`: a row per worker (tasks coloured by codelet, idle spans light grey,
/// sleep a little darker), then a row per transfer track (copies dark grey); time in ms.
pub fn gantt(t: &Trace, path: &Path, width: u32) -> Result<(), String> {
    let format = Format::of(path)?;
    let Some((lo, hi)) = t.span() else { return Err("the trace holds no task and no transfer: nothing to draw".into()) };
    let rows: Vec<&str> = t.workers.iter().map(|w| w.name.as_str()).chain(t.lanes.iter().map(|l| l.name.as_str())).collect();
    let nrows = rows.len().max(1);
    // Codelets in order of first appearance in worker order get the palette's colours.
    let mut colour: BTreeMap<&str, RGBColor> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (_, s) in t.tasks() {
        if !colour.contains_key(s.name.as_str()) {
            colour.insert(&s.name, PALETTE[order.len() % PALETTE.len()]);
            order.push(&s.name);
        }
    }
    let label_px = (rows.iter().map(|r| r.len()).max().unwrap_or(8) as u32 * 7 + 16).clamp(60, 400);
    let width = width.max(400);
    // The legend's rows, as `legend` lays them out.
    let items_px: u32 = order.iter().map(|n| 30 + 7 * n.len() as u32).sum::<u32>() + 6 * (30 + 7 * 16);
    let legend_px = 20 + 18 * items_px.div_ceil(width - 40);
    let height = 90 + ROW_PX * nrows as u32 + legend_px;
    let size = (width, height);
    match format {
        Format::Svg => {
            let mut svg = String::new();
            let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
            draw_gantt(t, root, (lo, hi), path, &order, &colour, label_px, legend_px)?;
            std::fs::write(path, svg).map_err(|e| format!("{}: {e}", path.display()))
        }
        Format::Png => {
            let mut px = raster::buffer(size);
            let root = Raster::new(&mut px, size).into_drawing_area();
            draw_gantt(t, root, (lo, hi), path, &order, &colour, label_px, legend_px)?;
            raster::write_png(&px, size, path)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn draw_gantt<DB: DrawingBackend>(
    t: &Trace,
    root: DrawingArea<DB, Shift>,
    (lo, hi): (f64, f64),
    path: &Path,
    order: &[&str],
    colour: &BTreeMap<&str, RGBColor>,
    label_px: u32,
    legend_px: u32,
) -> Result<(), String> {
    let (width, height) = root.dim_in_pixel();
    let rows: Vec<&str> = t.workers.iter().map(|w| w.name.as_str()).chain(t.lanes.iter().map(|l| l.name.as_str())).collect();
    let nrows = rows.len().max(1);
    root.fill(&WHITE).map_err(err(path))?;
    let (chart_area, legend_area) = root.split_vertically(height - legend_px);
    // x in ms from the first event; a little room on the right.
    let x1 = ((hi - lo) / 1e3).max(1e-3) * 1.01;
    let y = |row: usize| (nrows - 1 - row) as f64;
    let mut chart = ChartBuilder::on(&chart_area)
        .margin(10)
        .caption(
            format!(
                "{} tasks on {} workers, {} transfers; makespan {}",
                t.tasks().count(),
                t.workers.len(),
                t.transfers.len(),
                crate::trace::dur(hi - lo)
            ),
            ("sans-serif", 18),
        )
        .x_label_area_size(40)
        .y_label_area_size(label_px)
        .build_cartesian_2d(0f64..x1, -0.5f64..nrows as f64 - 0.5)
        .map_err(err(path))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc(format!("time (ms) from {:.3} ms after the runtime started", lo / 1e3))
        .x_label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .draw()
        .map_err(err(path))?;
    let ms = |us: f64| (us - lo) / 1e3;
    // Clipped to the span drawn: a worker's sleep from the runtime's start to its first
    // task, or after its last one, would run off the chart.
    let bar = |row: usize, a: f64, b: f64, h: f64| [(ms(a.max(lo)), y(row) - h), (ms(b.min(hi)), y(row) + h)];
    // Idle and sleep spans first, under everything.
    let grey = |k: Kind| if k == Kind::Sleep { RGBColor(200, 200, 200) } else { RGBColor(232, 232, 232) };
    let idle = t.workers.iter().enumerate().flat_map(|(w, wk)| {
        wk.slices
            .iter()
            .filter(|s| matches!(s.kind, Kind::Idle | Kind::Sleep) && s.end() > lo && s.start < hi)
            .map(move |s| Rectangle::new(bar(w, s.start, s.end(), 0.2), grey(s.kind).filled()))
    });
    chart.draw_series(idle).map_err(err(path))?;
    // OpenMP region shares (busy, not tasks) in one muted colour, under the tasks.
    let region = RGBColor(158, 202, 225);
    let regions = t
        .regions()
        .filter(|(_, s)| s.end() > lo && s.start < hi)
        .map(|(w, s)| Rectangle::new(bar(w, s.start, s.end(), 0.4), region.filled()));
    chart.draw_series(regions).map_err(err(path))?;
    // OpenMP constructs inside them, a little narrower: barrier waits apart from the
    // others (loops, single, taskloop), under the tasks.
    let (construct, barrier) = (RGBColor(161, 217, 155), RGBColor(253, 208, 162));
    let constructs = t.constructs().filter(|(_, s)| s.end() > lo && s.start < hi).map(|(w, s)| {
        let c = if s.name == "omp barrier" { barrier } else { construct };
        Rectangle::new(bar(w, s.start, s.end(), 0.3), c.filled())
    });
    chart.draw_series(constructs).map_err(err(path))?;
    // Tasks end a little early, by at most a pixel's worth of time, so that back-to-back
    // tasks stay apart.
    let px_us = (hi - lo) / (width - label_px).max(100) as f64;
    let gap = |s: &crate::trace::Slice| s.end() - (0.8 * px_us).min(0.2 * s.dur);
    for name in order {
        let c = colour[name];
        let rects = t.tasks().filter(|(_, s)| s.name == *name).map(|(w, s)| Rectangle::new(bar(w, s.start, gap(s), 0.4), c.filled()));
        chart.draw_series(rects).map_err(err(path))?;
    }
    let nw = t.workers.len();
    let copy = RGBColor(70, 70, 70);
    let copies = t.transfers.iter().map(|x| Rectangle::new(bar(nw + x.lane, x.start, x.start + x.dur, 0.35), copy.filled()));
    chart.draw_series(copies).map_err(err(path))?;
    // Row names, left of the plotting area, level with their rows.
    let area = chart.plotting_area();
    let font = ("sans-serif", 12).into_font();
    for (i, r) in rows.iter().enumerate() {
        let (_, py) = area.map_coordinate(&(0.0, y(i)));
        let style = TextStyle::from(font.clone()).pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Right,
            plotters::style::text_anchor::VPos::Center,
        ));
        chart_area.draw_text(r, &style, (10 + label_px as i32 - 6, py)).map_err(err(path))?;
    }
    let mut items: Vec<(String, RGBColor)> = order.iter().map(|n| (n.to_string(), colour[n])).collect();
    items.push(("transfer".to_string(), copy));
    if t.regions().next().is_some() {
        items.push(("OpenMP region".to_string(), region));
    }
    if t.constructs().any(|(_, s)| s.name != "omp barrier") {
        items.push(("OpenMP construct".to_string(), construct));
    }
    if t.constructs().any(|(_, s)| s.name == "omp barrier") {
        items.push(("OpenMP barrier".to_string(), barrier));
    }
    for k in [Kind::Idle, Kind::Sleep] {
        if t.workers.iter().any(|w| w.slices.iter().any(|s| s.kind == k)) {
            items.push((if k == Kind::Idle { "idle (spinning)" } else { "sleep" }.to_string(), grey(k)));
        }
    }
    legend(&legend_area, &items).map_err(err(path))?;
    root.present().map_err(err(path))?;
    Ok(())
}

/// A legend of coloured boxes below a chart, in rows.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    items: &[(String, RGBColor)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, _) = area.dim_in_pixel();
    let (mut x, mut y) = (20i32, 20i32);
    for (name, c) in items {
        let item_w = 30 + 7 * name.len() as i32;
        if x + item_w > w as i32 && x > 20 {
            x = 20;
            y += 18;
        }
        area.draw(&Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()))?;
        area.draw(&Text::new(name.clone(), (x + 18, y - 6), ("sans-serif", 12).into_font()))?;
        x += item_w;
    }
    Ok(())
}

/// `weft perfmodel plot`: time against task size, log-log, one colour per architecture:
/// each entry's recent samples (small dots), its mean (a cross) and median (a ring: what
/// predictions use), the power law `a·n^b`
/// when usable (solid line) and the non-linear `a·n^b + c` fitted through the entries
/// (thin line) when there are 3 sizes or more.
pub fn model(m: &ModelHandle, path: &Path) -> Result<(), String> {
    let format = Format::of(path)?;
    let entries = m.entries();
    let pos = |v: f64| v.is_finite() && v > 0.0;
    let xs: Vec<f64> = entries.iter().map(|e| e.size).filter(|&v| pos(v)).collect();
    let ts: Vec<f64> = entries.iter().flat_map(|e| e.recent.iter().copied().chain([e.mean, e.min, e.max])).filter(|&v| pos(v)).collect();
    if xs.is_empty() || ts.is_empty() {
        return Err(format!("model {:?} has no sample with a positive size and time: nothing to plot", m.name()));
    }
    let range = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        // At least a factor of 20 end to end, so that the axis has a labelled 1, 2 or 5
        // times a power of ten even when every entry has one size.
        let widen = (20.0 / (4.0 * hi / lo)).max(1.0).sqrt();
        (lo / 2.0 / widen, hi * 2.0 * widen)
    };
    let (x0, x1) = range(&xs);
    let (y0, y1) = range(&ts);
    // The legend goes below the chart, where it hides no sample: a line per architecture
    // and per fitted curve.
    let archs = m.archs();
    let nlines: u32 = archs.iter().map(|a| 1 + u32::from(m.regression(a).is_some()) + u32::from(m.nl_regression(a).is_some())).sum();
    let legend_px = 20 + 18 * nlines;
    let size = (1000, 650 + legend_px);
    match format {
        Format::Svg => {
            let mut svg = String::new();
            draw_model(m, SVGBackend::with_string(&mut svg, size).into_drawing_area(), path, (x0, x1), (y0, y1))?;
            std::fs::write(path, svg).map_err(|e| format!("{}: {e}", path.display()))
        }
        Format::Png => {
            let mut px = raster::buffer(size);
            draw_model(m, Raster::new(&mut px, size).into_drawing_area(), path, (x0, x1), (y0, y1))?;
            raster::write_png(&px, size, path)
        }
    }
}

fn draw_model<DB: DrawingBackend>(
    m: &ModelHandle,
    root: DrawingArea<DB, Shift>,
    path: &Path,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) -> Result<(), String> {
    let entries = m.entries();
    let pos = |v: f64| v.is_finite() && v > 0.0;
    let archs = m.archs();
    root.fill(&WHITE).map_err(err(path))?;
    let (chart_area, legend_area) = root.split_vertically(650);
    let mut lines: Vec<(String, RGBColor, bool)> = Vec::new();
    let mut chart = ChartBuilder::on(&chart_area)
        .margin(15)
        .caption(format!("performance model {}", m.name()), ("sans-serif", 20))
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
        .map_err(err(path))?;
    chart
        .configure_mesh()
        .x_desc("task size n (bytes of its data unless the codelet says otherwise)")
        .y_desc("time (us)")
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .max_light_lines(0)
        .x_label_formatter(&log_label)
        .y_label_formatter(&log_label)
        .draw()
        .map_err(err(path))?;
    for (k, arch) in archs.iter().enumerate() {
        let c = PALETTE[k % PALETTE.len()];
        let mine: Vec<_> = entries.iter().filter(|e| &e.arch == arch && pos(e.size)).collect();
        let dots =
            mine.iter().flat_map(|e| e.recent.iter().filter(|&&t| pos(t)).map(|&t| Circle::new((e.size, t), 2, c.mix(0.5).filled())));
        let nsamples: u64 = mine.iter().map(|e| e.count).sum();
        chart.draw_series(dots).map_err(err(path))?;
        lines.push((
            format!("{arch}: samples ({nsamples} in {} entries; dots: the newest per entry), x: entry mean, o: median", mine.len()),
            c,
            false,
        ));
        chart
            .draw_series(mine.iter().filter(|e| pos(e.mean)).map(|e| Cross::new((e.size, e.mean), 6, c.stroke_width(2))))
            .map_err(err(path))?;
        chart
            .draw_series(mine.iter().filter(|e| pos(e.estimate)).map(|e| Circle::new((e.size, e.estimate), 7, c.stroke_width(2))))
            .map_err(err(path))?;
        let curve = |f: &dyn Fn(f64) -> f64| -> Vec<(f64, f64)> {
            (0..=60)
                .map(|i| x0 * (x1 / x0).powf(i as f64 / 60.0))
                .map(|n| (n, f(n)))
                .filter(|&(_, t)| pos(t) && t >= y0 && t <= y1)
                .collect()
        };
        if let Some((a, b)) = m.regression(arch) {
            chart.draw_series(LineSeries::new(curve(&|n| a * n.powf(b)), c.stroke_width(2))).map_err(err(path))?;
            lines.push((format!("{arch}: t = {a:.3e} * n^{b:.3} (power law over every sample)"), c, true));
        }
        if let Some((a, b, cc)) = m.nl_regression(arch) {
            let light = c.mix(0.5);
            chart.draw_series(LineSeries::new(curve(&|n| a * n.powf(b) + cc), light.stroke_width(1))).map_err(err(path))?;
            lines.push((format!("{arch}: t = {a:.3e} * n^{b:.3} + {cc:.3} (through the entries' medians; thin)"), c, true));
        }
    }
    for (i, (text, c, line)) in lines.iter().enumerate() {
        let y = 10 + 18 * i as i32;
        let r = if *line {
            legend_area.draw(&PathElement::new([(100, y), (120, y)], c.stroke_width(2)))
        } else {
            legend_area.draw(&Circle::new((110, y), 3, c.filled()))
        };
        r.and_then(|()| legend_area.draw(&Text::new(text.clone(), (128, y - 6), ("sans-serif", 12).into_font()))).map_err(err(path))?;
    }
    root.present().map_err(err(path))?;
    Ok(())
}

/// A log axis' label: only at 1, 2 and 5 times a power of ten (plotters puts a key point at
/// every multiple of each decade, whose labels would overlap), as `500` or `2e6`.
fn log_label(v: &f64) -> String {
    if !(v.is_finite() && *v > 0.0) {
        return String::new();
    }
    let e = v.log10().floor();
    let m = v / 10f64.powf(e);
    let near = |k: f64| (m - k).abs() < 1e-6 * k;
    match [1.0, 2.0, 5.0, 10.0].into_iter().find(|&k| near(k)) {
        None => String::new(),
        Some(k) => {
            let (k, e) = if k == 10.0 { (1.0, e + 1.0) } else { (k, e) };
            if (0.0..4.0).contains(&e) { format!("{}", k * 10f64.powf(e)) } else { format!("{k}e{e}") }
        }
    }
}
