"""The HTML figure report: assembled from a ScanResult, never from a model."""
from geoprobe.report.html import render_report, write_report

__all__ = ["render_report", "write_report"]
