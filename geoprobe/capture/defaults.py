"""Capture's defaults that configs read without capturing (no torch): a scan's config takes its
``max_tokens`` default from here, so reading a recipe or a sweep file does not import the capture."""

DEFAULT_MAX_TOKENS = 2048  # prompt tokens kept by default; see docs/capture.md for why 2048
