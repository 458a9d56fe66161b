"""What the parse worker's server loads before it forks a worker: the parser, pyarrow told first that it has
no pandas to look for. Otherwise the parser's first Arrow array, made at import, imports pandas (0.2 s of
the server's start, which the first worker, and so the main process, waits for); no worker uses pandas."""

from .processes import arrow_without_pandas

arrow_without_pandas()

from .. import logs as ingest  # noqa: E402, F401 - loaded here so that every forked worker has it
