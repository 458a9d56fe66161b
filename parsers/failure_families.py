"""Why a server died, as data: the families of decisive failures and the signs that only follow one.

A run's cause is the first decisive failure in it (`logmine/derive/causes.py`): an error (a traceback, a C++
abort) or a fatal line of a library (NVSHMEM, NCCL, HCCL print theirs without SGLang's prefix). Each
family lists the text that puts a failure in it, with real lines it must match (tests match every
example). A consequence is what a failure elsewhere brings about: the controller's `EOFError` when a
scheduler died, SGLang's SIGQUIT from a child, the exit codes it reports, the ranks it finds dead.
A consequence is the cause only when nothing decisive came before it.

Regexes are RE2 (DuckDB's `regexp_matches` reads every line of a run with them) and Python `re` alike.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    name: str  # the column value
    words: str  # how the report names it
    regex: str  # searched in an error's text or a line's message
    examples: tuple[str, ...]
    fatal_line: bool = False  # some lines of it are failures of their own, outside any traceback (FATAL_LINE)


# In order: the first family whose regex an error matches is its family (an OOM raised inside a NCCL call
# is device memory, an import error naming a kernel package is import/dependency).
FAMILIES: tuple[Family, ...] = (
    Family("host_memory", "host memory",
           r"Not enough host memory|Cannot allocate memory|pin_memory.*(?:failed|error)|std::bad_alloc",
           ("ValueError: Not enough host memory available. Requesting 120.34 GB but only have 88.10 GB free. "
            "Please reduce the size of the hierarchical cache.",
            "RuntimeError: [enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: can't allocate "
            "memory: you tried to allocate 85899345920 bytes. Error code 12 (Cannot allocate memory)")),
    Family("device_memory", "device memory",
           r"(?i)out of memory|OutOfMemoryError|Not enough memory\. Please try to increase --mem-fraction-static"
           r"|max_total_num_tokens.*(?:<=? ?0|negative)|KV cache pool is too small",
           ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 384.00 MiB. GPU 0 has a total "
            "capacity of 23.56 GiB of which 338.75 MiB is free.",
            "c10::Error: NPU out of memory. Tried to allocate 4.00 GiB (NPU 4; 61.27 GiB total capacity)",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            "Current value: self.server_args.mem_fraction_static=0.36")),
    # A CUDA kernel's assertion (torch's CUDA_KERNEL_ASSERT, an index out of bounds, a NaN in the sampler's
    # probabilities) prints its expression per failing thread; the traceback after it only says the launch
    # failed, since CUDA reports errors asynchronously.
    Family("device_assertion", "device-side assertion",
           r"block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion|device-side assert(?:ion)? triggered",
           ("/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:110: _assert_async_cuda_kernel: block: [0,0,0], "
            "thread: [0,0,0] Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed.",
            "../aten/src/ATen/native/cuda/IndexKernel.cu:93: operator(): block: [4,0,0], thread: [31,0,0] Assertion "
            "`-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.",
            "RuntimeError: CUDA error: device-side assert triggered"),
           fatal_line=True),
    Family("port_in_use", "port conflict",
           r"[Aa]ddress already in use|EADDRINUSE|error while attempting to bind on address"
           r"|at \d+ is not available in \d+ seconds|failed to listen on any local network address",
           ("ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use",
            "zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:30235')",
            "ValueError: server_args.port at 30000 is not available in 30 seconds.",
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
            "address. port: 29500, useIPv6: 0, code: -98, name: EADDRINUSE, message: address already in use"),
           fatal_line=True),
    Family("disk_space", "disk space",
           r"No space left on device|\[Errno 28\]|Disk quota exceeded",
           ("OSError: [Errno 28] No space left on device",
            "RuntimeError: [enforce fail at inline_container.cc:603] . unexpected pos 2816 vs 2710: No space left on "
            "device")),
    Family("communication", "communication set-up",
           r"(?i:NCCL error)|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|ncclRemoteError"
           r"|NCCL WARN .*(?:failed|error|Error)|DistBackendError|ProcessGroupNCCL.*(?:Watchdog|timed out)"
           r"|nvshmem|NVSHMEM|building transport map failed|is not accessible, exiting"
           r"|init failed for transport|Unable to initialize any transports|HCCL|hccl|RCCL|rccl"
           r"|Gloo connectFullMesh failed|Connection refused.*(?:init_process_group|TCPStore|rendezvous)"
           r"|DeepEP|deep_ep.*(?:failed|error)|[Mm]ooncake.*(?:failed|error)|KV transfer\b.*failed"
           r"|Failed to (?:connect|bootstrap)",
           ("/sgl-workspace/nvshmem/src/host/topo/topo.cpp:469: [GPU 1] Peer GPU 0 is not accessible, exiting ...",
            "/sgl-workspace/nvshmem/src/host/init/init.cu:998: non-zero status: 3 building transport map failed",
            "/sgl-workspace/nvshmem/src/host/transport/transport.cpp:nvshmemi_transport_init:275: "
            "init failed for transport: IBGDA",
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details)",
            "RuntimeError: HCCL function error: HcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, "
            "&(comm->hcclComm_)), error code is 7",
            "RuntimeError: NCCL Error 2: unhandled system error (run with NCCL_DEBUG=INFO for details)"),
           fatal_line=True),
    # A kernel that faulted while it ran (a bug, or data it was not written for), reported at the next call.
    Family("kernel_fault", "kernel fault",
           r"illegal memory access|an illegal instruction|misaligned address|unspecified launch failure"
           r"|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS|CUBLAS_STATUS_EXECUTION_FAILED"
           r"|HIP error: an illegal",
           ("RuntimeError: CUDA error: an illegal memory access was encountered",
            "torch.AcceleratorError: CUDA error: unspecified launch failure",
            "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered",
            "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb, "
            "m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, "
            "compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`")),
    Family("unsupported", "unsupported kernel or shape",
           r"no kernel image is available|not supported|Unsupported|unsupported|NotImplementedError"
           r"|invalid device function|does not support|is not implemented"
           r"|HIP error: invalid|shape mismatch|must be divisible by|is not divisible by",
           ("RuntimeError: CUDA error: no kernel image is available for execution on the device",
            "NotImplementedError: FlashAttention backend does not support sliding window on this device",
            "ValueError: Unsupported head_dim 576 for the triton backend")),
    # The model's files could not be had: a gated or missing repository, the Hub out of reach with nothing
    # cached, no read permission, a checkpoint cut short (an interrupted download).
    Family("model_files", "model download or files",
           r"gated repo|GatedRepoError|RepositoryNotFoundError|RevisionNotFoundError|EntryNotFoundError"
           r"|LocalEntryNotFoundError|couldn't connect to 'https://huggingface\.co'"
           r"|HTTPSConnectionPool\(host='[\w.-]*huggingface|\b(?:401|403) Client Error|PermissionError: \[Errno 13\]"
           r"|SafetensorError|Error while deserializing header|PytorchStreamReader failed|invalid load key",
           ("OSError: You are trying to access a gated repo. Make sure to have access to it at "
            "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct.",
            "huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the file on the "
            "Hub and we cannot find the requested files in the local cache.",
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the "
            "cached files and it looks like Qwen/Qwen3-8B is not the path to a directory containing a file named "
            "config.json.",
            "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
            "PermissionError: [Errno 13] Permission denied: '/models/Qwen3-8B/model-00001-of-00004.safetensors'")),
    Family("model_config", "model configuration",
           r"config\.json|does not appear to have a file named|Unrecognized model|model_type|architectures?"
           r"|KeyError: '[\w.]+'|rope_scaling|context_length|context length|trust_remote_code|is not a valid model"
           r"|quantization config|Tokenizer class",
           ("OSError: Qwen/Qwen3-99B does not appear to have a file named config.json.",
            "ValueError: Unrecognized model in /models/x. Should have a `model_type` key in its config.json",
            "KeyError: 'model.layers.0.mlp.experts.w13_weight'")),
    Family("import", "import or dependency",
           r"ImportError|ModuleNotFoundError|undefined symbol|cannot open shared object file"
           r"|version mismatch|requires .* but you have|No module named",
           ("ModuleNotFoundError: No module named 'sgl_kernel'",
            "ImportError: /usr/lib/python3/dist-packages/flashinfer/_kernels.so: undefined symbol: _ZN3c10")),
    Family("timeout", "timeout or hang",
           r"(?i)watchdog timeout|timed out|TimeoutError|Timeout|DeadlineExceeded|hang detected|stuck",
           ("TimeoutError: Scheduler did not respond within 300 seconds",
            "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)"),
           fatal_line=True),
    Family("killed", "killed from outside",
           r"status=9/KILL|exit code -9|Exit code: -9|^Killed$|A process of this unit has been killed by the OOM"
           r"|SIGKILL",
           ("Main process exited, code=killed, status=9/KILL", "Killed"), fatal_line=True),
)

# The signs that follow a failure elsewhere: searched in an error's last line or a shutdown line.
CONSEQUENCE = (r"^EOFError|Received sigquit from a child|scheduler is dead|^Exit code: |Initialization failed"
               r"|Server process exited|BrokenPipeError|ConnectionResetError|ConnectionRefusedError: \[Errno 111\]"
               r"|Child process unexpectedly failed|Rank \d+ scheduler is dead|kill_process_tree|SIGQUIT"
               r"|^KeyboardInterrupt|detokenizer.*(?:died|dead)|Exception: retry\(\) exceed maximum")
CONSEQUENCE_EXAMPLES = (
    "EOFError",
    "Received sigquit from a child process. It usually means the child failed.",
    "Rank 0 scheduler is dead. Please check if there are relevant logs.",
    "Exit code: -9",
    "Exception: Initialization failed. Please see the error messages above.",
)

# A library's fatal line outside any traceback: these are read from the lines themselves, since
# NVSHMEM and NCCL print them with no SGLang prefix and no traceback around them.
# (NVSHMEM's `init failed for transport: IBGDA` is no such line: it goes on to the next transport.)
FATAL_LINE = (r"is not accessible, exiting|building transport map failed|error while attempting to bind on address"
              r"|Unable to initialize any transports|nvshmem detect topo failed|NCCL WARN .*(?:failed|Error)"
              r"|HCCL function error|\[(?:ERROR|FATAL)\].*(?:HCCL|hccl|NCCL|nccl|RCCL)"
              r"|watchdog timeout|Watchdog caught collective operation timeout|^Killed$"
              r"|block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion")
FATAL_LINE_EXAMPLES = (
    "/sgl-workspace/nvshmem/src/host/topo/topo.cpp:469: [GPU 1] Peer GPU 0 is not accessible, exiting ...",
    "/sgl-workspace/nvshmem/src/host/init/init.cu:998: non-zero status: 3 building transport map failed",
    "[rank3]:[E1203 10:02:11.123456 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.",
    "Killed",
    "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [12,0,0], thread: [64,0,0] "
    "Assertion `srcIndex < srcSelectDimSize` failed.",
    "[2026-03-01 10:00:56] ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): "
    "address already in use",
)

# Exit-time lines that show the process ended (a child's semaphore left behind when its parent was killed)
# though nothing says how.
EXIT_TRACE = r"resource_tracker: There appear to be \d+ leaked (?:semaphore|shared_memory) objects"
EXIT_TRACE_EXAMPLES = (
    "/usr/lib/python3.12/multiprocessing/resource_tracker.py:279: UserWarning: resource_tracker: There appear "
    "to be 1 leaked semaphore objects to clean up at shutdown",
)

# A launch that died before it logged its `server_args` dump (an import error, a bad argument or model
# config read while the arguments are prepared) leaves only a traceback through the launcher's module
# code that never reached the server's own start (`launch_server(server_args)`, the engine's subprocesses).
# Such a traceback is a launch of its own.
LAUNCHER_FRAME = (r'launch_server\.py", line \d+, in <module>|sglang/cli/\w+\.py", line \d+, in'
                  r'|sglang/__main__\.py", line \d+, in <module>')
SERVER_STARTED_FRAME = r'line \d+, in (?:launch_server|_launch_subprocesses|launch_engine|run_server|serve)\b|uvicorn'
LAUNCH_TRACEBACK_EXAMPLE = """Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "<frozen runpy>", line 88, in _run_code
  File "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", line 7, in <module>
    from sglang.srt.entrypoints.http_server import launch_server
ModuleNotFoundError: No module named 'sgl_kernel'"""
SERVER_TRACEBACK_EXAMPLE = """Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", line 32, in <module>
    launch_server(server_args)
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/entrypoints/http_server.py", line 1195, in launch_server
    tokenizer_manager, template_manager, scheduler_info = _launch_subprocesses(
Exception: Initialization failed. Please see the error messages above."""

# A traceback of a test harness around the server (unittest's or pytest's verdict on a benchmark's figures)
# says the test failed, not the server: it is no sign of the server's end.
HARNESS_FRAME = r'unittest/case\.py", line \d+|_pytest/[\w/]+\.py", line \d+|sglang/test/test_utils\.py", line \d+'
HARNESS_EXAMPLE = """Traceback (most recent call last):
  File "/usr/local/python3.11.13/lib/python3.11/unittest/case.py", line 579, in _callTestMethod
    if method() is not None:
AssertionError: 1963.81 not greater than or equal to 2078.337634408602"""
