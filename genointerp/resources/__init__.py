"""Data shipped inside the package (error profiles; later, built-in models)."""
