//! Figures like the GpSense paper's 10 and 11: median query time (log scale) against data size,
//! query size or average degree, one line per engine and semantics. Written as SVG and PNG by
//! plotters; text is rasterised with ab_glyph from the DejaVu Sans font bundled in the `dejavu`
//! crate, so neither backend needs fontconfig or any system font.

use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

/// One line: a label and its points (x, median milliseconds).
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

const COLOURS: &[RGBColor] = &[
    RGBColor(0, 0, 0),
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 90, 50),
];

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

/// Figure size in pixels; the legend takes [`LEGEND_WIDTH`] on the right, outside the plot, so it
/// never hides a point.
const SIZE: (u32, u32) = (1140, 600);
const LEGEND_WIDTH: u32 = 240;

/// Writes `<stem>.svg` and `<stem>.png`.
pub fn figure(stem: &Path, title: &str, x_label: &str, series: &[Series]) -> Result<()> {
    register_font();
    let svg = stem.with_extension("svg");
    draw(
        SVGBackend::new(&svg, SIZE).into_drawing_area(),
        title,
        x_label,
        series,
    )?;
    let png = stem.with_extension("png");
    draw(
        BitMapBackend::new(&png, SIZE).into_drawing_area(),
        title,
        x_label,
        series,
    )?;
    Ok(())
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    series: &[Series],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("plot {title}: {e:?}");
    root.fill(&WHITE).map_err(err)?;
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .collect();
    let (mut x0, mut x1) = all
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (mut y0, mut y1) = all
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
    if all.is_empty() {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.001, 1.0);
    }
    // Query sizes are whole numbers: ticks only there, and a range around a single one.
    let whole = all.iter().all(|p| p.0.fract() == 0.0);
    if x1 <= x0 {
        (x0, x1) = (x0 - 1.0, x1 + 1.0);
    }
    let span = x1 - x0;
    let pad = span * 0.03;
    let x_labels = if whole && span <= 20.0 {
        span as usize + 1
    } else {
        10
    };
    let (y0, y1) = (y0.max(1e-4) / 2.0, y1.max(1e-3) * 2.0);
    let (plot, legend) = root.split_horizontally(SIZE.0 - LEGEND_WIDTH);
    let mut chart = ChartBuilder::on(&plot)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x0 - pad)..(x1 + pad), (y0..y1).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc("median query time (ms, log scale)")
        .y_label_formatter(&|v| super::report::ms(*v))
        .x_labels(x_labels)
        .x_label_formatter(&|v| {
            if whole && (v - v.round()).abs() > 1e-6 {
                String::new()
            } else if v.abs() >= 1000.0 {
                format!("{:.0}k", v / 1000.0)
            } else {
                format!("{v:.0}")
            }
        })
        .draw()
        .map_err(err)?;
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let style = ShapeStyle::from(&colour).stroke_width(2);
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), style))
            .map_err(err)?;
        chart
            .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
            .map_err(err)?;
        // The legend, beside the plot.
        let y = 60 + 24 * i as i32;
        legend
            .draw(&PathElement::new(vec![(8, y), (32, y)], style))
            .map_err(err)?;
        legend
            .draw(&Text::new(
                s.label.clone(),
                (40, y - 7),
                ("sans-serif", 14).into_font(),
            ))
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("fig");
        let series = vec![
            Series {
                label: "gpsense-dfs (iso)".into(),
                points: vec![(10_000.0, 0.05), (20_000.0, 0.08)],
            },
            Series {
                label: "oxigraph-sparql (iso)".into(),
                points: vec![(10_000.0, 3.0), (20_000.0, 7.5)],
            },
        ];
        figure(&stem, "data size", "data graph nodes", &series).unwrap();
        let svg = std::fs::read_to_string(stem.with_extension("svg")).unwrap();
        assert!(svg.contains("oxigraph-sparql (iso)"));
        let png = std::fs::read(stem.with_extension("png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        figure(&stem, "empty", "x", &[]).unwrap();
    }

    /// Every query of a workload may have the same size: one tick there, not `6 6 6 6 6 7 7`; and
    /// the legend is drawn beside the plot, where it hides no point.
    #[test]
    fn whole_number_ticks_and_a_legend_beside_the_plot() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("fig");
        let series = vec![Series {
            label: "gpsense-dfs (iso)".into(),
            points: vec![(6.0, 0.05)],
        }];
        figure(&stem, "query size", "query nodes", &series).unwrap();
        let svg = std::fs::read_to_string(stem.with_extension("svg")).unwrap();
        let labels: Vec<&str> = svg
            .split("</text>")
            .filter_map(|t| t.rsplit('>').next())
            .map(str::trim)
            .filter(|t| t.parse::<f64>().is_ok())
            .collect();
        assert_eq!(
            labels.iter().filter(|&&t| t == "6").count(),
            1,
            "{labels:?}"
        );
        assert!(labels.contains(&"5") && labels.contains(&"7"), "{labels:?}");
        // The legend text starts right of the plot area.
        let at = svg.find("gpsense-dfs (iso)").unwrap();
        let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
        let x: f64 = tag
            .split("x=\"")
            .nth(1)
            .and_then(|t| t.split('"').next())
            .and_then(|t| t.parse().ok())
            .unwrap();
        assert!(x >= (SIZE.0 - LEGEND_WIDTH) as f64, "{tag}");
    }
}
