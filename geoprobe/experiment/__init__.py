"""What every experiment shares: its descriptor (:class:`Experiment`), how it reports progress
(:class:`Reporter`), and how it runs into its run directory (:func:`run_into`). Each experiment package
declares its ``EXPERIMENT`` in its ``experiment.py``; :data:`geoprobe.recipes.EXPERIMENTS` lists them all."""

from geoprobe.experiment.descriptor import Experiment, OutputOptions, as_output
from geoprobe.experiment.reporter import Progress, Reporter, Stages, as_reporter
from geoprobe.experiment.runner import (
    check_figures,
    load_request,
    model_name,
    model_run_dir,
    open_model,
    run_into,
    write_figures,
    write_page,
)
from geoprobe.experiment.units import Units

__all__ = [
    "Experiment",
    "OutputOptions",
    "Progress",
    "Reporter",
    "Stages",
    "Units",
    "as_output",
    "as_reporter",
    "check_figures",
    "load_request",
    "model_name",
    "model_run_dir",
    "open_model",
    "run_into",
    "write_figures",
    "write_page",
]
