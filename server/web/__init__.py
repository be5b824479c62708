"""The web chat page: one HTML shell and its scripts, served from the package (no CDN)."""
