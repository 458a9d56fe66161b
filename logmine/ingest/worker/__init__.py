"""The two-process ingest: a large input is parsed in a worker process while the main process stores.

- `processes`: how the worker is started (a forkserver preloaded with the parser) and the allocator
  and garbage-collector settings of the processes an ingest owns. Imports nothing heavy, so that
  `logmine ingest` can start the worker's server before it loads anything else.
- `slots`: the shared file through which parsed batches come back without being pickled.
- `parse`: `WorkerParse`, a parse running in the worker, whose batches the main process iterates.

`logmine.ingest.logs` is the pipeline; it hands its parse function to `parse.WorkerParse`.
"""
