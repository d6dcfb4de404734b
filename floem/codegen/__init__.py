"""Code generation: IR -> C, headers and Makefile, from jinja2 templates."""
