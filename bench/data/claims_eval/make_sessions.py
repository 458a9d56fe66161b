# ruff: noqa: E501, E741  (the frozen prose and commands are kept as written; C, I, U name the verdicts)
"""Write the claim-checker evaluation: per scenario a journal, a Claude Code session, the annotations.

    python bench/data/claims_eval/make_sessions.py [--summary]

The agent's prose below was written as an agent writes it, against the journal each scenario
prints (`--summary`), with right and wrong figures, unit mix-ups, per-rank and total figures,
times of earlier runs and figures the logs never measure. After each message come the figures a
careful reader marks in it with the verdict they would give from the journal alone:

- consistent: the figure is one the journal shows for the run it speaks of (within the rounding of
  the number as written, SGLang's "GB" read either way), or plain arithmetic on such figures
  (per rank x ranks, per node, a sum, K + V, seconds as minutes);
- inconsistent: the figure speaks of one thing the journal measured and is wrong;
- unverifiable: the journal never states it (the host's RAM, prices, a plan, a GPU's nominal size).

Annotated 2026-12-03 by the `claims` helper of issue 29, from the journals, before reading or
changing any rule of logmine's claim checker; frozen in this file and in `annotations.jsonl`.
Scenario sets: `tuning` (rules may be tuned looking at them) and `held_apart` (measured only).
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import journals  # noqa: E402

C, I, U = "consistent", "inconsistent", "unverifiable"


def scripts() -> dict[str, tuple[str, str, list]]:
    """scenario -> (set, day, [(HH:MM:SS, role, text, tool command or None, figures)])."""
    return {
        "qwen-hicache-loop": ("tuning", "2026-11-24", [
            ("08:20:05", "user", "is the qwen server on h100-a7 up? how long did the start take?", None, []),
            ("08:20:40", "assistant", "Checking the journal.",
             "ssh h100-a7 journalctl -u sglang-qwen235 --since 08:00 | grep -E 'Load weight|KV Cache|cuda graph|ready'", []),
            ("08:21:30", "assistant",
             "Yes, it came up at 08:14:11, about 12 minutes after systemd started it at 08:02:10. Almost all of "
             "that is weight loading: 651.7-652.1 s per rank (~10.9 min), then CUDA graph capture took ~41 s. "
             "Each of the 4 H100s holds 57.41 GB of weights and a 261,929-token KV pool (5.87 GB for K plus "
             "5.87 GB for V), and 7.78 GB stays free after capture.", None, [
                 ("about 12 minutes after systemd started it", 12, "minutes", C, "start to ready 721 s"),
                 ("651.7-652.1 s per rank", 651.7, "s", C, "load elapsed 651.71 (TP0)"),
                 ("(~10.9 min)", 10.9, "min", C, "652 s"),
                 ("capture took ~41 s", 41, "s", C, "40.76-41.30 s"),
                 ("57.41 GB of weights", 57.41, "GB", C, "mem usage=57.41 GB"),
                 ("261,929-token KV pool", 261929, "tokens", C, "#tokens: 261929"),
                 ("(5.87 GB for K", 5.87, "GB", C, "K size"),
                 ("and 7.78 GB stays free after capture", 7.78, "GB", C, "avail mem after capture"),
             ]),
            ("09:40:10", "user", "enable hicache, we have loads of host RAM. use --hicache-ratio 22", None, []),
            ("09:43:50", "assistant",
             "This is a 503 GiB machine and `free -g` shows ~470 GiB available, so a large host pool should fit. "
             "With --hicache-ratio 22 each rank gets 22 x its 261,929-token device pool in pinned host memory. "
             "Restarting now.", "ssh h100-a7 sudo systemctl daemon-reload && ssh h100-a7 sudo systemctl restart sglang-qwen235", [
                 ("This is a 503 GiB machine", 503, "GiB", U, "host RAM is never logged"),
                 ("shows ~470 GiB available", 470, "GiB", U, "free -g output, not in the journal"),
                 ("its 261,929-token device pool", 261929, "tokens", C, "run 1 pool"),
             ]),
            ("10:01:00", "user", "it's not coming up?", None, []),
            ("10:01:40", "assistant", "Looking.",
             "ssh h100-a7 journalctl -u sglang-qwen235 --since 09:40 | grep -E 'ValueError|restart counter|Load weight end'", []),
            ("10:02:30", "assistant",
             "The HiCache host pool does not fit. Every rank fails with `Requesting 277.33 GB but only have 251.30 "
             "GB free`, so the server dies about 12 minutes after each start, right after the 649 s weight load, and "
             "systemd has already restarted it (restart counter at 2). Each rank asks for its own pool, so that is "
             "4 x 277.33 = 1109.3 GB in total, far beyond this host. The check sees only 251.30 GB free, not the "
             "503 GiB of RAM. The load itself takes ~9 minutes per attempt, so every loop costs the 4 GPUs for "
             "nothing.", None, [
                 ("Requesting 277.33 GB but only have", 277.33, "GB", C, "host pool requested, error line"),
                 ("only have 251.30 GB free`", 251.30, "GB", C, "host free, error line"),
                 ("dies about 12 minutes after each start", 12, "minutes", C, "start to crash 713-715 s"),
                 ("right after the 649 s weight load", 649, "s", C, "load elapsed 648.79-649.07"),
                 ("4 x 277.33 = 1109.3 GB in total", 1109.3, "GB", C, "per rank x 4"),
                 ("The check sees only 251.30 GB free", 251.30, "GB", C, "host free"),
                 ("not the 503 GiB of RAM", 503, "GiB", U, "host RAM never logged"),
                 ("The load itself takes ~9 minutes per attempt", 9, "minutes", I, "load is 649-651 s = 10.8 min"),
             ]),
            ("10:20:30", "user", "fix it, size it to fit", None, []),
            ("10:21:00", "assistant",
             "Changed the unit to --hicache-ratio 3.808, which sizes the host pool well under the ~251 GB free; "
             "the pending restart picks it up.",
             "ssh h100-a7 sudo sed -i 's/--hicache-ratio 22/--hicache-ratio 3.808/' /etc/systemd/system/sglang-qwen235.service && ssh h100-a7 sudo systemctl daemon-reload", [
                 ("well under the ~251 GB free", 251, "GB", C, "host free of the crashed runs"),
             ]),
            ("10:36:00", "assistant",
             "Up again at 10:33:52. HiCache allocated 48.00 GB of host memory per rank, 192 GB across the 4 ranks, "
             "out of the 251.30 GB free the crashed starts reported. The start took 743 s (~12.4 min), 655 s of "
             "it loading weights; the crashed starts got ~11 minutes into loading before the HiCache check killed "
             "them, and the first run, before HiCache, took ~11 minutes to load. The device side is unchanged: "
             "261,929 tokens per GPU, 5.87 GB K + 5.87 GB V = 11.74 GB. CUDA graph capture took 14 s. The three "
             "failed starts cost ~36 minutes of the 4 GPUs.", None, [
                 ("48.00 GB of host memory per rank", 48.00, "GB", C, "Allocating 48.00 GB"),
                 ("192 GB across the 4 ranks", 192, "GB", C, "48.00 x 4"),
                 ("out of the 251.30 GB free the crashed starts reported", 251.30, "GB", C, "earlier runs' host free"),
                 ("The start took 743 s", 743, "s", C, "start to ready 743.2 s"),
                 ("(~12.4 min)", 12.4, "min", C, "743 s"),
                 ("655 s of it loading weights", 655, "s", C, "load elapsed of run 5"),
                 ("got ~11 minutes into loading", 11, "minutes", C, "649-651 s loads of the crashed runs"),
                 ("took ~11 minutes to load", 11, "minutes", C, "run 1 load 652 s"),
                 ("261,929 tokens per GPU", 261929, "tokens", C, "pool"),
                 ("5.87 GB K +", 5.87, "GB", C, "K size"),
                 ("= 11.74 GB", 11.74, "GB", C, "K + V"),
                 ("CUDA graph capture took 14 s", 14, "s", I, "capture takes ~41 s"),
                 ("cost ~36 minutes of the 4 GPUs", 36, "minutes", C, "three starts of ~714 s = 35.7 min"),
             ]),
        ]),
        "llama-oom-start": ("tuning", "2026-11-25", [
            ("14:12:30", "user", "llama-70b on a100-lab2 won't start, check", None, []),
            ("14:12:50", "assistant", "Reading the journal.",
             "ssh a100-lab2 journalctl -u sglang-llama -n 80 --no-pager", []),
            ("14:13:20", "assistant",
             "It died during CUDA graph capture with an out-of-memory error: `Tried to allocate 1.76 GiB`, and GPU 0 "
             "had only 1.07 GiB free of its 79.15 GiB. With --mem-fraction-static 0.95 the weights (65.72 GB per "
             "GPU) and a 60,896-token KV pool (4.65 GB each for K and V) left just 3.61 GB for the graphs. The "
             "attempt lasted about 2 minutes (14:10:00 to 14:12:03); loading weights took 3 minutes of that. I'll "
             "lower the fraction to 0.88.", None, [
                 ("`Tried to allocate 1.76 GiB`", 1.76, "GiB", C, "OOM line"),
                 ("had only 1.07 GiB free", 1.07, "GiB", C, "OOM line"),
                 ("of its 79.15 GiB", 79.15, "GiB", C, "OOM line total capacity"),
                 ("(65.72 GB per GPU)", 65.72, "GB", C, "mem usage"),
                 ("60,896-token KV pool", 60896, "tokens", C, "#tokens"),
                 ("(4.65 GB each for K and V)", 4.65, "GB", C, "K size"),
                 ("left just 3.61 GB for the graphs", 3.61, "GB", C, "capture begin avail mem"),
                 ("The attempt lasted about 2 minutes", 2, "minutes", C, "start to OOM 123 s"),
                 ("loading weights took 3 minutes of that", 3, "minutes", I, "load 95.9-96.2 s"),
             ]),
            ("14:13:40", "user", "ok do it", None, []),
            ("14:13:45", "assistant", "Editing the unit and restarting.",
             "ssh a100-lab2 sudo sed -i 's/0.95/0.88/' /etc/systemd/system/sglang-llama.service && ssh a100-lab2 sudo systemctl daemon-reload && ssh a100-lab2 sudo systemctl restart sglang-llama", []),
            ("14:16:40", "assistant",
             "Up at 14:16:14 with 0.88. The KV pool shrank to 24,672 tokens per GPU (1.88 GB for K), and 7.34 GB "
             "stays free after graph capture, which took 27 s. Start to ready was 145 s, against the 123 s the "
             "OOM attempt lasted before dying. 24,672 tokens is less than one 131,072-token context, so long "
             "prompts will queue. Weights: 131.4 GB over both GPUs. Graph capture took 72 s on the first try. "
             "The box has 1 TB of RAM, so CPU offload is an option later.", None, [
                 ("shrank to 24,672 tokens per GPU", 24672, "tokens", C, "#tokens run 2"),
                 ("(1.88 GB for K)", 1.88, "GB", C, "K size"),
                 ("and 7.34 GB stays free after graph capture", 7.34, "GB", C, "avail after capture"),
                 ("which took 27 s", 27, "s", C, "capture 27 s"),
                 ("Start to ready was 145 s", 145, "s", C, "144.7 s"),
                 ("against the 123 s the OOM attempt lasted", 123, "s", C, "run 1 start to OOM 123.4 s"),
                 ("one 131,072-token context", 131072, "tokens", C, "context_len=131072"),
                 ("Weights: 131.4 GB over both GPUs", 131.4, "GB", C, "65.72 x 2"),
                 ("Graph capture took 72 s on the first try", 72, "s", I, "run 1 never finished capture; OOM 6 s in"),
                 ("The box has 1 TB of RAM", 1, "TB", U, "host RAM never logged"),
             ]),
        ]),
        "deepseek-mla": ("held_apart", "2026-11-26", [
            ("09:45:00", "user", "how's the DSV3 server doing, how much memory does it take?", None, []),
            ("09:45:20", "assistant", "Let me look at the startup lines.",
             "journalctl -u sglang-dsv3 --since 09:30 | grep -v 'Decode batch'", []),
            ("09:46:10", "assistant",
             "DeepSeek-V3 is up since 09:40:41; the start took 10.6 minutes (637 s): weight loading 548 s per "
             "rank, CUDA graphs ~63 s. Per H200: 83.17 GB of weights and a KV pool of 538,123 tokens. MLA keeps "
             "one 576-wide latent per token and layer, so the pool is 35.22 GB (17.61 GB K + 17.61 GB V) on each "
             "GPU, 281.8 GB across all 8. 18.45 GB remains free per GPU after capture. The model weights come to "
             "~690 GB across the 8 GPUs.", None, [
                 ("the start took 10.6 minutes", 10.6, "minutes", C, "637 s"),
                 ("(637 s)", 637, "s", C, "start to ready"),
                 ("weight loading 548 s per rank", 548, "s", C, "547.6-548.3"),
                 ("CUDA graphs ~63 s", 63, "s", C, "62.7-63.3"),
                 ("83.17 GB of weights", 83.17, "GB", C, "mem usage"),
                 ("KV pool of 538,123 tokens", 538123, "tokens", C, "#tokens"),
                 ("the pool is 35.22 GB", 35.22, "GB", C, "K + V"),
                 ("(17.61 GB K +", 17.61, "GB", C, "K size"),
                 ("281.8 GB across all 8", 281.8, "GB", C, "35.22 x 8"),
                 ("18.45 GB remains free per GPU", 18.45, "GB", C, "avail after capture"),
                 ("~690 GB across the 8 GPUs", 690, "GB", I, "83.17 x 8 = 665.4"),
             ]),
            ("10:15:00", "user", "try mem fraction 0.90 and add hicache ratio 2", None, []),
            ("10:20:40", "assistant",
             "Restarting with --mem-fraction-static 0.90 --enable-hierarchical-cache --hicache-ratio 2. The node has "
             "2 TiB of RAM, so a 2x host pool is fine. The previous start took ~11 minutes, so expect it back "
             "around 10:31.", "sudo systemctl daemon-reload && sudo systemctl restart sglang-dsv3", [
                 ("The node has 2 TiB of RAM", 2, "TiB", U, "host RAM never logged"),
                 ("The previous start took ~11 minutes", 11, "minutes", C, "run 1 637 s"),
             ]),
            ("10:33:00", "assistant",
             "Back at 10:31:52 after 669 s. The KV pool grew to 644,532 tokens (21.09 GB K per GPU), and HiCache "
             "pinned 90.59 GB per rank, 724.7 GB of host memory for the 8 ranks. Free GPU memory after capture "
             "dropped from 18.45 GB to 11.49 GB. Weight loading took 541 s this time versus 548 s before. The "
             "host pool holds 1,289,064 tokens per rank, that is 84.4 GiB of pinned memory each. The restart "
             "took only 9 minutes and graph capture 58 s.", None, [
                 ("Back at 10:31:52 after 669 s", 669, "s", C, "start to ready 669.3"),
                 ("grew to 644,532 tokens", 644532, "tokens", C, "#tokens run 2"),
                 ("(21.09 GB K per GPU)", 21.09, "GB", C, "K size"),
                 ("pinned 90.59 GB per rank", 90.59, "GB", C, "Allocating 90.59 GB"),
                 ("724.7 GB of host memory for the 8 ranks", 724.7, "GB", C, "90.59 x 8"),
                 ("dropped from 18.45 GB", 18.45, "GB", C, "run 1 avail after capture"),
                 ("to 11.49 GB", 11.49, "GB", C, "run 2 avail after capture"),
                 ("Weight loading took 541 s this time", 541, "s", C, "540.7-541.4"),
                 ("versus 548 s before", 548, "s", C, "run 1 load"),
                 ("holds 1,289,064 tokens per rank", 1289064, "tokens", U, "host pool tokens are not logged"),
                 ("that is 84.4 GiB of pinned memory each", 84.4, "GiB", C, "90.59 GB = 84.37 GiB"),
                 ("The restart took only 9 minutes", 9, "minutes", I, "669 s = 11.2 min"),
                 ("graph capture 58 s", 58, "s", I, "62.8-63.2 s"),
             ]),
        ]),
        "multinode": ("held_apart", "2026-11-27", [
            ("16:09:40", "user", "is the 405B up on both nodes? give me the numbers", None, []),
            ("16:10:00", "assistant", "Reading node 0's journal.",
             "ssh h100-n0 journalctl -u sglang-405b --since 16:00 --no-pager", []),
            ("16:10:50", "assistant",
             "Node 0 (h100-n0) reports ready at 16:08:31, 8.5 minutes (511 s) after systemd started the unit; I do "
             "not have node 1's journal. TP=16 over 2 nodes x 8 H100. Each rank loaded 25.34 GB of FP8 weights in "
             "~431 s, so the checkpoint is ~405 GB over all 16 ranks (25.34 x 16 = 405.4 GB), 202.7 GB per node. "
             "KV pool: 691,361 tokens per rank, 20.77 GB K + 20.77 GB V = 41.54 GB per GPU, 332.3 GB per node. "
             "After graph capture (52 s) 10.00 GB stays free per GPU. Per node that is 664.6 GB of KV cache. "
             "Loading the weights took about 5 minutes. Each node has 2 TB of RAM and 400 Gb/s InfiniBand.", None, [
                 ("8.5 minutes (511 s)", 8.5, "minutes", C, "511 s"),
                 ("(511 s)", 511, "s", C, "start to ready"),
                 ("loaded 25.34 GB of FP8 weights", 25.34, "GB", C, "mem usage"),
                 ("in ~431 s", 431, "s", C, "430.7-431.4"),
                 ("the checkpoint is ~405 GB over all 16 ranks", 405, "GB", C, "25.34 x 16"),
                 ("= 405.4 GB)", 405.4, "GB", C, "25.34 x 16"),
                 ("202.7 GB per node", 202.7, "GB", C, "25.34 x 8"),
                 ("691,361 tokens per rank", 691361, "tokens", C, "#tokens"),
                 ("20.77 GB K +", 20.77, "GB", C, "K size"),
                 ("= 41.54 GB per GPU", 41.54, "GB", C, "K + V"),
                 ("332.3 GB per node", 332.3, "GB", C, "41.54 x 8"),
                 ("(52 s)", 52, "s", C, "51.7-52.3"),
                 ("10.00 GB stays free per GPU", 10.00, "GB", C, "avail after capture"),
                 ("Per node that is 664.6 GB of KV cache", 664.6, "GB", I, "per node is 332.3; 664.6 is both nodes"),
                 ("took about 5 minutes", 5, "minutes", I, "431 s = 7.2 min"),
                 ("Each node has 2 TB of RAM", 2, "TB", U, "host RAM never logged"),
             ]),
            ("16:12:30", "user", "summary for the ticket please", None, []),
            ("16:13:00", "assistant",
             "Summary: weights loaded in 7.2 min, CUDA graphs captured in 52 s, ready after 8 min 31 s. The KV "
             "cache across both nodes is 664.6 GB (41.54 GB on each of the 16 GPUs).", None, [
                 ("weights loaded in 7.2 min", 7.2, "min", C, "431 s"),
                 ("captured in 52 s", 52, "s", C, "capture"),
                 ("ready after 8 min 31 s", 511, "s", C, "511 s"),
                 ("across both nodes is 664.6 GB", 664.6, "GB", C, "41.54 x 16"),
                 ("(41.54 GB on each", 41.54, "GB", C, "K + V"),
             ]),
        ]),
        "qwen72b-runs": ("held_apart", "2026-11-28", [
            ("10:05:00", "user", "what did we get with mem fraction 0.85?", None, []),
            ("10:05:30", "assistant",
             "With 0.85 each 48 GB L40S holds 33.92 GB of weights and a 45,278-token KV pool (1.73 GB K, 1.73 GB V); "
             "5.52 GB stays free after CUDA graphs. The start took 269 s (~4.5 min), 212 s of it loading. Across "
             "the 4 GPUs that's 135.7 GB of weights. The host has 251 GiB of RAM and SGLang uses little of it "
             "here.", "journalctl -u sglang-72b --since 10:00 | grep -E 'Load weight|KV Cache|graph|ready'", [
                 ("each 48 GB L40S", 48, "GB", U, "nominal GPU size; the log shows 43.97 GB available"),
                 ("holds 33.92 GB of weights", 33.92, "GB", C, "mem usage"),
                 ("45,278-token KV pool", 45278, "tokens", C, "#tokens"),
                 ("(1.73 GB K,", 1.73, "GB", C, "K size"),
                 ("5.52 GB stays free after CUDA graphs", 5.52, "GB", C, "avail after capture"),
                 ("The start took 269 s", 269, "s", C, "269.1"),
                 ("(~4.5 min)", 4.5, "min", C, "269 s"),
                 ("212 s of it loading", 212, "s", C, "load"),
                 ("that's 135.7 GB of weights", 135.7, "GB", C, "33.92 x 4"),
                 ("The host has 251 GiB of RAM", 251, "GiB", U, "host RAM never logged"),
             ]),
            ("10:19:10", "user", "try 0.90", None, []),
            ("10:19:25", "assistant", "Restarting with 0.90.", "sudo systemctl restart sglang-72b", []),
            ("10:38:40", "user", "and 0.92?", None, []),
            ("10:38:50", "assistant", "Restarting with 0.92.", "sudo systemctl restart sglang-72b", []),
            ("10:25:00", "assistant",
             "0.90 is up (10:23:54). KV pool 74,095 tokens per GPU, 2.83 GB each for K and V, and 3.32 GB left "
             "free, down from 6.5 GB with 0.85. That is 64% more tokens than the 45,278 we had. This start took "
             "263 s, slightly faster than the previous 269 s; loading weights took 205 s.",
             None, [
                 ("KV pool 74,095 tokens per GPU", 74095, "tokens", C, "#tokens run 2"),
                 ("2.83 GB each for K and V", 2.83, "GB", C, "K size"),
                 ("and 3.32 GB left free", 3.32, "GB", C, "avail after capture"),
                 ("down from 6.5 GB with 0.85", 6.5, "GB", I, "run 1 had 5.52 GB"),
                 ("than the 45,278 we had", 45278, "tokens", C, "run 1 pool"),
                 ("This start took 263 s", 263, "s", C, "263.4"),
                 ("than the previous 269 s", 269, "s", C, "run 1"),
                 ("loading weights took 205 s", 205, "s", C, "load"),
             ]),
            ("10:45:00", "assistant",
             "0.92 gives 85,621 tokens (3.27 GB K per GPU) but only 2.44 GB free after capture, thin for sampler "
             "spikes. Start-up took 266 s, the weight load 209 s. The first run (0.85) loaded in 252 s and was ready "
             "after 4.5 min. I'd keep 0.90 with its 74,095 tokens per GPU. Total KV across the 4 GPUs at 0.92: "
             "26.2 GB.", None, [
                 ("0.92 gives 85,621 tokens", 85621, "tokens", C, "#tokens run 3"),
                 ("(3.27 GB K per GPU)", 3.27, "GB", C, "K size"),
                 ("only 2.44 GB free after capture", 2.44, "GB", C, "avail after capture"),
                 ("Start-up took 266 s", 266, "s", C, "265.7"),
                 ("the weight load 209 s", 209, "s", C, "load"),
                 ("loaded in 252 s", 252, "s", I, "run 1 load 212 s"),
                 ("ready after 4.5 min", 4.5, "min", C, "run 1 269 s"),
                 ("with its 74,095 tokens per GPU", 74095, "tokens", C, "run 2 pool"),
                 ("26.2 GB.", 26.2, "GB", C, "(3.27 + 3.27) x 4"),
             ]),
        ]),
    }


# Figures of real sessions (../shared/corpus/transcripts, no journal beside them): sizes of C types and
# buffers and a build's duration, none of them a figure any SGLang log measures.
CORPUS_DIR = "corpus/transcripts/"
XOR = "xor-hardener__draft-birkholz-verifiable-agent-conversations__examples__sessions__"
OPUS, GPT, OC_OPUS = XOR + "claude-opus-4-6.jsonl", XOR + "opencode-gpt-5-2.jsonl", XOR + "opencode-claude-opus-4-6.jsonl"
SPOTTER = "marot__spotter__test__fixtures__transcripts__subagent.jsonl"
CORPUS = [  # (set, transcript, quote, value, unit)
    ("tuning", OPUS, "suggests writing an 8-byte value", 8, "byte"),
    ("tuning", OPUS, "is 8 bytes, and the WRITE is 8 bytes", 8, "bytes"),
    ("held_apart", OPUS, "is typically 16 bytes (two pointers)", 16, "bytes"),
    ("held_apart", OPUS, "size (8 bytes on 64-bit)", 8, "bytes"),
    ("tuning", GPT, "minimized testcase (34 bytes)", 34, "bytes"),
    ("held_apart", GPT, "READ of 1 byte when processing", 1, "byte"),
    ("held_apart", GPT, "had fewer than 8 bytes total", 8, "bytes"),
    ("tuning", OC_OPUS, "reads 1 byte past the end", 1, "byte"),
    ("held_apart", OC_OPUS, "advanced by 4 bytes but the", 4, "bytes"),
    ("held_apart", OC_OPUS, "reads up to 4 bytes past the end", 4, "bytes"),
    ("tuning", SPOTTER, "slow on first run (2+ minutes)", 2, "minutes"),
]


def claude_lines(name: str, day: str, messages: list) -> list[dict]:
    """The session as Claude Code 2.1 writes it: one line per content block, tool results as user lines."""
    ns = uuid.uuid5(uuid.NAMESPACE_URL, "logmine-claims-eval/" + name)
    session = str(uuid.uuid5(ns, "session"))
    out: list[dict] = []
    parent = None
    counter = 0

    def line(kind: str, stamp: str, message: dict, **extra) -> None:
        nonlocal parent, counter
        counter += 1
        u = str(uuid.uuid5(ns, str(counter)))
        out.append({"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/ops/infra",
                    "sessionId": session, "version": "2.1.34", "gitBranch": "main", "type": kind,
                    "message": message, "uuid": u, "timestamp": f"{day}T{stamp}.000Z", **extra})
        parent = u

    for n, (stamp, role, text, command, _) in enumerate(messages):
        if role == "user":
            line("user", stamp, {"role": "user", "content": text})
            continue
        msg_id = f"msg_{uuid.uuid5(ns, 'm' + str(n)).hex[:24]}"
        usage = {"input_tokens": 12, "output_tokens": 180, "cache_read_input_tokens": 20480,
                 "cache_creation_input_tokens": 512}
        base = {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-opus-4-6",
                "stop_reason": "tool_use" if command else "end_turn", "usage": usage}
        request = {"requestId": f"req_{uuid.uuid5(ns, 'r' + str(n)).hex[:24]}"}
        line("assistant", stamp, {**base, "content": [{"type": "text", "text": text}]}, **request)
        if command:
            tool_id = f"toolu_{uuid.uuid5(ns, 't' + str(n)).hex[:24]}"
            line("assistant", stamp, {**base, "content": [{"type": "tool_use", "id": tool_id, "name": "Bash",
                                                           "input": {"command": command}}]}, **request)
            line("user", stamp, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id,
                                                              "content": "(output shown to the agent)",
                                                              "is_error": False}]})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", action="store_true", help="print what each journal measured")
    args = parser.parse_args(argv)
    built = {f().name: f() for f in journals.SCENARIOS}
    if args.summary:
        for name, s in built.items():
            print(name)
            for run in s.runs:
                print("  ", json.dumps(run))
        return 0
    annotations = []
    for name, (which, day, messages) in scripts().items():
        folder = HERE / name
        folder.mkdir(exist_ok=True)
        (folder / "journal.txt").write_text(journals.journal_text(built[name]), encoding="utf-8")
        lines = claude_lines(name, day, messages)
        (folder / "session.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        for stamp, _, text, _, figures in messages:
            for quote, value, unit, verdict, why in figures:
                if quote not in text:
                    raise SystemExit(f"{name} {stamp}: quote not in its message: {quote!r}")
                annotations.append({"set": which, "scenario": name, "time": stamp, "quote": quote,
                                    "value": value, "unit": unit, "verdict": verdict, "why": why})
    for which, transcript, quote, value, unit in CORPUS:
        annotations.append({"set": which, "scenario": "corpus", "transcript": CORPUS_DIR + transcript,
                            "quote": quote, "value": value, "unit": unit, "verdict": U,
                            "why": "a real session with no journal: nothing measured"})
    out = HERE / "annotations.jsonl"
    out.write_text("".join(json.dumps(a) + "\n" for a in annotations), encoding="utf-8")
    print(f"{len(annotations)} figures annotated in {len(built)} scenarios -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
