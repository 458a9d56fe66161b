"""Coverage-guided fuzz targets (atheris) of logmine's readers; `python fuzz/run.py --help`."""
