//! `weft`: what a Weft user looks at after a run. Execution traces (`WEFT_TRACE`) summed up
//! and drawn as a Gantt chart, performance models under `$WEFT_HOME/models` listed, shown
//! and plotted, and the machine as the runtime sees it. See `docs/cli.md`.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

mod machine;
mod perfmodel;
mod plot;
mod raster;
mod trace;

#[derive(Parser)]
#[command(name = "weft", version, about = "Look at what the Weft runtime did and knows: traces, performance models, the machine")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read an execution trace written with WEFT_TRACE=path.json.
    #[command(subcommand)]
    Trace(TraceCmd),
    /// Show the machine as the runtime sees it: cores, workers, devices, the bus model.
    ///
    /// Starts a runtime configured from the environment (WEFT_NCPU, WEFT_NOPENCL, WEFT_NCUDA,
    /// WEFT_NNULL, ...), prints what it found and stops it; runs no task. The bus model is
    /// shown when one is cached under $WEFT_HOME/bus for these devices (a run of a
    /// model-driven policy measures and caches it); it is never measured here.
    Machine,
    /// List, show and plot the performance models kept under $WEFT_HOME/models.
    #[command(subcommand)]
    Perfmodel(PerfmodelCmd),
}

#[derive(Subcommand)]
enum TraceCmd {
    /// Per worker busy / idle / transfer shares, per codelet count and mean duration, bytes
    /// per link, makespan and (when the trace records dependencies) the critical path.
    Summary {
        /// The trace file (Chrome trace-event JSON from WEFT_TRACE).
        file: PathBuf,
    },
    /// Draw the trace as a Gantt chart: a row per worker with its tasks coloured by codelet,
    /// a row per link with its transfers.
    Gantt {
        /// The trace file (Chrome trace-event JSON from WEFT_TRACE).
        file: PathBuf,
        /// The picture to write: SVG, or PNG if its name ends in .png.
        #[arg(short, long)]
        output: PathBuf,
        /// Width of the picture in pixels.
        #[arg(long, default_value_t = 1600)]
        width: u32,
    },
}

#[derive(Subcommand)]
enum PerfmodelCmd {
    /// List the models under $WEFT_HOME/models: name, architectures, entries, samples.
    List,
    /// Show a model's entries: architecture, footprint, size, count, mean, stddev, min,
    /// max, the median estimate, and each architecture's fitted regressions.
    Show {
        /// The model's name (as `list` prints it), its file name, or a path to a .model file.
        name: String,
    },
    /// Plot a model: time against data size per architecture, log-log, with the samples,
    /// each entry's mean and the fitted power law a*n^b.
    Plot {
        /// The model's name (as `list` prints it), its file name, or a path to a .model file.
        name: String,
        /// The picture to write: SVG, or PNG if its name ends in .png.
        #[arg(short, long)]
        output: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.command {
        Command::Trace(TraceCmd::Summary { file }) => trace::Trace::load(&file).map(|t| print!("{}", trace::summary(&t))),
        Command::Trace(TraceCmd::Gantt { file, output, width }) => {
            trace::Trace::load(&file).and_then(|t| plot::gantt(&t, &output, width)).map(|()| println!("wrote {}", output.display()))
        }
        Command::Machine => machine::show().map(|s| print!("{s}")),
        Command::Perfmodel(PerfmodelCmd::List) => perfmodel::list().map(|s| print!("{s}")),
        Command::Perfmodel(PerfmodelCmd::Show { name }) => perfmodel::show(&name).map(|s| print!("{s}")),
        Command::Perfmodel(PerfmodelCmd::Plot { name, output }) => {
            perfmodel::open(&name).and_then(|m| plot::model(&m, &output)).map(|()| println!("wrote {}", output.display()))
        }
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("weft: {e}");
            ExitCode::FAILURE
        }
    }
}
