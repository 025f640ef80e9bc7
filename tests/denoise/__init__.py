"""Tests for geoprobe.denoise (in-context denoising, arXiv 2502.05164)."""
