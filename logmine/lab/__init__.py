"""`logmine lab`: JupyterLab on copies of the bundled notebooks."""
