"""In-context denoising with one attention layer (arXiv 2502.05164)."""
